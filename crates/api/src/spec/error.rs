//! A problem in a manifest, located precisely enough to fix without guessing.

use std::fmt;

use serde::Serialize;

use delta_operator_core::model::names::printable;

/// One error in one manifest: the file, the resource, the field path, what is
/// wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecError {
    pub file: String,
    /// `DeltaTable default/orders`, when the document got that far.
    pub resource: Option<String>,
    /// `spec.columns[3].type`.
    pub path: String,
    pub message: String,
    pub fix: String,
}

impl SpecError {
    pub fn new(
        path: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        SpecError {
            file: String::new(),
            resource: None,
            path: path.into(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    pub fn in_file(mut self, file: &str, resource: Option<&str>) -> Self {
        self.file = file.to_string();
        self.resource = resource.map(str::to_string);
        self
    }

    /// What `validate` prints after the file: `resource: path: message`, then
    /// the fix on its own line. The admission webhook refuses with exactly this
    /// (an object sent to the API server has no file).
    pub fn located(&self) -> String {
        let mut out = String::new();
        if let Some(r) = &self.resource {
            out.push_str(&printable(r));
            out.push_str(": ");
        }
        out.push_str(&printable(&self.path));
        out.push_str(": ");
        out.push_str(&printable(&self.message));
        if !self.fix.is_empty() {
            out.push_str("\n    fix: ");
            out.push_str(&printable(&self.fix));
        }
        out
    }
}

impl fmt::Display for SpecError {
    // every part may quote user input: control characters are shown escaped, never sent to a terminal
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", printable(&self.file), self.located())
    }
}

impl std::error::Error for SpecError {}
