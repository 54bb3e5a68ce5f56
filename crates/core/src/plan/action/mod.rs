//! What a step does ([`Action`]), and everything the core knows about each
//! action, one file per family of actions: its title, whether the live table
//! already has what it would do ([`Action::holds`]), what it leaves on the
//! table for later steps ([`Action::apply_to`]) and the steps that undo it
//! ([`Action::inverse`]). Keeping these together per family means a new action
//! is one arm in one file per question, not a hunt through parallel matches;
//! `family` is the one place that routes an action to its file.

mod access;
mod columns;
mod constraints;
mod features;
mod layout;
mod maintenance;
mod properties;
mod rewrite;
mod table;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::change::FieldPath;
use super::steps::{Rewrite, RewritePhase};
use super::undo::Undo;
use crate::model::privilege::Privilege;
use crate::model::{
    Check, DataType, DesiredTable, ForeignKey, Leftover, Mask, ObservedTable, PrimaryKey, Scope,
    StructField,
};

pub use columns::field_at;
pub use features::has_column_defaults;
pub use maintenance::size_text;

/// What a step does, with everything a backend needs to do it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    CreateTable {
        table: Box<DesiredTable>,
    },
    Claim {
        marker: String,
        /// The record of the declared constraints, set in the same write as the marker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        constraints: Option<String>,
        /// Below `Full`, the scope is recorded in the same write.
        #[serde(default, skip_serializing_if = "Scope::is_full")]
        scope: Scope,
    },
    SetTableComment {
        comment: String,
    },
    SetProperties {
        properties: BTreeMap<String, String>,
    },
    UnsetProperties {
        keys: Vec<String>,
    },
    SetTableTags {
        tags: BTreeMap<String, String>,
    },
    UnsetTableTags {
        keys: Vec<String>,
    },
    EnableColumnMapping,
    EnableTypeWidening,
    /// `delta.feature.timestampNtz`: widening to timestamp_ntz needs it enabled by hand.
    EnableTimestampNtz,
    /// `delta.feature.allowColumnDefaults`: Delta refuses a column DEFAULT without it.
    EnableColumnDefaults,
    AddColumn {
        path: FieldPath,
        field: StructField,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    DropColumn {
        name: String,
    },
    /// Drops a nested struct field in place (column mapping).
    DropField {
        path: FieldPath,
    },
    AlterColumnType {
        path: FieldPath,
        to: DataType,
    },
    DropNotNull {
        path: FieldPath,
    },
    SetNotNull {
        path: FieldPath,
    },
    SetColumnComment {
        path: FieldPath,
        comment: String,
    },
    SetColumnTags {
        column: String,
        tags: BTreeMap<String, String>,
    },
    UnsetColumnTags {
        column: String,
        keys: Vec<String>,
    },
    SetMask {
        column: String,
        mask: Mask,
    },
    SetDefault {
        column: String,
        expression: String,
    },
    /// `ALTER COLUMN … DROP DEFAULT`: new rows get NULL; existing rows keep their values.
    DropDefault {
        column: String,
    },
    AddCheck {
        check: Check,
    },
    DropCheck {
        name: String,
    },
    /// Several CHECKs added in one commit (`Capabilities::checks_in_one_commit`),
    /// every row checked against all of them in one scan.
    AddChecks {
        checks: Vec<Check>,
    },
    /// Several CHECKs dropped in one commit.
    DropChecks {
        names: Vec<String>,
    },
    SetPrimaryKey {
        key: PrimaryKey,
        /// The live key this step drops first (a table has one primary key).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replaces: Option<PrimaryKey>,
    },
    AddForeignKey {
        key: ForeignKey,
    },
    DropForeignKey {
        key: ForeignKey,
    },
    SetClustering {
        keys: Vec<String>,
    },
    Rewrite {
        rewrite: Rewrite,
        phase: RewritePhase,
    },
    /// A shallow clone of the table as it is (no data copied: the clone
    /// references the table's current files), taken before the first step
    /// that could lose data. `name` is a table in the same schema.
    CloneTable {
        name: String,
    },
    Grant {
        principal: String,
        privileges: Vec<Privilege>,
    },
    Revoke {
        principal: String,
        privileges: Vec<Privilege>,
    },
    SetOwner {
        owner: String,
    },
    DropTable,
    /// Fills a column's NULLs with the spec's `using:` expression, in place
    /// (one UPDATE: every data file holding a NULL is rewritten).
    Backfill {
        column: String,
        expression: String,
    },
    /// Removes what interrupted runs left (re-checked when it runs: only what is still left over).
    RemoveLeftovers {
        leftovers: Vec<Leftover>,
    },
    /// Compaction: small files bin-packed into files up to `target_file_bytes`
    /// (Z-ordered by `z_order` when it names columns), committed against the
    /// version it read so concurrent appends keep every row.
    Compact {
        target_file_bytes: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        z_order: Vec<String>,
    },
    /// Deletes files removed from the table more than `retain_hours` ago,
    /// except those the versions in `keep_versions` (restore points the
    /// operator recorded) still need. `keep_since_ms`: the oldest of their
    /// record times, for a backend with no keep-versions option (it raises the
    /// retention to cover it).
    Vacuum {
        retain_hours: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        keep_versions: Vec<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_since_ms: Option<i64>,
    },
    /// Writes a checkpoint of the table's log at its latest version.
    Checkpoint,
}

