//! One object's plan: a declared view, function or volume against its live
//! state (created, updated in place, or replaced with its grants, tags,
//! properties and owner put back), and the live objects of declared schemas
//! no resource declares (orphans: kept or dropped; unmarked ones unmanaged).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::holds::column_comment;
use super::record::{self, Record};
use super::{ObjectAction, ObjectOutcome, ObjectPlan, ObjectStep};
use crate::model::object::QueryOutputs;
use crate::model::object::with_marker;
use crate::model::privilege::{self, Privilege};
use crate::model::property::PUT_BACK_PROPERTY;
use crate::model::{DesiredObject, Grant, OWNER_PROPERTY, ObjectBody, ObjectKind, ObservedObject};
use crate::plan::capabilities::Capabilities;
use crate::plan::planner::TableAction;
use crate::plan::rules::{Rule, RuleFailure};
use crate::plan::steps::RiskClass;

/// Plans one declared object against its live state (None: absent).
pub fn plan_declared(
    desired: &Arc<DesiredObject>,
    observed: Option<&Arc<ObservedObject>>,
    caps: &Capabilities,
) -> ObjectPlan {
    let d: &DesiredObject = desired;
    // an earlier replace's put-back record, split off what was read (`record.rs`)
    let (stripped, record) = match observed {
        Some(o) => {
            let (o, r) = record::take(o);
            (Some(o), r)
        }
        None => (None, None),
    };
    let live: Option<&ObservedObject> = stripped.as_ref();
    let failures = check(d, live, caps);
    let (action, outcome, notes) = if !failures.is_empty() {
        let action = if live.is_some() {
            TableAction::Update
        } else {
            TableAction::Create
        };
        (action, ObjectOutcome::Rejected { failures }, vec![])
    } else {
        match live {
            None => (
                TableAction::Create,
                ObjectOutcome::Accepted {
                    steps: numbered(created(d)),
                },
                vec![],
            ),
            Some(o) => {
                let (steps, notes) = updated(d, o, record.as_ref());
                let action = if steps.is_empty() {
                    TableAction::Unchanged
                } else {
                    TableAction::Update
                };
                (
                    action,
                    ObjectOutcome::Accepted {
                        steps: numbered(steps),
                    },
                    notes,
                )
            }
        }
    };
    ObjectPlan {
        object: d.object.clone(),
        action,
        outcome,
        notes,
        desired: Some(Arc::clone(desired)),
        observed: observed.cloned(),
    }
}

/// A live object of a declared schema that no resource declares, carrying
/// an owner marker: kept (additive) or dropped (strict, destructive; its undo,
/// the old DDL, is the compiler's to render).
pub fn plan_orphan(observed: &Arc<ObservedObject>, strict: bool) -> ObjectPlan {
    let o: &ObservedObject = observed;
    let word = o.object.kind.word();
    let (action, outcome, notes) = if strict {
        let step = ObjectStep {
            number: 1,
            class: RiskClass::Destructive,
            action: ObjectAction::Drop,
            warnings: vec![format!(
                "drops the {word} {}: its spec is gone and the schema is strict",
                o.object
            )],
            notes: vec![],
            undo: None,
            statements: vec![],
        };
        (
            TableAction::Destroy,
            ObjectOutcome::Accepted { steps: vec![step] },
            vec![],
        )
    } else {
        (
            TableAction::Keep,
            ObjectOutcome::Accepted { steps: vec![] },
            vec![format!(
                "its spec is gone; the schema is additive, so the {word} is kept"
            )],
        )
    };
    ObjectPlan {
        object: o.object.clone(),
        action,
        outcome,
        notes,
        desired: None,
        observed: Some(Arc::clone(observed)),
    }
}

