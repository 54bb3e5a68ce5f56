//! Views, SQL functions and volumes, planned: a declared object against its
//! live state, in numbered steps with a risk class, warnings and undo text
//! (the same shape as a schema's plan), and the live objects of declared
//! schemas that no resource declares (orphans, or unmanaged when unmarked).
//! Statements are compiled at plan time (`compile.rs`), like a table's.

mod breaks;
mod declared;
mod holds;
pub mod record;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::SchemaScope;
use super::capabilities::Capabilities;
use super::graph::{self, Node};
use super::planner::{TableAction, TablePlan};
use super::rules::RuleFailure;
use super::steps::RiskClass;
use crate::model::privilege::{self, Privilege};
use crate::model::{
    DesiredObject, FunctionParam, ObjectKind, ObjectRef, ObservedObject, SchemaMode, TableRef,
};

pub use breaks::{changed_columns, class_breaks};
pub use declared::{is_catalog_view_property, plan_declared, plan_orphan};
pub use holds::holds;

/// What an object step does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum ObjectAction {
    /// `CREATE VIEW`; `properties` hold the owner marker.
    CreateView {
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        column_comments: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        properties: BTreeMap<String, String>,
    },
    /// `CREATE OR REPLACE VIEW`: drops the view's tags, grants and
    /// properties, so put-back steps follow (the properties are in it).
    ReplaceView {
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        column_comments: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        properties: BTreeMap<String, String>,
    },
    /// `CREATE FUNCTION`; `comment` ends with the marker line.
    CreateFunction {
        parameters: Vec<FunctionParam>,
        returns: String,
        body: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deterministic: Option<bool>,
        comment: String,
    },
    /// `CREATE OR REPLACE FUNCTION`: drops the function's grants, so
    /// put-back steps follow.
    ReplaceFunction {
        parameters: Vec<FunctionParam>,
        returns: String,
        body: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deterministic: Option<bool>,
        comment: String,
    },
    /// `CREATE VOLUME` (managed); `comment` ends with the marker line.
    CreateVolume {
        comment: String,
    },
    /// `COMMENT ON VIEW|VOLUME` (a function's comment changes by a replace);
    /// a volume's holds the marker line.
    SetComment {
        comment: String,
    },
    /// `COMMENT ON COLUMN view.col` (views): a declared column comment
    /// changed while the query did not (no replace needed).
    SetColumnComment {
        column: String,
        comment: String,
    },
    SetProperties {
        properties: BTreeMap<String, String>,
    },
    UnsetProperties {
        keys: Vec<String>,
    },
    SetTags {
        tags: BTreeMap<String, String>,
    },
    UnsetTags {
        keys: Vec<String>,
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
    Drop,
}

impl ObjectAction {
    /// The short title a plan shows (`kind` is the object's: VIEW, FUNCTION, VOLUME).
    pub fn title(&self, object: &ObjectRef) -> String {
        let kind = object.kind;
        let keys = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>().join(", ");
        match self {
            ObjectAction::CreateView { .. } => "CREATE VIEW".into(),
            ObjectAction::ReplaceView { .. } => "CREATE OR REPLACE VIEW".into(),
            ObjectAction::CreateFunction { .. } => "CREATE FUNCTION".into(),
            ObjectAction::ReplaceFunction { .. } => "CREATE OR REPLACE FUNCTION".into(),
            ObjectAction::CreateVolume { .. } => "CREATE VOLUME".into(),
            ObjectAction::SetComment { .. } => format!("COMMENT ON {kind}"),
            ObjectAction::SetColumnComment { column, .. } => format!("COMMENT ON COLUMN {column}"),
            ObjectAction::SetProperties { properties } => {
                format!("SET TBLPROPERTIES ({})", keys(properties))
            }
            ObjectAction::UnsetProperties { keys } => {
                format!("UNSET TBLPROPERTIES ({})", keys.join(", "))
            }
            ObjectAction::SetTags { tags } => format!("SET TAGS ({})", keys(tags)),
            ObjectAction::UnsetTags { keys } => format!("UNSET TAGS ({})", keys.join(", ")),
            ObjectAction::Grant {
                principal,
                privileges,
            } => format!(
                "GRANT {} ON {kind} TO {principal}",
                privilege::list(privileges)
            ),
            ObjectAction::Revoke {
                principal,
                privileges,
            } => format!(
                "REVOKE {} ON {kind} FROM {principal}",
                privilege::list(privileges)
            ),
            ObjectAction::SetOwner { owner } => format!("OWNER TO {owner}"),
            ObjectAction::Drop => format!("DROP {kind}"),
        }
    }

    /// Whether its effect is already true on the live object (`holds`).
    pub fn holds(&self, live: Option<&ObservedObject>) -> bool {
        holds::holds(self, live)
    }

    /// Whether it replaces the object (what put-back steps follow).
    pub fn is_replace(&self) -> bool {
        matches!(
            self,
            ObjectAction::ReplaceView { .. } | ObjectAction::ReplaceFunction { .. }
        )
    }
}

/// One numbered step of an object's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectStep {
    /// 1-based within the object's plan.
    pub number: usize,
    pub class: RiskClass,
    #[serde(flatten)]
    pub action: ObjectAction,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How to undo it (shown, never run); a drop's is the old DDL, which the
    /// backend's compiler renders (`CompiledObject::undo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
    /// What the backend runs, compiled at plan time (`compile.rs`).
    #[serde(default)]
    pub statements: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum ObjectOutcome {
    Accepted {
        steps: Vec<ObjectStep>,
    },
    Rejected {
        failures: Vec<RuleFailure>,
    },
    /// Not run because a table or object it depends on was refused or is
    /// blocked itself: `by` names each (`c.s.n`).
    Blocked {
        by: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        would_run: Vec<ObjectStep>,
    },
}

