//! Views, SQL functions and volumes, planned: a declared object against its
//! live state, in numbered steps with a risk class, warnings and undo text
//! (the same shape as a schema's plan), and the live objects of declared
//! schemas that no resource declares (orphans, or unmanaged when unmarked).
//! Statements are compiled at plan time (`compile.rs`), like a table's.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::planner::TableAction;
use super::rules::RuleFailure;
use super::steps::RiskClass;
use crate::model::privilege::{self, Privilege};
use crate::model::{DesiredObject, FunctionParam, ObjectRef, ObservedObject};

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
/// of declared schemas no resource declares. Returns the plans (sorted by
/// object), the unmanaged live objects (no marker: never touched) and the
/// order of every table and object (dependencies first).
///
/// Seams only for now: no object is planned yet.
pub fn plan_objects(
    desired: &[Arc<DesiredObject>],
    observed: &[Arc<ObservedObject>],
    scopes: &[super::SchemaScope],
    caps: &super::Capabilities,
    tables: &mut [super::TablePlan],
) -> (Vec<ObjectPlan>, Vec<ObjectRef>, Vec<super::graph::Node>) {
    let _ = (desired, observed, scopes, caps);
    let order = tables
        .iter()
        .map(|t| super::graph::Node::Table(t.table.clone()))
        .collect();
    (vec![], vec![], order)
}
