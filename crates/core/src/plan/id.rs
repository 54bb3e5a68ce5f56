//! The plan id: a hash of what was desired and what was observed, the same on
//! every machine and every run. Approvals are pinned to it, and an apply
//! recomputes it to refuse a plan the world has moved away from.
//!
//! What the plan acts on is hashed; how much data the table holds is not:
//! the observed Delta version and size move with every append of a live
//! writer, and an approval that a writer voids every second approves nothing
//! ever. A rewrite is guarded against those appends where it commits (it
//! commits only against the version it read), and the restore point is the
//! version recorded just before the step.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::capabilities::BackendKind;
use super::planner::TablePlan;
use super::schema::SchemaPlan;
use crate::model::ObservedTable;

/// Bump when the hashed input changes shape, so old approvals never match.
const ID_VERSION: &str = "delta-operator plan id v3";

/// A plan's id, 16 hex characters: what an approval names and an apply checks.
/// Compared with the text a person typed (`--approve`, the annotation) as is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlanId(String);

impl PlanId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Reads as the text it is (`&plan.id` where a `&str` is wanted).
impl std::ops::Deref for PlanId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for PlanId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for PlanId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<PlanId> for &str {
    fn eq(&self, other: &PlanId) -> bool {
        *self == other.0
    }
}

impl PartialEq<PlanId> for str {
    fn eq(&self, other: &PlanId) -> bool {
        self == other.0
    }
}

impl From<PlanId> for String {
    fn from(id: PlanId) -> String {
        id.0
    }
}

/// 16 hex characters over (backend, every table's desired and observed state,
/// every step's compiled statements and checks).
pub fn plan_id(backend: BackendKind, tables: &[TablePlan]) -> PlanId {
    plan_id_all(backend, tables, &[])
}

/// `plan_id`, and after the tables each schema's name, declared and live
/// metadata (nothing is added for a plan without schema plans, so the ids of
/// table-only plans are unchanged).
pub fn plan_id_all(backend: BackendKind, tables: &[TablePlan], schemas: &[SchemaPlan]) -> PlanId {
    let mut h = Sha256::new();
    h.update(ID_VERSION.as_bytes());
    h.update([0]);
    h.update(backend.as_str().as_bytes());
    for t in tables {
        h.update([0]);
        h.update(t.table.to_string().as_bytes());
        h.update([0]);
        // serde_json writes struct fields in declaration order and BTreeMaps sorted: canonical
        hash_json(&mut h, &t.desired);
        h.update([0]);
        let observed = t.observed.as_ref().map(|o| ObservedTable {
            version: None,
            size_bytes: None,
            ..o.clone()
        });
        hash_json(&mut h, &observed);
        h.update([0]);
        hash_json(&mut h, &t.action);
        // what runs: approving the id approves exactly these statements and checks
        // (compiled with placeholders for what only the run knows, so appends do not move it)
        for s in t.steps() {
            h.update([0]);
            hash_json(&mut h, &(&s.statements, &s.checks));
        }
    }
    for s in schemas {
        h.update([1]);
        h.update(s.schema.to_string().as_bytes());
        h.update([0]);
        hash_json(&mut h, &s.desired);
        h.update([0]);
        hash_json(&mut h, &s.observed);
        for st in s.steps() {
            h.update([0]);
            hash_json(&mut h, &st.statements);
        }
    }
    let digest = h.finalize();
    PlanId(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Feeds `value`'s JSON straight into the hash: the same bytes `to_vec` made,
/// without building them in a buffer first (a 1,000-table plan is ~17 MB of it).
/// These types always serialise (string map keys only), so there is no error to lose.
fn hash_json(h: &mut Sha256, value: &impl Serialize) {
    let _ = serde_json::to_writer(HashWriter(h), value);
}

/// `io::Write` into a hash.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
