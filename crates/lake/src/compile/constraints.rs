//! CHECK constraints, one or several at a time.

use delta_operator_core::model::Check;
use delta_operator_core::plan::compile::{CheckWhen, Compiled, StepCheck};
use delta_operator_core::plan::statement::{CommitOperation as Op, LogAction as L};

use super::{commit, quoted};

pub(super) fn add_check(at: &str, check: &Check, out: &mut Compiled) {
    // delta-rs writes the protocol with every constraint (writer version 3 at least)
    out.statements.push(commit(
        Op::AddConstraint,
        &[L::MetaData, L::Protocol],
        at,
        format!(
            "set 'delta.constraints.{}' = {}",
            check.name,
            quoted(&check.expression)
        ),
    ));
    out.checks.push(StepCheck {
        when: CheckWhen::Before,
        query: format!("SELECT count(*) FROM {at} WHERE NOT coalesce(({}), false)", check.expression),
        refuses: "any row the expression rejects: delta-rs's add constraint scans every row (DataFusion) before it commits, and commits nothing if one fails".into(),
    });
}

pub(super) fn drop_check(at: &str, name: &str, out: &mut Compiled) {
    out.statements.push(commit(
        Op::DropConstraint,
        &[L::MetaData],
        at,
        format!("remove 'delta.constraints.{name}'"),
    ));
}

pub(super) fn add_checks(at: &str, checks: &[Check], out: &mut Compiled) {
    // one commit, one scan: delta-rs's add constraint takes them all at once
    out.statements.push(commit(
        Op::AddConstraint,
        &[L::MetaData, L::Protocol],
        at,
        format!(
            "set {}",
            checks
                .iter()
                .map(|c| format!("'delta.constraints.{}' = {}", c.name, quoted(&c.expression)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ));
    out.checks.push(StepCheck {
        when: CheckWhen::Before,
        query: format!(
            "SELECT count(*) FROM {at} WHERE NOT coalesce(({}), false)",
            checks
                .iter()
                .map(|c| format!("({})", c.expression))
                .collect::<Vec<_>>()
                .join(" AND ")
        ),
        refuses: "any row one of the expressions rejects: delta-rs's add constraint scans every row once (DataFusion) against all of them before it commits, and commits nothing if one fails".into(),
    });
}

pub(super) fn drop_checks(at: &str, names: &[String], out: &mut Compiled) {
    out.statements.push(commit(
        Op::DropConstraint,
        &[L::MetaData],
        at,
        format!(
            "remove {}",
            names
                .iter()
                .map(|n| format!("'delta.constraints.{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ));
}
