//! The type parser, both notations: any text is a type or an error, never a
//! panic or a stack overflow; a parsed type prints and parses back to itself.
#![no_main]
use delta_operator_core::model::type_syntax::{parse_type, type_from_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: delta_operator_fuzz::stack_overflow_is_a_crash(), |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(t) = parse_type(text) {
        let printed = t.to_string();
        let again = parse_type(&printed).unwrap_or_else(|e| panic!("{printed:?} does not parse back: {e}"));
        assert_eq!(again, t, "{printed:?}");
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = type_from_value(&v);
    }
});
