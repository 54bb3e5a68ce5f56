//! The put-back record of a replaced view or function: what its CREATE OR
//! REPLACE drops (tags, grants, owner) and the steps after it put back,
//! written by the replace itself, so that a run that stops between the
//! replace and the put-back (killed, its lease lost, a failed step) leaves
//! the next plan what to put back. Without it, the next plan would read a
//! view without the other tools' tags and grants and they would be lost for
//! good.
//!
//! Where it lives:
//! - a view: the property [`PUT_BACK_PROPERTY`] (compact JSON), in the
//!   replace's own TBLPROPERTIES; the last put-back step unsets it.
//! - a function has no properties and no tags, and its comment changes only
//!   with another CREATE OR REPLACE (which would drop the grants again): the
//!   record is a line of the comment the replace writes, just before the
//!   owner marker line (`[delta-operator.io/put-back={json}]`), like the
//!   marker itself. It stays there until the function's next replace writes
//!   a new one (or none). Nothing on a function tells a finished put-back
//!   from one that never ran (a grant leaves no trace on the function, and
//!   its comment cannot change without dropping the grants again), so the
//!   record is honoured only while the live function has no grant at all:
//!   what a replace leaves (it drops every grant). Once any grant is there —
//!   the put-back ran, or another tool granted since — the record is split
//!   off and ignored, so a grant another tool revokes later is never put back
//!   against it. The window left: a run killed between two put-back grants
//!   owes the grants after the first; the next plan does not see them (the
//!   grants it declares it still makes). Kubernetes status would not do
//!   instead: the CLI has none, and a status write can be lost with the
//!   process that was to make it; a schema property needs the schema's owner.
//!
//! The planner splits the record off what it read ([`take`]) and plans
//! against the live object merged with it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::property::PUT_BACK_PROPERTY;
use crate::model::{Grant, ObjectBody, ObjectKind, ObservedObject, Privilege};

/// The first characters of a function's record line in its comment.
pub const RECORD_LINE_PREFIX: &str = "[delta-operator.io/put-back=";

/// What a replace's put-back steps set (and a view's, the column comments its
/// statement sets again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// A view's: other tools' column comments the replace carries (its
    /// statements after the CREATE: a run killed between them loses them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub column_comments: BTreeMap<String, String>,
}

impl Record {
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
            && self.grants.is_empty()
            && self.owner.is_none()
            && self.column_comments.is_empty()
    }

    /// Compact JSON (what the property holds).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A function's record as its comment line.
    pub fn to_line(&self) -> String {
        format!("{RECORD_LINE_PREFIX}{}]", self.to_json())
    }
}

/// The live object with its record split off (the property removed, the
/// comment line cut), and the record, if it has one that parses. A record
/// that does not parse is left where it is (shown as a property or in the
/// comment): never guessed at.
pub fn take(o: &ObservedObject) -> (ObservedObject, Option<Record>) {
    let mut out = o.clone();
    match o.object.kind {
        ObjectKind::View => {
            let Some(r) = o
                .properties
                .get(PUT_BACK_PROPERTY)
                .and_then(|v| serde_json::from_str::<Record>(v).ok())
            else {
                return (out, None);
            };
            out.properties.remove(PUT_BACK_PROPERTY);
            (out, Some(r))
        }
        ObjectKind::Function => {
            let Some(comment) = o.comment.as_deref() else {
                return (out, None);
            };
            let (user, last) = match comment.rsplit_once('\n') {
                Some((user, last)) => (Some(user), last),
                None => (None, comment),
            };
            let Some(r) = last
                .trim()
                .strip_prefix(RECORD_LINE_PREFIX)
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|json| serde_json::from_str::<Record>(json).ok())
            else {
                return (out, None);
            };
            out.comment = user
                .map(|u| u.strip_suffix('\r').unwrap_or(u))
                .filter(|u| !u.is_empty())
                .map(str::to_string);
            // owed only while no grant is there (see the module comment)
            let owed = o.grants.iter().all(|g| g.privileges.is_empty());
            (out, owed.then_some(r))
        }
        ObjectKind::Volume => (out, None),
    }
}

/// The live object as the put-back leaves it: its tags with the recorded ones
/// it lacks, its grants with the recorded privileges, its owner (the recorded
/// one when none was read).
pub fn merged(o: &ObservedObject, r: &Record) -> ObservedObject {
    let mut out = o.clone();
    for (k, v) in &r.tags {
        out.tags.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for g in &r.grants {
        match out.grants.iter_mut().find(|l| l.principal == g.principal) {
            Some(l) => {
                let mut all: BTreeSet<Privilege> = l.privileges.iter().cloned().collect();
                all.extend(g.privileges.iter().cloned());
                l.privileges = all.into_iter().collect();
            }
            None => out.grants.push(g.clone()),
        }
    }
    if out.owner.is_none() {
        out.owner = r.owner.clone();
    }
    if let ObjectBody::View {
        column_comments, ..
    } = &mut out.body
    {
        for (k, v) in &r.column_comments {
            if !column_comments.keys().any(|c| c.eq_ignore_ascii_case(k)) {
                column_comments.insert(k.clone(), v.clone());
            }
        }
    }
    out
}
