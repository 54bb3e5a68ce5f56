//! The Databricks error parser: any response body (and any failed statement's
//! status) is a WorkspaceError that prints, never a panic.
#![no_main]
use delta_operator_databricks::error::{FromWorkspace, WorkspaceError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: delta_operator_fuzz::stack_overflow_is_a_crash(), |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let status = 400 + (data.first().copied().unwrap_or(0) as u16 % 200);
    let e = WorkspaceError::from_response(status, text, None);
    let _ = e.to_string();
    let _ = e.error_class();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        let e = WorkspaceError::from_statement("01ef-fuzz", &v, Some("req".into()));
        let _ = (e.to_string(), e.error_class());
    }
});