/// What refuses the object: lowering's findings, the backend, another
/// resource's marker, a live object of another shape.
fn check(
    d: &DesiredObject,
    live: Option<&ObservedObject>,
    caps: &Capabilities,
) -> Vec<RuleFailure> {
    let word = d.object.kind.word();
    if !caps.catalog_objects {
        return vec![RuleFailure {
            rule: Rule::NotSupportedByBackend,
            subject: d.object.to_string(),
            message: format!(
                "views, functions and volumes need a Unity Catalog metastore; the {} target has none",
                caps.backend
            ),
            fix: format!(
                "remove the {word}'s resource, or declare it for a target whose backend has a metastore (databricks)"
            ),
        }];
    }
    if !d.refusals.is_empty() {
        return d
            .refusals
            .iter()
            .map(|r| RuleFailure {
                // what lowering found the manifest set cannot hold for this object
                rule: Rule::NotSupportedByBackend,
                subject: r.path.clone(),
                message: r.message.clone(),
                fix: r.fix.clone(),
            })
            .collect();
    }
    let Some(o) = live else {
        return vec![];
    };
    if let Some(marker) = o.owner_marker()
        && d.owner_marker != *marker
    {
        return vec![RuleFailure {
            rule: Rule::OwnedByAnotherResource,
            subject: d.object.to_string(),
            message: format!(
                "the live {word} {} carries the owner marker '{marker}', not '{}'",
                d.object, d.owner_marker
            ),
            fix: format!(
                "declare it in one resource only: remove this one, or delete '{marker}' (its marker goes with it)"
            ),
        }];
    }
    if o.body.kind() != d.body.kind() {
        return vec![RuleFailure {
            rule: Rule::NotSupportedByBackend,
            subject: d.object.to_string(),
            message: format!(
                "the live object {} is a {}, not a {word}",
                d.object,
                o.body.kind().word()
            ),
            fix: "choose another name".into(),
        }];
    }
    vec![]
}

fn numbered(mut steps: Vec<ObjectStep>) -> Vec<ObjectStep> {
    for (i, s) in steps.iter_mut().enumerate() {
        s.number = i + 1;
    }
    steps
}

fn step(action: ObjectAction, undo: Option<String>) -> ObjectStep {
    ObjectStep {
        number: 0,
        class: RiskClass::Meta,
        action,
        warnings: vec![],
        notes: vec![],
        undo,
        statements: vec![],
    }
}

/// The declared values of a map whose `None` removes a key.
fn set_values(m: &BTreeMap<String, Option<String>>) -> BTreeMap<String, String> {
    m.iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
        .collect()
}

/// A view's properties as its spec makes them: the declared ones and the marker.
fn view_properties(d: &DesiredObject) -> BTreeMap<String, String> {
    let mut p = set_values(&d.properties);
    p.insert(OWNER_PROPERTY.into(), d.owner_marker.to_string());
    p
}

/// The steps of an absent object.
fn created(d: &DesiredObject) -> Vec<ObjectStep> {
    let name = &d.object;
    let kind = name.kind;
    let user = d.comment.as_deref().filter(|c| !c.is_empty());
    let drop = Some(format!("DROP {kind} {name}"));
    let mut out = vec![match &d.body {
        ObjectBody::View {
            query,
            column_comments,
            ..
        } => step(
            ObjectAction::CreateView {
                query: query.clone(),
                comment: user.map(str::to_string),
                column_comments: column_comments.clone(),
                properties: view_properties(d),
            },
            drop,
        ),
        ObjectBody::Function {
            parameters,
            returns,
            body,
            deterministic,
            ..
        } => step(
            ObjectAction::CreateFunction {
                parameters: parameters.clone(),
                returns: returns.clone(),
                body: body.clone(),
                deterministic: *deterministic,
                comment: with_marker(user, &d.owner_marker),
            },
            drop,
        ),
        ObjectBody::Volume => step(
            ObjectAction::CreateVolume {
                comment: with_marker(user, &d.owner_marker),
            },
            drop,
        ),
    }];
    let tags = set_values(&d.tags);
    if !tags.is_empty() && kind != ObjectKind::Function {
        out.push(step(ObjectAction::SetTags { tags }, None));
    }
    out.extend(grant_steps(d, &[], &d.grants));
    if let Some(owner) = &d.owner {
        out.push(owner_step(d, owner, None));
    }
    out
}

