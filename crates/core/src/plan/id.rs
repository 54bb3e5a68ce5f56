//! The plan id: a hash of what was desired and what was observed, the same on
//! every machine and every run. Approvals are pinned to it, and an apply
//! recomputes it to refuse a plan the world has moved away from.
//!
//! What the plan acts on is hashed; how much data the table holds is not:
//! the observed Delta version and size move with every append of a live
//! writer, and an approval that a writer voids every second approves nothing
//! ever. A rewrite is guarded against those appends where it commits (it
//! commits only against the version it read), and the restore point is the
//! version recorded just before the step. The table's history (commit times,
//! VACUUMs: the windows of its restore points, shown beside the undo) is not
//! hashed either: it moves with every commit.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::capabilities::BackendKind;
use super::object::ObjectPlan;
use super::planner::TablePlan;
use super::schema::SchemaPlan;
use encoding::IdHasher;

mod encoding;

/// Bump when the hashed input changes shape, so old approvals never match.
/// v4: the compact encoding (`encoding.rs`) instead of serde_json text, the
/// same facts in about a fifth of the bytes (planning 1,000 tables was mostly
/// writing and hashing their JSON). v5: a declared column says whether the spec
/// removes its default (`default: null`). v6: a declared table's scope, its
/// hand-off and a column's unstated shape, and a live relation's kind. v7: a
/// schema's managed location, and the CREATE of an absent schema. v8: a declared
/// table's maintenance, and a live table's health (always blanked). v9: views,
/// functions and volumes (each object's declared and live state, its action and
/// its steps' statements, after the schemas; a view's `outputs` joined it before any release).
const ID_VERSION: &str = "delta-operator plan id v9";

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
/// metadata. Each record starts with its kind (1 a table, 2 a schema) and a 0
/// ends the plan, so no two plans' bytes run into each other.
pub fn plan_id_all(backend: BackendKind, tables: &[TablePlan], schemas: &[SchemaPlan]) -> PlanId {
    plan_id_parts(backend, tables, schemas, &[])
}

/// `plan_id_all`, and after the schemas each view, function and volume
/// (record kind 3): its name, declared and live state, action and statements.
pub fn plan_id_parts(
    backend: BackendKind,
    tables: &[TablePlan],
    schemas: &[SchemaPlan],
    objects: &[ObjectPlan],
) -> PlanId {
    let mut h = IdHasher::new();
    h.str(ID_VERSION);
    h.str(backend.as_str());
    for t in tables {
        h.byte(1);
        h.value(&t.table);
        h.value(&t.desired);
        // appends move these (the health too: file counts, versions since the
        // checkpoint), not what the plan does (see above; a maintenance step the
        // health makes due is in the steps); a narrow scope's plan rests on what
        // it governs only (`scope::governed_view`)
        match (&t.desired, &t.observed) {
            (Some(d), Some(o)) if !d.scope.is_full() => h.value_blanking(
                &Some(super::scope::governed_view(d, o)),
                &["version", "size_bytes", "health"],
            ),
            _ => h.value_blanking(&t.observed, &["version", "size_bytes", "health"]),
        }
        h.value(&t.action);
        // what runs: approving the id approves exactly these statements and checks
        // (compiled with placeholders for what only the run knows, so appends do not move it)
        // (as a sequence is written: 1 before each step, 0 after the last)
        for s in t.steps() {
            h.byte(1);
            h.value(&s.statements);
            h.value(&s.checks);
        }
        h.byte(0);
    }
    for s in schemas {
        h.byte(2);
        h.value(&s.schema);
        h.value(&s.desired);
        h.value(&s.observed);
        for st in s.steps() {
            h.byte(1);
            h.value(&st.statements);
        }
        h.byte(0);
    }
    for o in objects {
        h.byte(3);
        h.value(&o.object);
        h.value(&o.desired);
        h.value(&o.observed);
        h.value(&o.action);
        for st in o.steps() {
            h.byte(1);
            h.value(&st.statements);
        }
        h.byte(0);
    }
    h.byte(0);
    let digest = h.finish();
    PlanId(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}
