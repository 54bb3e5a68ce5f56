//! How many commits a table's CHECK changes take. Where the engine adds or drops
//! one constraint per statement (Delta's `ALTER TABLE … ADD CONSTRAINT name CHECK (…)`
//! takes exactly one: Databricks, OSS Delta on Spark), each CHECK is a commit whose
//! metadata carries every constraint so far, so thousands of them grow the log
//! quadratically. A plan holds at most [`MAX_CHECK_COMMITS`] of them; the lake
//! commits a table's CHECK changes at once and has no such limit (the spec's
//! limit of CHECKs per table holds everywhere).

use super::*;
use crate::plan::steps::{Action, Step};

/// The most CHECK additions and drops one plan makes of a table, one commit each.
pub const MAX_CHECK_COMMITS: usize = 100;

/// A table's steps that add or drop CHECKs one statement each, past the limit.
pub fn check_commits(steps: &[Step], caps: &Capabilities) -> Option<RuleFailure> {
    if caps.checks_in_one_commit {
        return None;
    }
    let (mut adds, mut drops) = (0usize, 0usize);
    for s in steps {
        match &s.action {
            Action::AddCheck { .. } => adds += 1,
            Action::AddChecks { checks } => adds += checks.len(),
            Action::DropCheck { .. } => drops += 1,
            Action::DropChecks { names } => drops += names.len(),
            _ => {}
        }
    }
    let n = adds + drops;
    (n > MAX_CHECK_COMMITS).then(|| {
        fail(
            Rule::NotSupportedByBackend,
            "spec.constraints",
            format!(
                "this plan adds {adds} and drops {drops} CHECK constraints: {n} commits on the {} backend, whose ALTER TABLE adds or drops one constraint per statement (each commit carries every constraint so far); the limit is {MAX_CHECK_COMMITS} per plan",
                caps.backend
            ),
            format!(
                "combine related conditions into one CHECK (a AND b), or change the CHECKs over several applies, at most {MAX_CHECK_COMMITS} at a time"
            ),
        )
    })
}