/// The steps of a live object: in place, or a replace and what it loses put
/// back. `o` is the live object without its put-back record; `record`, an
/// earlier replace's, is what a run stopped before its put-back left owed.
fn updated(
    d: &DesiredObject,
    live: &ObservedObject,
    record: Option<&Record>,
) -> (Vec<ObjectStep>, Vec<String>) {
    // a replace plans against the object as the owed put-back leaves it
    let merged_live = record.map(|r| record::merged(live, r));
    let merged = merged_live.as_ref().unwrap_or(live);
    let o = live;
    let name = &d.object;
    let mut out = vec![];
    let mut notes = vec![];
    // the user part of the comment the object keeps: the declared one, else the live one
    let user = d.comment.clone().or_else(|| o.comment.clone());
    let comment_differs = d
        .comment
        .as_deref()
        .is_some_and(|c| c != o.comment.as_deref().unwrap_or(""));
    let marked = o.owner_marker().is_some();
    match (&d.body, &o.body) {
        (
            ObjectBody::View {
                query,
                normalized,
                column_comments,
            },
            ObjectBody::View {
                normalized: live_normalized,
                column_comments: live_comments,
                query: live_query,
            },
        ) => {
            // only the declared column comments are the spec's: another tool's
            // comment on a column the spec does not name is left alone
            if normalized != live_normalized {
                // CREATE OR REPLACE drops tags, grants and properties: the
                // properties go in the statement, the rest is put back after it
                // what the catalog writes itself (`view.*`, the DDL time) is its own to write again
                let mut properties: BTreeMap<String, String> = merged
                    .properties
                    .iter()
                    .filter(|(k, _)| !is_catalog_view_property(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for (k, v) in &d.properties {
                    match v {
                        Some(v) => properties.insert(k.clone(), v.clone()),
                        None => properties.remove(k),
                    };
                }
                properties.insert(OWNER_PROPERTY.into(), d.owner_marker.to_string());
                let back = put_back(d, merged, true);
                // an owed record's column comments count as live ones
                let merged_comments = match &merged.body {
                    ObjectBody::View {
                        column_comments, ..
                    } => column_comments,
                    _ => live_comments,
                };
                let carried = carry_column_comments(column_comments, merged_comments, &d.outputs);
                let mut rec = record_of(&back);
                rec.column_comments = carried
                    .comments
                    .iter()
                    .filter(|(k, _)| column_comment(column_comments, k).is_none())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !rec.is_empty() {
                    properties.insert(PUT_BACK_PROPERTY.into(), rec.to_json());
                }
                let mut s = step(
                    ObjectAction::ReplaceView {
                        query: query.clone(),
                        comment: user.clone().filter(|c| !c.is_empty()),
                        column_comments: carried.comments,
                        properties,
                    },
                    Some(format!("CREATE OR REPLACE VIEW {name} AS {live_query}")),
                );
                s.notes
                    .push("the query changed: the view is replaced".into());
                s.notes.extend(carried.notes);
                s.warnings.extend(carried.warnings);
                if !rec.is_empty() {
                    s.notes.push(format!(
                        "its property {PUT_BACK_PROPERTY} records what the steps after it put back, so a run stopped before them leaves the next plan to do it"
                    ));
                }
                out.push(s);
                out.extend(back);
                if !rec.is_empty() {
                    out.push(unset_record());
                }
                notes.push(
                    "CREATE OR REPLACE VIEW drops the view's tags, grants and properties: the properties are in its statement, the tags, grants and owner are put back by the steps after it"
                        .into(),
                );
                return (out, notes);
            }
            if comment_differs {
                out.push(comment_step(d, o, d.comment.clone().unwrap_or_default()));
            }
            for (column, comment) in column_comments {
                let live = column_comment(live_comments, column);
                if live == Some(comment.as_str()) {
                    continue;
                }
                let undo = match live {
                    Some(old) => format!("COMMENT ON COLUMN {name}.{column} IS '{old}'"),
                    None => format!("COMMENT ON COLUMN {name}.{column} IS NULL"),
                };
                out.push(step(
                    ObjectAction::SetColumnComment {
                        column: column.clone(),
                        comment: comment.clone(),
                    },
                    Some(undo),
                ));
            }
            let mut set: BTreeMap<String, String> = set_values(&d.properties)
                .into_iter()
                .filter(|(k, v)| o.properties.get(k) != Some(v))
                .collect();
            if !marked {
                set.insert(OWNER_PROPERTY.into(), d.owner_marker.to_string());
            }
            if !set.is_empty() {
                let was = set
                    .keys()
                    .map(|k| match o.properties.get(k) {
                        Some(v) => format!("'{k}'='{v}'"),
                        None => format!("'{k}' unset"),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push(step(
                    ObjectAction::SetProperties { properties: set },
                    Some(format!("was: {was}")),
                ));
            }
            let unset: Vec<String> = d
                .properties
                .iter()
                .filter(|(k, v)| v.is_none() && o.properties.contains_key(*k))
                .map(|(k, _)| k.clone())
                .collect();
            if !unset.is_empty() {
                let was = unset
                    .iter()
                    .map(|k| format!("'{k}'='{}'", o.properties[k]))
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push(step(
                    ObjectAction::UnsetProperties { keys: unset },
                    Some(format!("was: {was}")),
                ));
            }
            out.extend(tag_steps(d, o));
        }
        (
            ObjectBody::Function {
                parameters,
                returns,
                body,
                normalized,
                deterministic,
            },
            ObjectBody::Function {
                parameters: live_parameters,
                returns: live_returns,
                normalized: live_normalized,
                deterministic: live_deterministic,
                ..
            },
        ) => {
            let mut why = vec![];
            if normalized != live_normalized {
                why.push("its body");
            }
            if !same_parameters(parameters, live_parameters) {
                why.push("its parameters");
            }
            if !returns.eq_ignore_ascii_case(live_returns) {
                why.push("its return type");
            }
            if deterministic.is_some() && deterministic != live_deterministic {
                why.push("DETERMINISTIC");
            }
            if comment_differs {
                why.push("its comment");
            }
            if !marked {
                why.push("its owner marker (a comment line)");
            }
            if !why.is_empty() {
                // Databricks: "You cannot replace an existing function with a different
                // signature" (CREATE FUNCTION): the old one is dropped first, which breaks
                // its callers until the new one exists, so the pair waits for approval
                let signature = !same_parameters(parameters, live_parameters);
                if signature {
                    let mut drop = step(ObjectAction::Drop, None);
                    drop.class = RiskClass::Destructive;
                    drop.warnings.push(format!(
                        "{name} is dropped and created again with its new parameters: a view, mask or row filter calling it fails until the next step has run"
                    ));
                    drop.notes.push(
                        "Databricks refuses CREATE OR REPLACE FUNCTION with another signature"
                            .into(),
                    );
                    out.push(drop);
                }
                let back = put_back(d, merged, false);
                let rec = record_of(&back);
                // the record rides in the comment, before the marker line (`record.rs`)
                let commented = match (user.as_deref().filter(|u| !u.is_empty()), rec.is_empty()) {
                    (u, true) => u.map(str::to_string),
                    (Some(u), false) => Some(format!("{u}\n{}", rec.to_line())),
                    (None, false) => Some(rec.to_line()),
                };
                let mut s = step(
                    ObjectAction::ReplaceFunction {
                        parameters: parameters.clone(),
                        returns: returns.clone(),
                        body: body.clone(),
                        deterministic: deterministic.or(*live_deterministic),
                        comment: with_marker(commented.as_deref(), &d.owner_marker),
                    },
                    Some(format!(
                        "CREATE OR REPLACE FUNCTION {name} as it was (its old definition)"
                    )),
                );
                s.notes.push(format!(
                    "{} changed: the function is replaced",
                    why.join(", ")
                ));
                if !rec.is_empty() {
                    s.notes.push(
                        "a line of its comment records what the steps after it put back, so a run stopped before them leaves the next plan to do it"
                            .into(),
                    );
                }
                out.push(s);
                out.extend(back);
                notes.push(
                    "CREATE OR REPLACE FUNCTION drops the function's grants: they and the owner are put back by the steps after it"
                        .into(),
                );
                return (out, notes);
            }
        }
        (ObjectBody::Volume, ObjectBody::Volume) => {
            if comment_differs || !marked {
                out.push(comment_step(
                    d,
                    o,
                    with_marker(user.as_deref(), &d.owner_marker),
                ));
            }
            out.extend(tag_steps(d, o));
        }
        _ => {} // another kind: refused by `check`
    }
    out.extend(grant_steps(d, &o.grants, &d.grants));
    if let Some(owner) = &d.owner
        && o.owner.as_deref() != Some(owner.as_str())
    {
        out.push(owner_step(d, owner, o.owner.as_deref()));
    }
    if let Some(r) = record {
        // a replace ran and its put-back did not finish: what is missing of it now
        let owed = owed(d, o, r);
        match o.object.kind {
            ObjectKind::View => {
                if !owed.is_empty() {
                    notes.push(format!(
                        "an earlier replace's put-back did not finish (its record {PUT_BACK_PROPERTY} is on the view): the steps marked so put back what it owed"
                    ));
                }
                out.extend(owed);
                out.push(unset_record());
            }
            _ => {
                if !owed.is_empty() {
                    notes.push(
                        "an earlier replace's put-back did not finish (its record is a line of the function's comment): the steps marked so put back what it owed"
                            .into(),
                    );
                }
                out.extend(owed);
            }
        }
    }
    (out, notes)
}

/// What a put-back record owes that the live object lacks: its tags, grants
/// and owner, those the spec declares left to the spec's own steps.
fn owed(d: &DesiredObject, o: &ObservedObject, r: &Record) -> Vec<ObjectStep> {
    let note = |mut s: ObjectStep| {
        s.notes
            .push("owed by an earlier replace whose put-back did not finish (its record)".into());
        s
    };
    let mut out = vec![];
    if let (
        ObjectBody::View {
            column_comments: declared_comments,
            ..
        },
        ObjectBody::View {
            column_comments: live_comments,
            ..
        },
    ) = (&d.body, &o.body)
    {
        for (column, comment) in &r.column_comments {
            if column_comment(declared_comments, column).is_none()
                && column_comment(live_comments, column) != Some(comment.as_str())
            {
                out.push(note(step(
                    ObjectAction::SetColumnComment {
                        column: column.clone(),
                        comment: comment.clone(),
                    },
                    Some(format!("COMMENT ON COLUMN {}.{column} IS NULL", d.object)),
                )));
            }
        }
    }
    let tags: BTreeMap<String, String> = r
        .tags
        .iter()
        .filter(|(k, v)| !d.tags.contains_key(*k) && o.tags.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !tags.is_empty() && d.object.kind != ObjectKind::Function {
        out.push(note(step(ObjectAction::SetTags { tags }, None)));
    }
    let declared: BTreeSet<&str> = d.grants.iter().map(|g| g.principal.as_str()).collect();
    for g in &r.grants {
        if declared.contains(g.principal.as_str()) {
            continue;
        }
        let have: BTreeSet<&Privilege> = o
            .grants
            .iter()
            .filter(|l| l.principal == g.principal)
            .flat_map(|l| l.privileges.iter())
            .collect();
        let missing: Vec<Privilege> = g
            .privileges
            .iter()
            .filter(|p| !have.contains(p))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if missing.is_empty() {
            continue;
        }
        let undo = format!(
            "REVOKE {} ON {} {} FROM {}",
            privilege::list(&missing),
            d.object.kind,
            d.object,
            g.principal
        );
        out.push(note(step(
            ObjectAction::Grant {
                principal: g.principal.clone(),
                privileges: missing,
            },
            Some(undo),
        )));
    }
    if d.owner.is_none()
        && let Some(owner) = &r.owner
        && o.owner.as_deref() != Some(owner.as_str())
    {
        out.push(note(owner_step(d, owner, o.owner.as_deref())));
    }
    out
}

/// What the put-back steps after a replace set: the replace's record.
fn record_of(steps: &[ObjectStep]) -> Record {
    let mut r = Record::default();
    for s in steps {
        match &s.action {
            ObjectAction::SetTags { tags } => r.tags.extend(tags.clone()),
            ObjectAction::Grant {
                principal,
                privileges,
            } => r.grants.push(Grant {
                principal: principal.clone(),
                privileges: privileges.clone(),
            }),
            ObjectAction::SetOwner { owner } => r.owner = Some(owner.clone()),
            _ => {}
        }
    }
    r
}

/// The last step after a view's put-back: its record goes.
fn unset_record() -> ObjectStep {
    let mut s = step(
        ObjectAction::UnsetProperties {
            keys: vec![PUT_BACK_PROPERTY.into()],
        },
        None,
    );
    s.notes.push("the put-back is done: its record goes".into());
    s
}

/// The column comments a view's replace carries: the declared ones, and the
/// live ones on columns the spec does not declare (another tool's) where the
/// new query still outputs the column. Where that cannot be told from the
/// query (`*`, an unnamed expression), the comment is lost and a warning
/// names it: never silently.
struct Carried {
    comments: BTreeMap<String, String>,
    notes: Vec<String>,
    warnings: Vec<String>,
}

fn carry_column_comments(
    declared: &BTreeMap<String, String>,
    live: &BTreeMap<String, String>,
    outputs: &QueryOutputs,
) -> Carried {
    let mut out = Carried {
        comments: declared.clone(),
        notes: vec![],
        warnings: vec![],
    };
    for (column, comment) in live {
        if column_comment(declared, column).is_some() {
            continue;
        }
        match outputs.outputs(column) {
            Some(true) => {
                out.comments.insert(column.clone(), comment.clone());
                out.notes.push(format!(
                    "the comment on column {column} (not in the spec: another tool's) is kept: the replace sets it again"
                ));
            }
            Some(false) => out.notes.push(format!(
                "column {column} is no longer in the view: its comment '{comment}' goes with it"
            )),
            None => out.warnings.push(format!(
                "the comment '{comment}' on column {column} (not in the spec: another tool's) is lost: the new query's output columns cannot all be told from its text (a * or an expression without an alias), so it is not set again; declare it in columnComments to keep it"
            )),
        }
    }
    out
}

/// After a replace: the tags (views), grants and owner the replace dropped,
/// with the spec's changes. `tags`: the object has tags (a view).
fn put_back(d: &DesiredObject, o: &ObservedObject, tags: bool) -> Vec<ObjectStep> {
    let mut out = vec![];
    let note = |s: &mut ObjectStep| {
        s.notes
            .push("put back after the replace, which dropped it".into());
    };
    if tags {
        let mut all = o.tags.clone();
        for (k, v) in &d.tags {
            match v {
                Some(v) => all.insert(k.clone(), v.clone()),
                None => all.remove(k),
            };
        }
        if !all.is_empty() {
            let mut s = step(ObjectAction::SetTags { tags: all }, None);
            note(&mut s);
            out.push(s);
        }
    }
    // every live grant, the declared principals' as declared
    let declared: BTreeSet<&str> = d.grants.iter().map(|g| g.principal.as_str()).collect();
    let mut grants: Vec<Grant> = o
        .grants
        .iter()
        .filter(|g| !declared.contains(g.principal.as_str()))
        .cloned()
        .chain(d.grants.iter().cloned())
        .collect();
    grants.sort_by(|a, b| a.principal.cmp(&b.principal));
    for g in grants {
        let privileges: Vec<Privilege> = g
            .privileges
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .cloned()
            .collect();
        if privileges.is_empty() {
            continue;
        }
        let undo = format!(
            "REVOKE {} ON {} {} FROM {}",
            privilege::list(&privileges),
            d.object.kind,
            d.object,
            g.principal
        );
        let was_live = o.grants.iter().any(|l| {
            l.principal == g.principal && privileges.iter().all(|p| l.privileges.contains(p))
        });
        let mut s = step(
            ObjectAction::Grant {
                principal: g.principal.clone(),
                privileges,
            },
            Some(undo),
        );
        if was_live {
            note(&mut s);
        } else {
            s.notes.push("granted as the spec declares".into());
        }
        out.push(s);
    }
    if let Some(owner) = d.owner.as_deref().or(o.owner.as_deref()) {
        let mut s = owner_step(d, owner, o.owner.as_deref());
        note(&mut s);
        out.push(s);
    }
    out
}

fn comment_step(d: &DesiredObject, o: &ObservedObject, comment: String) -> ObjectStep {
    let name = &d.object;
    let kind = name.kind;
    let undo = match (&o.comment, o.owner_marker(), kind) {
        (Some(old), None, _) | (Some(old), _, ObjectKind::View) => {
            format!("COMMENT ON {kind} {name} IS '{old}'")
        }
        (None, None, _) | (None, _, ObjectKind::View) => {
            format!("COMMENT ON {kind} {name} IS NULL")
        }
        (old, Some(_), _) => format!(
            "COMMENT ON {kind} {name} IS '{}' (with its owner line)",
            old.as_deref().unwrap_or("")
        ),
    };
    step(ObjectAction::SetComment { comment }, Some(undo))
}

fn tag_steps(d: &DesiredObject, o: &ObservedObject) -> Vec<ObjectStep> {
    let mut out = vec![];
    let set: BTreeMap<String, String> = set_values(&d.tags)
        .into_iter()
        .filter(|(k, v)| o.tags.get(k) != Some(v))
        .collect();
    if !set.is_empty() {
        let was = set
            .keys()
            .map(|k| match o.tags.get(k) {
                Some(v) => format!("'{k}'='{v}'"),
                None => format!("'{k}' unset"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push(step(
            ObjectAction::SetTags { tags: set },
            Some(format!("was: {was}")),
        ));
    }
    let unset: Vec<String> = d
        .tags
        .iter()
        .filter(|(k, v)| v.is_none() && o.tags.contains_key(*k))
        .map(|(k, _)| k.clone())
        .collect();
    if !unset.is_empty() {
        let was = unset
            .iter()
            .map(|k| format!("'{k}'='{}'", o.tags[k]))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(step(
            ObjectAction::UnsetTags { keys: unset },
            Some(format!("was: {was}")),
        ));
    }
    out
}

/// A named principal gets exactly its declared privileges (like a table's
/// grants); principals the spec does not name are left alone.
fn grant_steps(d: &DesiredObject, live: &[Grant], declared: &[Grant]) -> Vec<ObjectStep> {
    let name = &d.object;
    let kind = name.kind;
    let mut out = vec![];
    for g in declared {
        let have: BTreeSet<&Privilege> = live
            .iter()
            .filter(|l| l.principal == g.principal)
            .flat_map(|l| l.privileges.iter())
            .collect();
        let want: BTreeSet<&Privilege> = g.privileges.iter().collect();
        let add: Vec<Privilege> = want.difference(&have).map(|p| (*p).clone()).collect();
        let remove: Vec<Privilege> = have.difference(&want).map(|p| (*p).clone()).collect();
        let principal = &g.principal;
        if !add.is_empty() {
            let undo = format!(
                "REVOKE {} ON {kind} {name} FROM {principal}",
                privilege::list(&add)
            );
            out.push(step(
                ObjectAction::Grant {
                    principal: principal.clone(),
                    privileges: add,
                },
                Some(undo),
            ));
        }
        if !remove.is_empty() {
            let undo = format!(
                "GRANT {} ON {kind} {name} TO {principal}",
                privilege::list(&remove)
            );
            let mut s = step(
                ObjectAction::Revoke {
                    principal: principal.clone(),
                    privileges: remove.clone(),
                },
                Some(undo),
            );
            s.warnings.push(format!(
                "{principal} loses {} on {name}",
                privilege::list(&remove)
            ));
            out.push(s);
        }
    }
    out
}

fn owner_step(d: &DesiredObject, owner: &str, live: Option<&str>) -> ObjectStep {
    let name = &d.object;
    let mut s = step(
        ObjectAction::SetOwner {
            owner: owner.to_string(),
        },
        Some(format!(
            "ALTER {} {name} OWNER TO {}",
            name.kind,
            live.unwrap_or("(the owner was not known)")
        )),
    );
    if live != Some(owner) {
        s.warnings.push(format!(
            "the operator may lose the right to change the {}",
            name.kind.word()
        ));
    }
    s
}

/// Parameters compared as the catalog keeps them: names and types case-insensitively.
fn same_parameters(a: &[crate::model::FunctionParam], b: &[crate::model::FunctionParam]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name.eq_ignore_ascii_case(&y.name)
                && x.data_type.eq_ignore_ascii_case(&y.data_type)
                && x.comment.as_deref().unwrap_or("") == y.comment.as_deref().unwrap_or("")
        })
}

/// A property Spark or Unity Catalog writes on every view by itself (its
/// query's context and output columns, the DDL time): never set by a statement.
pub fn is_catalog_view_property(key: &str) -> bool {
    key.starts_with("view.") || key == "transient_lastDdlTime"
}
