//! A DeltaSchema's own metadata, planned: its comment, properties, owner and
//! grants against the live schema. The same shape as a table's plan (numbered
//! steps with a risk class, warnings and undo text, all or nothing), and the
//! same silence rule: what the spec does not name is left alone.
//!
//! A declared schema that does not exist is created, as a visible first step
//! carrying the comment, properties and managed location (the owner and
//! grants follow as their own steps). The operator never drops a schema: the
//! create's undo is shown, never run. A catalog is never created here: the
//! backends refuse a schema whose catalog is absent, naming the catalog.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::SchemaScope;
use super::capabilities::Capabilities;
use super::rules::{Rule, RuleFailure};
use super::steps::RiskClass;
use crate::model::privilege::{self, Privilege};
use crate::model::{ObservedSchema, SchemaMeta, SchemaRef};

/// What a schema step does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum SchemaAction {
    /// Creates the absent schema with what its CREATE can carry (Databricks:
    /// `CREATE SCHEMA IF NOT EXISTS … COMMENT … MANAGED LOCATION … WITH
    /// DBPROPERTIES`; the lake and Spark Connect: its folder).
    Create {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        properties: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        managed_location: Option<String>,
    },
    /// `""` clears the comment.
    SetComment {
        comment: String,
    },
    SetProperties {
        properties: BTreeMap<String, String>,
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
}