/// The properties a claim writes, in one write: the owner marker, and the
/// record of the constraints the spec declares when it declares some.
pub fn claim_properties(
    marker: &str,
    constraints: Option<&str>,
    scope: Scope,
) -> std::collections::BTreeMap<String, String> {
    let mut p = std::collections::BTreeMap::from([(
        crate::model::OWNER_PROPERTY.to_string(),
        marker.to_string(),
    )]);
    if !scope.is_full() {
        p.insert(
            crate::model::property::SCOPE_PROPERTY.to_string(),
            scope.marker().to_string(),
        );
    }
    if let Some(c) = constraints {
        p.insert(
            crate::model::CONSTRAINTS_PROPERTY.to_string(),
            c.to_string(),
        );
    }
    p
}

/// The family of actions an action belongs to: the file that answers for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Table,
    Properties,
    Features,
    Columns,
    Constraints,
    Layout,
    Rewrite,
    Access,
    Maintenance,
}

impl Action {
    fn family(&self) -> Family {
        use Action as A;
        match self {
            A::CreateTable { .. }
            | A::Claim { .. }
            | A::SetTableComment { .. }
            | A::CloneTable { .. }
            | A::SetOwner { .. }
            | A::DropTable
            | A::RemoveLeftovers { .. } => Family::Table,
            A::SetProperties { .. }
            | A::UnsetProperties { .. }
            | A::SetTableTags { .. }
            | A::UnsetTableTags { .. } => Family::Properties,
            A::EnableColumnMapping
            | A::EnableTypeWidening
            | A::EnableTimestampNtz
            | A::EnableColumnDefaults => Family::Features,
            A::AddColumn { .. }
            | A::RenameColumn { .. }
            | A::DropColumn { .. }
            | A::DropField { .. }
            | A::AlterColumnType { .. }
            | A::DropNotNull { .. }
            | A::SetNotNull { .. }
            | A::SetColumnComment { .. }
            | A::SetColumnTags { .. }
            | A::UnsetColumnTags { .. }
            | A::SetMask { .. }
            | A::SetDefault { .. }
            | A::DropDefault { .. }
            | A::Backfill { .. } => Family::Columns,
            A::AddCheck { .. }
            | A::DropCheck { .. }
            | A::AddChecks { .. }
            | A::DropChecks { .. }
            | A::SetPrimaryKey { .. }
            | A::AddForeignKey { .. }
            | A::DropForeignKey { .. } => Family::Constraints,
            A::SetClustering { .. } => Family::Layout,
            A::Rewrite { .. } => Family::Rewrite,
            A::Grant { .. } | A::Revoke { .. } => Family::Access,
            A::Compact { .. } | A::Vacuum { .. } | A::Checkpoint => Family::Maintenance,
        }
    }

    /// True when the step reads every row of the table (a rewrite, or a
    /// change the engine checks against every row): its plan shows the size.
    pub fn scans_table(&self) -> bool {
        match self {
            Action::Rewrite { phase, .. } => *phase != RewritePhase::DropStaging,
            Action::SetNotNull { .. }
            | Action::Compact { .. }
            | Action::AddCheck { .. }
            | Action::AddChecks { .. }
            | Action::Backfill { .. } => true,
            _ => false,
        }
    }

    /// The short title a plan shows (`ADD COLUMN status`).
    pub fn title(&self) -> String {
        match self.family() {
            Family::Table => table::title(self),
            Family::Properties => properties::title(self),
            Family::Features => features::title(self),
            Family::Columns => columns::title(self),
            Family::Constraints => constraints::title(self),
            Family::Layout => layout::title(self),
            Family::Rewrite => rewrite::title(self),
            Family::Access => access::title(self),
            Family::Maintenance => maintenance::title(self),
        }
    }