/// One object's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectPlan {
    pub object: ObjectRef,
    /// Create, Update, Destroy (a strict orphan), Unchanged or Keep (an additive orphan).
    pub action: TableAction,
    #[serde(flatten)]
    pub outcome: ObjectOutcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Both sides, for the plan id and a saved plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Arc<DesiredObject>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Arc<ObservedObject>>,
}

impl ObjectPlan {
    pub fn steps(&self) -> &[ObjectStep] {
        match &self.outcome {
            ObjectOutcome::Accepted { steps } => steps,
            _ => &[],
        }
    }
    pub fn is_accepted(&self) -> bool {
        matches!(self.outcome, ObjectOutcome::Accepted { .. })
    }
    /// Refused by a rule or blocked by a refused dependency.
    pub fn is_refused(&self) -> bool {
        !self.is_accepted()
    }
    /// The highest risk class among the steps.
    pub fn risk(&self) -> Option<RiskClass> {
        self.steps().iter().map(|s| s.class).max()
    }
    /// `<namespace>/<name>` of the declaring resource (or the live owner of an orphan).
    pub fn resource(&self) -> Option<String> {
        match (&self.desired, &self.observed) {
            (Some(d), _) => Some(d.owner_marker.to_string()),
            (None, Some(o)) => o.owner_marker().map(str::to_string),
            (None, None) => None,
        }
    }
}

/// Plans every declared object against the live ones, and the live objects
/// of declared schemas no resource declares (`observed`: every view,
/// function and volume of the declared schemas, and the declared ones).
/// Returns the plans (sorted by object), the unmanaged live objects (no
/// marker: never touched, listed) and the order of every table and object
/// (dependencies first). It also refuses cycles (`DependencyCycle`, tables
/// too), classes the table steps that break views (`breaks`), and blocks
/// what depends on anything refused, tables by a failed mask function too.
pub fn plan_objects(
    desired: &[Arc<DesiredObject>],
    observed: &[Arc<ObservedObject>],
    scopes: &[SchemaScope],
    caps: &Capabilities,
    tables: &mut [TablePlan],
) -> (Vec<ObjectPlan>, Vec<ObjectRef>, Vec<Node>) {
    let live: BTreeMap<&ObjectRef, &Arc<ObservedObject>> =
        observed.iter().map(|o| (&o.object, o)).collect();
    let mut desired: Vec<&Arc<DesiredObject>> = desired.iter().collect();
    desired.sort_by(|a, b| a.object.cmp(&b.object));
    desired.dedup_by(|a, b| a.object == b.object);
    let mut objects: Vec<ObjectPlan> = desired
        .iter()
        .map(|d| declared::plan_declared(d, live.get(&d.object).copied(), caps))
        .collect();
    let declared: BTreeSet<&ObjectRef> = desired.iter().map(|d| &d.object).collect();
    // a relation a table plan covers (a view a DeltaTable governs) is the table plan's
    let relations: BTreeSet<&TableRef> = tables.iter().map(|t| &t.table).collect();
    let mut unmanaged = vec![];
    let mut live: Vec<&Arc<ObservedObject>> = observed.iter().collect();
    live.sort_by(|a, b| a.object.cmp(&b.object));
    live.dedup_by(|a, b| a.object == b.object);
    for o in live {
        if declared.contains(&o.object) {
            continue;
        }
        if o.object.kind == ObjectKind::View && relations.contains(&o.object.as_table_ref()) {
            continue;
        }
        let Some(scope) = scopes.iter().find(|s| s.schema == o.object.schema_ref()) else {
            continue;
        };
        if o.owner_marker().is_some() {
            objects.push(declared::plan_orphan(o, scope.mode == SchemaMode::Strict));
        } else {
            unmanaged.push(o.object.clone());
        }
    }
    objects.sort_by(|a, b| a.object.cmp(&b.object));
    graph::refuse_cycles(tables, &mut objects);
    breaks::class_breaks(tables, &objects, observed);
    graph::block(tables, &mut objects);
    let order = graph::Graph::of(tables, &objects).order();
    (objects, unmanaged, order)
}

/// A schema's orphan objects as the cluster knows them (the objects'
/// `plan_orphans`): its live views, functions and volumes carrying the marker
/// of a resource in `namespace` that no longer exists (`existing` holds the
/// resources that do). Additive scopes list them (no steps); strict ones drop them.
pub fn plan_orphan_objects(
    scope: &SchemaScope,
    observed: &[Arc<ObservedObject>],
    namespace: &str,
    existing: &BTreeSet<crate::model::ResourceId>,
) -> Vec<ObjectPlan> {
    let mut live: Vec<&Arc<ObservedObject>> = observed
        .iter()
        .filter(|o| o.object.schema_ref() == scope.schema)
        .filter(|o| {
            o.owner()
                .is_some_and(|r| r.namespace == namespace && !existing.contains(&r))
        })
        .collect();
    live.sort_by(|a, b| a.object.cmp(&b.object));
    live.dedup_by(|a, b| a.object == b.object);
    live.into_iter()
        .map(|o| declared::plan_orphan(o, scope.mode == SchemaMode::Strict))
        .collect()
}
