//! Table properties, the owner claim and the table's comment: metadata-only commits.

use std::collections::BTreeMap;

use delta_operator_core::model::Scope;
use delta_operator_core::plan::compile::Compiled;
use delta_operator_core::plan::statement::{CommitOperation as Op, LogAction as L};
use delta_operator_core::plan::steps::claim_properties;

use super::{commit, metadata, props, quoted};

pub(super) fn claim(
    at: &str,
    marker: &str,
    constraints: Option<&str>,
    scope: Scope,
    out: &mut Compiled,
) {
    out.statements.push(metadata(
        at,
        format!(
            "set {}",
            props(&claim_properties(marker, constraints, scope))
        ),
    ));
}

pub(super) fn set(at: &str, properties: &BTreeMap<String, String>, out: &mut Compiled) {
    out.statements
        .push(metadata(at, format!("set {}", props(properties))));
}

pub(super) fn unset(at: &str, keys: &[String], out: &mut Compiled) {
    out.statements.push(metadata(
        at,
        format!(
            "remove {}",
            keys.iter()
                .map(|k| quoted(k))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ));
}

pub(super) fn table_comment(at: &str, comment: &str, out: &mut Compiled) {
    out.statements.push(commit(
        Op::UpdateTableMetadata,
        &[L::MetaData],
        at,
        format!("description = {}", quoted(comment)),
    ));
}