impl SchemaAction {
    /// The short title a plan shows.
    pub fn title(&self) -> String {
        match self {
            SchemaAction::Create { .. } => "CREATE SCHEMA".into(),
            SchemaAction::SetComment { .. } => "COMMENT ON SCHEMA".into(),
            SchemaAction::SetProperties { properties } => format!(
                "SET DBPROPERTIES ({})",
                properties.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            SchemaAction::Grant {
                principal,
                privileges,
            } => format!(
                "GRANT {} ON SCHEMA TO {principal}",
                privilege::list(privileges)
            ),
            SchemaAction::Revoke {
                principal,
                privileges,
            } => format!(
                "REVOKE {} ON SCHEMA FROM {principal}",
                privilege::list(privileges)
            ),
            SchemaAction::SetOwner { owner } => format!("OWNER TO {owner}"),
        }
    }
}

/// One numbered step of a schema's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaStep {
    /// 1-based within the schema's plan.
    pub number: usize,
    pub class: RiskClass,
    #[serde(flatten)]
    pub action: SchemaAction,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How to undo it (shown, never run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
    /// What the backend runs, compiled at plan time (`compile.rs`).
    #[serde(default)]
    pub statements: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum SchemaOutcome {
    Accepted { steps: Vec<SchemaStep> },
    Rejected { failures: Vec<RuleFailure> },
}

/// One schema's plan: what its DeltaSchema declares against what is live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaPlan {
    pub schema: SchemaRef,
    #[serde(flatten)]
    pub outcome: SchemaOutcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Both sides, for the plan id.
    pub desired: SchemaMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedSchema>,
}

impl SchemaPlan {
    pub fn steps(&self) -> &[SchemaStep] {
        match &self.outcome {
            SchemaOutcome::Accepted { steps } => steps,
            SchemaOutcome::Rejected { .. } => &[],
        }
    }
    pub fn is_accepted(&self) -> bool {
        matches!(self.outcome, SchemaOutcome::Accepted { .. })
    }
    pub fn risk(&self) -> Option<RiskClass> {
        self.steps().iter().map(|s| s.class).max()
    }
    /// True when the plan creates the schema (it does not exist).
    pub fn creates(&self) -> bool {
        self.steps()
            .iter()
            .any(|s| matches!(s.action, SchemaAction::Create { .. }))
    }
}

/// Plans every declared schema: the metadata of one whose spec names some,
/// and the creation of one that does not exist (whatever its spec names). A
/// live schema whose spec is silent has no plan. `observed` holds the live
/// schemas read: a declared schema missing from it does not exist.
pub fn plan_schemas(
    scopes: &[SchemaScope],
    observed: &[ObservedSchema],
    caps: &Capabilities,
) -> Vec<SchemaPlan> {
    let mut plans: Vec<SchemaPlan> = scopes
        .iter()
        .filter_map(|s| {
            let live = observed.iter().find(|o| o.schema == s.schema);
            plan_schema(&s.schema, &s.meta, live, caps)
        })
        .collect();
    plans.sort_by(|a, b| a.schema.cmp(&b.schema));
    plans
}

/// One schema's plan: `None` when it exists and the spec declares no metadata.
pub fn plan_schema(
    schema: &SchemaRef,
    desired: &SchemaMeta,
    live: Option<&ObservedSchema>,
    caps: &Capabilities,
) -> Option<SchemaPlan> {
    if desired.is_silent() && live.is_some() {
        return None;
    }
    let failures = check(desired, live, caps);
    let mut notes = vec![];
    let outcome = if !failures.is_empty() {
        SchemaOutcome::Rejected { failures }
    } else {
        let steps = match live {
            Some(live) => {
                if desired.managed_location.is_some() {
                    notes.push(
                        "spec.managedLocation is used only when the operator creates the schema: the live schema keeps its storage root"
                            .into(),
                    );
                }
                steps(schema, desired, live)
            }
            None => {
                notes.push(format!(
                    "the schema does not exist: step 1 creates it, before any table of it; the operator never drops a schema (the undo is shown, never run){}",
                    if caps.backend == super::BackendKind::Databricks {
                        ""
                    } else {
                        ": on this backend a schema is a folder under the root"
                    }
                ));
                created(schema, desired, caps)
            }
        };
        SchemaOutcome::Accepted { steps }
    };
    Some(SchemaPlan {
        schema: schema.clone(),
        outcome,
        notes,
        desired: desired.clone(),
        observed: live.cloned(),
    })
}

/// The steps of an absent schema: the CREATE with its comment, properties
/// and location, then the grants and the owner as on a live schema with none.
fn created(schema: &SchemaRef, desired: &SchemaMeta, caps: &Capabilities) -> Vec<SchemaStep> {
    let properties: BTreeMap<String, String> = desired
        .properties
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
        .collect();
    let create = SchemaStep {
        number: 1,
        class: RiskClass::Meta,
        action: SchemaAction::Create {
            // an empty comment clears one: a new schema has none to clear
            comment: desired.comment.clone().filter(|c| !c.is_empty()),
            properties,
            managed_location: desired.managed_location.clone(),
        },
        warnings: vec![],
        notes: vec![],
        undo: Some(if caps.backend == super::BackendKind::Databricks {
            format!(
                "DROP SCHEMA {schema} RESTRICT (shown, never run: the operator never drops a schema; RESTRICT refuses while it holds a table)"
            )
        } else {
            format!(
                "remove the folder {}/{}/ once it is empty (shown, never run: the operator never drops a schema)",
                schema.catalog, schema.schema
            )
        }),
        statements: vec![],
    };
    // the grants and the owner, against a schema that has neither yet
    let rest = SchemaMeta {
        comment: None,
        properties: BTreeMap::new(),
        ..desired.clone()
    };
    let mut out = vec![create];
    for mut s in steps(schema, &rest, &ObservedSchema::new(schema.clone())) {
        s.number = out.len() + 1;
        out.push(s);
    }
    out
}

/// What this backend cannot hold, by spec field; every failure at once.
fn check(
    desired: &SchemaMeta,
    live: Option<&ObservedSchema>,
    caps: &Capabilities,
) -> Vec<RuleFailure> {
    let mut out = vec![];
    let mut cannot = |field: &str, what: &str| {
        out.push(RuleFailure {
            rule: Rule::NotSupportedByBackend,
            subject: format!("spec.{field}"),
            message: format!(
                "the {} backend cannot keep a schema's {what}: its schema is a folder, which has nowhere to hold one",
                caps.backend
            ),
            fix: format!(
                "remove spec.{field} from the DeltaSchema, or use a target whose backend keeps schema {what} (databricks)"
            ),
        });
    };
    if desired.comment.is_some() && !caps.schema_comment {
        cannot("comment", "comment");
    }
    if desired.properties.values().any(Option::is_some) && !caps.schema_properties {
        cannot("properties", "properties");
    }
    if desired.owner.is_some() && !caps.owner {
        cannot("owner", "owner");
    }
    if !desired.grants.is_empty() && !caps.grants {
        cannot("grants", "grants");
    }
    if desired.managed_location.is_some() && !caps.schema_managed_location {
        cannot("managedLocation", "managed location");
    }
    if caps.schema_properties && !caps.unset_schema_properties {
        for (k, v) in &desired.properties {
            if v.is_none() && live.is_some_and(|l| l.properties.contains_key(k)) {
                out.push(RuleFailure {
                    rule: Rule::NotSupportedByBackend,
                    subject: format!("spec.properties.{k}"),
                    message: format!(
                        "the {} backend cannot remove a schema property: ALTER SCHEMA only sets DBPROPERTIES, and '{k}' is live",
                        caps.backend
                    ),
                    fix: format!(
                        "give '{k}' a value, or drop the key from spec.properties to leave the live value alone"
                    ),
                });
            }
        }
    }
    out
}

/// The steps, in order: comment, properties, grants and revokes, owner (last:
/// a new owner may take the operator's right to change the schema).
fn steps(schema: &SchemaRef, desired: &SchemaMeta, live: &ObservedSchema) -> Vec<SchemaStep> {
    let mut out: Vec<SchemaStep> = vec![];
    let mut push = |action: SchemaAction, warning: Option<String>, undo: String| {
        out.push(SchemaStep {
            number: out.len() + 1,
            class: RiskClass::Meta,
            action,
            warnings: warning.into_iter().collect(),
            notes: vec![],
            undo: Some(undo),
            statements: vec![],
        });
    };
    if let Some(c) = &desired.comment
        && live.comment.as_deref().unwrap_or("") != c
    {
        let undo = match &live.comment {
            Some(old) => format!("COMMENT ON SCHEMA {schema} IS '{old}'"),
            None => format!("COMMENT ON SCHEMA {schema} IS NULL"),
        };
        push(SchemaAction::SetComment { comment: c.clone() }, None, undo);
    }
    let set: BTreeMap<String, String> = desired
        .properties
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .filter(|(k, v)| live.properties.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !set.is_empty() {
        let was = set
            .keys()
            .map(|k| match live.properties.get(k) {
                Some(v) => format!("'{k}'='{v}'"),
                None => format!("'{k}' unset"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        push(
            SchemaAction::SetProperties { properties: set },
            None,
            format!("was: {was}"),
        );
    }
    for g in &desired.grants {
        let have: BTreeSet<&Privilege> = live.privileges_of(&g.principal).collect();
        let want: BTreeSet<&Privilege> = g.privileges.iter().collect();
        let add: Vec<Privilege> = want.difference(&have).map(|p| (*p).clone()).collect();
        let remove: Vec<Privilege> = have.difference(&want).map(|p| (*p).clone()).collect();
        let principal = &g.principal;
        if !add.is_empty() {
            let undo = format!(
                "REVOKE {} ON SCHEMA {schema} FROM {principal}",
                privilege::list(&add)
            );
            push(
                SchemaAction::Grant {
                    principal: principal.clone(),
                    privileges: add,
                },
                None,
                undo,
            );
        }
        if !remove.is_empty() {
            let warning = format!(
                "{principal} loses {} on {schema}, and with it on every object of the schema that inherits it",
                privilege::list(&remove)
            );
            let undo = format!(
                "GRANT {} ON SCHEMA {schema} TO {principal}",
                privilege::list(&remove)
            );
            push(
                SchemaAction::Revoke {
                    principal: principal.clone(),
                    privileges: remove,
                },
                Some(warning),
                undo,
            );
        }
    }
    if let Some(o) = &desired.owner
        && live.owner.as_deref() != Some(o.as_str())
    {
        push(
            SchemaAction::SetOwner { owner: o.clone() },
            Some("the operator may lose the right to change the schema".into()),
            format!(
                "ALTER SCHEMA {schema} OWNER TO {}",
                live.owner.as_deref().unwrap_or("(the owner was not known)")
            ),
        );
    }
    out
}

/// Whether a schema step's effect is already true (the executor skips those).
pub fn holds(action: &SchemaAction, live: Option<&ObservedSchema>) -> bool {
    let Some(live) = live else {
        return false;
    };
    match action {
        // it exists: whatever the CREATE would have carried is the later steps'
        // (or, for a schema created by someone else in between, left as it is)
        SchemaAction::Create { .. } => true,
        SchemaAction::SetComment { comment } => live.comment.as_deref().unwrap_or("") == comment,
        SchemaAction::SetProperties { properties } => properties
            .iter()
            .all(|(k, v)| live.properties.get(k) == Some(v)),
        SchemaAction::Grant {
            principal,
            privileges,
        } => {
            let have: BTreeSet<&Privilege> = live.privileges_of(principal).collect();
            privileges.iter().all(|p| have.contains(p))
        }
        SchemaAction::Revoke {
            principal,
            privileges,
        } => {
            let have: BTreeSet<&Privilege> = live.privileges_of(principal).collect();
            privileges.iter().all(|p| !have.contains(p))
        }
        SchemaAction::SetOwner { owner } => live.owner.as_deref() == Some(owner.as_str()),
    }
}
