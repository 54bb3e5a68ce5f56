//! The manifest loader and lowering: any file is manifests or errors naming
//! a field, never a panic or a stack overflow.
#![no_main]
use delta_operator_api::inputs::lower;
use delta_operator_api::spec::load::{Manifests, load_str};
use libfuzzer_sys::fuzz_target;

fuzz_target!(init: delta_operator_fuzz::stack_overflow_is_a_crash(), |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    load_str("fuzz.yaml", text, &mut m, &mut errors);
    for e in &errors {
        // every message prints without a raw control character
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
    }
    if errors.is_empty() {
        let _ = lower(&m);
    }
});
