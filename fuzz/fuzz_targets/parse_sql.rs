//! A view's query and a SQL function's body (sqlparser, Databricks' dialect):
//! any text is parsed or refused with a reason, never a panic, an abort or a
//! stack overflow; what a parsed one reads is found without panicking, and
//! its normalised text (what a plan compares) is itself a query or body.
#![no_main]
use delta_operator_core::model::SchemaRef;
use delta_operator_expression::{parse_body, parse_query};
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: delta_operator_fuzz::stack_overflow_is_a_crash(), |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let default = SchemaRef { catalog: "main".into(), schema: "sales".into() };
    if let Ok(q) = parse_query(text) {
        let _ = q.reads(&default);
        assert!(parse_query(&q.normalized).is_ok(), "{:?} is not a query again", q.normalized);
    }
    let parameters = ["x".to_string(), "y".to_string()];
    if let Ok(b) = parse_body(text, &parameters) {
        let _ = b.reads(&default);
        assert!(parse_body(&b.normalized, &parameters).is_ok(), "{:?} is not a body again", b.normalized);
    }
});