    /// "Is this step's change already true of the live table?" The executor
    /// asks before every step and skips what holds, so a rerun is a no-op.
    /// With no live table only a drop holds.
    pub fn holds(&self, live: Option<&ObservedTable>) -> bool {
        let Some(live) = live else {
            return matches!(self, Action::DropTable);
        };
        match self.family() {
            Family::Table => table::holds(self, live),
            Family::Properties => properties::holds(self, live),
            Family::Features => features::holds(self, live),
            Family::Columns => columns::holds(self, live),
            Family::Constraints => constraints::holds(self, live),
            Family::Layout => layout::holds(self, live),
            Family::Rewrite => rewrite::holds(self, live),
            Family::Access => access::holds(self, live),
            Family::Maintenance => maintenance::holds(self, live),
        }
    }

    /// What the step leaves on `live` that a later step's statements depend
    /// on (properties and table features, the primary key), so a plan
    /// compiles each step against the table as it will be when the step runs.
    /// Columns, data and access are not followed: no later statement reads them.
    pub fn apply_to(&self, live: &mut ObservedTable) {
        match self.family() {
            Family::Table => table::apply_to(self, live),
            Family::Properties => properties::apply_to(self, live),
            Family::Features => features::apply_to(self, live),
            Family::Constraints => constraints::apply_to(self, live),
            Family::Maintenance => maintenance::apply_to(self, live),
            // a column default's table feature is its own step (EnableColumnDefaults)
            Family::Columns | Family::Layout | Family::Rewrite | Family::Access => {}
        }
    }

    /// What puts the table back as it was before this step: `before` is the
    /// table then (None: none yet, or not read), `version` the version the
    /// plan read (a restore's target). None: no undo is known.
    pub fn undo(&self, before: Option<&ObservedTable>, version: Option<u64>) -> Option<Undo> {
        let inverse = || before.and_then(|b| self.inverse(b)).map(steps);
        match self.family() {
            Family::Table => table::undo(self).or_else(inverse),
            Family::Columns => columns::undo(self, version).or_else(inverse),
            Family::Constraints => constraints::undo(self).or_else(inverse),
            Family::Rewrite => rewrite::undo(self, version),
            // a maintenance step changes no data: nothing to put back (a vacuum's
            // files are gone for good, which its plan line says)
            Family::Features | Family::Maintenance => None,
            Family::Properties | Family::Layout | Family::Access => inverse(),
        }
    }

    /// The steps that undo this one on `live` (the table as it was before
    /// it), in order; None when it has no inverse of its own (see
    /// `plan::undo`).
    pub fn inverse(&self, live: &ObservedTable) -> Option<Vec<Action>> {
        let steps = match self.family() {
            Family::Table => table::inverse(self, live),
            Family::Properties => properties::inverse(self, live),
            Family::Features | Family::Rewrite => None,
            Family::Columns => columns::inverse(self, live),
            Family::Constraints => constraints::inverse(self, live),
            Family::Layout => layout::inverse(self, live),
            Family::Access => access::inverse(self),
            Family::Maintenance => maintenance::inverse(self),
        }?;
        (!steps.is_empty()).then_some(steps)
    }
}

/// An undo by these steps.
fn steps(steps: Vec<Action>) -> Undo {
    Undo::Steps { steps }
}

/// The table as `earlier` steps leave it (`Action::apply_to`), from the
/// table as observed; None when there is none.
pub fn after(observed: Option<&ObservedTable>, earlier: &[super::Step]) -> Option<ObservedTable> {
    let mut live = observed.cloned()?;
    for s in earlier {
        s.action.apply_to(&mut live);
    }
    Some(live)
}

/// For `keys`: the live values to set again, and the keys that were absent
/// (to remove).
fn restore_map(
    have: &BTreeMap<String, String>,
    keys: &[String],
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut set = BTreeMap::new();
    let mut unset = Vec::new();
    for k in keys {
        match have.get(k) {
            Some(v) => {
                set.insert(k.clone(), v.clone());
            }
            None => unset.push(k.clone()),
        }
    }
    (set, unset)
}

fn keys<'a>(k: impl Iterator<Item = &'a String>) -> String {
    k.map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// Up to five names, then how many more (a title stays one short line).
fn few<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let n = names.len();
    let shown: Vec<&str> = names.take(5).collect();
    if n > shown.len() {
        format!("{}, … {} more", shown.join(", "), n - shown.len())
    } else {
        shown.join(", ")
    }
}

/// "`family` routed another family's action here": a bug, named.
fn misrouted(action: &Action) -> ! {
    unreachable!("Action::family routed {action:?} to the wrong family")
}
