//! What a probe found, and the helpers a check writes its verdict with.

use serde::Serialize;

use delta_operator_databricks::error::WorkspaceError;

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Finding {
    /// The workspace behaves as our plans assume.
    Held { evidence: String },
    /// It does not; `workspace` holds its words when it refused a statement.
    Differed {
        expected: String,
        observed: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        workspace: Option<Words>,
    },
    /// It could not be decided.
    Unknown {
        why: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        workspace: Option<Words>,
    },
}

impl Finding {
    pub fn held(&self) -> bool {
        matches!(self, Finding::Held { .. })
    }

    /// Held, differed or unknown: the report's count and exit code read this.
    pub fn status(&self) -> Status {
        match self {
            Finding::Held { .. } => Status::Held,
            Finding::Differed { .. } => Status::Differed,
            Finding::Unknown { .. } => Status::Unknown,
        }
    }

    pub fn workspace(&self) -> Option<&Words> {
        match self {
            Finding::Held { .. } => None,
            Finding::Differed { workspace, .. } | Finding::Unknown { workspace, .. } => {
                workspace.as_ref()
            }
        }
    }
}

/// A refusal as the workspace wrote it (the message verbatim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Words {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement_id: Option<String>,
    /// The statement that was refused.
    pub statement: String,
}

impl Words {
    pub(crate) fn of(w: &WorkspaceError, statement: &str) -> Self {
        Words {
            message: w.message.clone(),
            error_class: w.error_class().map(str::to_string),
            error_code: w.error_code.clone(),
            sql_state: w.sql_state.clone(),
            statement_id: w.statement_id.clone(),
            statement: statement.to_string(),
        }
    }
}

/// A probe's run: what it found, or that it did not run. The report's `outcome`
/// field is its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Held,
    Differed,
    Unknown,
    Skipped,
}

impl Status {
    /// `✓ held`, `✗ differed`, `! unknown`, `- skipped`: the progress and summary mark.
    pub fn mark(self) -> &'static str {
        match self {
            Status::Held => "✓ held",
            Status::Differed => "✗ differed",
            Status::Unknown => "! unknown",
            Status::Skipped => "- skipped",
        }
    }

    /// Whether a run with this probe still exits 0 (skipped probes do not count).
    pub fn passes(self) -> bool {
        matches!(self, Status::Held | Status::Skipped)
    }
}

/// What a probe needs or leaves behind, so `verify` can skip it on request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flags {
    /// Takes minutes (pipelines).
    pub slow: bool,
    /// Leaves a dropped table that counts against the quota until its retention ends.
    pub keeps_dropped: bool,
    /// Creates an ABAC policy (needs MANAGE on the schema).
    pub creates_policy: bool,
}

/// A statement or message on one line, at most 140 characters, for a verdict.
pub(crate) fn short(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 140 {
        format!("{}…", one.chars().take(140).collect::<String>())
    } else {
        one
    }
}

/// A check's result: `Err` is the early exit of a check (usually Unknown or Differed).
pub type Verdict = Result<Finding, Finding>;

/// The workspace behaved as assumed, with the evidence.
pub fn held(evidence: impl Into<String>) -> Verdict {
    Ok(Finding::Held {
        evidence: evidence.into(),
    })
}

/// It did not: what we expected and what it did.
pub fn differed(expected: impl Into<String>, observed: impl Into<String>) -> Finding {
    Finding::Differed {
        expected: expected.into(),
        observed: observed.into(),
        workspace: None,
    }
}

/// It could not be decided, and why.
pub fn unknown(why: impl Into<String>) -> Finding {
    Finding::Unknown {
        why: why.into(),
        workspace: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Words {
        Words {
            message: "[DELTA_X] no".into(),
            error_class: Some("DELTA_X".into()),
            error_code: None,
            sql_state: None,
            statement_id: None,
            statement: "ALTER TABLE t".into(),
        }
    }

    #[test]
    fn each_outcome_has_its_status_and_mark() {
        let held = held("it did").unwrap();
        let differed = differed("accepted", "refused");
        let unknown = unknown("setup refused");
        assert_eq!(held.status(), Status::Held);
        assert!(held.held() && !differed.held() && !unknown.held());
        assert_eq!(differed.status(), Status::Differed);
        assert_eq!(unknown.status(), Status::Unknown);
        assert_eq!(Status::Held.mark(), "✓ held");
        assert_eq!(Status::Differed.mark(), "✗ differed");
        assert_eq!(Status::Unknown.mark(), "! unknown");
        assert_eq!(Status::Skipped.mark(), "- skipped");
    }

    #[test]
    fn only_differed_and_unknown_fail_a_run() {
        assert!(Status::Held.passes() && Status::Skipped.passes());
        assert!(!Status::Differed.passes() && !Status::Unknown.passes());
    }

    #[test]
    fn statuses_serialize_as_the_report_spells_them() {
        let names: Vec<String> = [
            Status::Held,
            Status::Differed,
            Status::Unknown,
            Status::Skipped,
        ]
        .iter()
        .map(|s| {
            serde_json::to_value(s)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
        assert_eq!(names, ["held", "differed", "unknown", "skipped"]);
    }

    #[test]
    fn outcomes_serialize_tagged_and_leave_out_absent_words() {
        let v = serde_json::to_value(differed("a", "b")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"outcome": "differed", "expected": "a", "observed": "b"})
        );
        let v = serde_json::to_value(Finding::Unknown {
            why: "w".into(),
            workspace: Some(words()),
        })
        .unwrap();
        assert_eq!(v["outcome"], "unknown");
        assert_eq!(v["workspace"]["error_class"], "DELTA_X");
        assert!(v["workspace"].get("sql_state").is_none());
    }

    #[test]
    fn the_workspace_words_are_those_of_a_refusal() {
        assert_eq!(held("x").unwrap().workspace(), None);
        let o = Finding::Differed {
            expected: "a".into(),
            observed: "b".into(),
            workspace: Some(words()),
        };
        assert_eq!(
            o.workspace().map(|w| w.statement.as_str()),
            Some("ALTER TABLE t")
        );
    }

    #[test]
    fn words_of_a_workspace_error_keep_its_class_and_the_statement() {
        let e = WorkspaceError {
            http_status: Some(400),
            error_code: Some("BAD_REQUEST".into()),
            sql_state: Some("42000".into()),
            message: "[DELTA_UNSUPPORTED_ALTER] nope".into(),
            request_id: None,
            statement_id: Some("s1".into()),
        };
        let w = Words::of(&e, "ALTER TABLE t");
        assert_eq!(w.error_class.as_deref(), Some("DELTA_UNSUPPORTED_ALTER"));
        assert_eq!(w.error_code.as_deref(), Some("BAD_REQUEST"));
        assert_eq!(w.statement_id.as_deref(), Some("s1"));
        assert_eq!(w.statement, "ALTER TABLE t");
    }

    #[test]
    fn short_puts_a_statement_on_one_line_of_at_most_140_characters() {
        assert_eq!(short("SELECT\n  1,\t2"), "SELECT 1, 2");
        let long = "é".repeat(200);
        let s = short(&long);
        assert_eq!(s.chars().count(), 141);
        assert!(s.ends_with('…'));
        assert_eq!(short(&"a".repeat(140)), "a".repeat(140));
    }
}
