//! Foreign keys between resources: a DeltaTable goes ahead only once every
//! DeltaTable it references exists and is usable; until then it waits
//! (Reconciling, WaitingForParent), and a parent that failed blocks it
//! (Stalled, ParentFailed, naming the parent and, through the parent's own
//! message, the parents' parents). Decided from the cached objects, no I/O.

use std::sync::Arc;

use delta_operator_api::reason::Reason;
use delta_operator_api::spec::DeltaTable;
use delta_operator_api::spec::crd::Policy;
use delta_operator_api::spec::lower::qualified_reference;
use delta_operator_core::model::TableRef;
use kube::ResourceExt;

use super::conditions::{READY, STALLED};

/// What the parents of a table allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parents {
    /// No parents, or all of them usable.
    Usable,
    /// Some parent is not declared or not Ready yet (the message names each).
    Waiting(String),
    /// Some parent failed (the message names each failed one).
    Failed(String),
}

impl Parents {
    pub fn reason(&self) -> Option<(Reason, String)> {
        match self {
            Parents::Usable => None,
            Parents::Waiting(m) => Some((Reason::WaitingForParent, m.clone())),
            Parents::Failed(m) => Some((Reason::ParentFailed, m.clone())),
        }
    }
}

/// The table name a DeltaTable declares (its spec name, else its resource name), lowercased.
fn table_name(t: &DeltaTable) -> String {
    t.spec
        .name
        .clone()
        .unwrap_or_else(|| t.name_any())
        .to_lowercase()
}

/// The table names `t` references by foreign key (itself left out), each with
/// the spec path that names it.
fn references(t: &DeltaTable) -> Vec<(String, String)> {
    let anywhere = TableRef::new("", "", "");
    let me = table_name(t);
    t.spec
        .constraints
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.foreign_key.as_ref().map(|fk| (i, fk)))
        .filter_map(|(i, fk)| {
            let r = qualified_reference(&anywhere, &fk.references)?;
            let name = r.table.to_lowercase();
            (name != me).then(|| (name, format!("spec.constraints[{i}].foreignKey")))
        })
        .collect()
}

/// Why a status holds a resource where it is: the Ready condition's reason and message.
fn reason_of(t: &DeltaTable) -> Option<(String, String)> {
    let status = t.status.as_ref()?;
    status
        .conditions
        .iter()
        .find(|c| c.type_ == READY)
        .map(|c| (c.reason.clone(), c.message.clone()))
}

fn is_true(t: &DeltaTable, type_: &str) -> bool {
    t.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == "True")
    })
}

/// A parent is usable once Ready, or when its table exists and only a new
/// change of it waits for an approval (the child's key needs the table, not the change).
/// Drift under `driftPolicy: Fail` (DriftDetected) is only the parent's health: it is
/// as usable as under `Report` (policy Observe is Ready there; otherwise its table exists).
fn usable(parent: &DeltaTable) -> bool {
    if is_true(parent, READY) {
        return true;
    }
    let reason = reason_of(parent).map(|(r, _)| r);
    let is = |r: Reason| reason.as_deref() == Some(r.to_string().as_str());
    let applied = parent
        .status
        .as_ref()
        .is_some_and(|s| s.last_applied.is_some());
    (is(Reason::ApprovalRequired) && applied)
        || (is(Reason::DriftDetected) && (applied || parent.spec.policy == Policy::Observe))
}

/// What `me`'s foreign-key parents allow, from the DeltaTables of its namespace.
pub fn check(me: &DeltaTable, namespace_tables: &[Arc<DeltaTable>]) -> Parents {
    let mut waiting = Vec::new();
    let mut failed = Vec::new();
    for (name, path) in references(me) {
        let candidates: Vec<&Arc<DeltaTable>> = namespace_tables
            .iter()
            .filter(|t| t.name_any() != me.name_any() && table_name(t) == name)
            .collect();
        if candidates.is_empty() {
            waiting.push(format!(
                "no DeltaTable declares table '{name}' ({path}) yet"
            ));
            continue;
        }
        if candidates.iter().any(|p| usable(p)) {
            continue;
        }
        for p in candidates {
            let (reason, message) =
                reason_of(p).unwrap_or_else(|| ("not reconciled yet".into(), String::new()));
            let what = if message.is_empty() {
                reason
            } else {
                format!("{reason}: {}", clip(&message, 300))
            };
            if is_true(p, STALLED) {
                failed.push(format!(
                    "DeltaTable {} ({path}) failed ({what})",
                    p.name_any()
                ));
            } else {
                waiting.push(format!(
                    "DeltaTable {} ({path}) is not Ready ({what})",
                    p.name_any()
                ));
            }
        }
    }
    if !failed.is_empty() {
        Parents::Failed(format!(
            "a table it references by foreign key failed; fix it and this one follows: {}",
            failed.join("; ")
        ))
    } else if !waiting.is_empty() {
        Parents::Waiting(format!(
            "waiting for the tables it references by foreign key: {}",
            waiting.join("; ")
        ))
    } else {
        Parents::Usable
    }
}

/// The DeltaTables of `namespace_tables` that reference `parent` and wait on it
/// (WaitingForParent, ParentFailed): reconciled again when the parent's state changes.
pub fn waiting_children<'a>(
    parent: &DeltaTable,
    namespace_tables: &'a [Arc<DeltaTable>],
) -> Vec<&'a Arc<DeltaTable>> {
    let name = table_name(parent);
    let waits = [
        Reason::WaitingForParent.to_string(),
        Reason::ParentFailed.to_string(),
    ];
    namespace_tables
        .iter()
        .filter(|t| t.name_any() != parent.name_any())
        .filter(|t| references(t).iter().any(|(n, _)| *n == name))
        .filter(|t| reason_of(t).is_some_and(|(r, _)| waits.contains(&r)))
        .collect()
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_api::spec::crd::{Condition, DeltaTableStatus, LastApplied};

    fn table(yaml: &str) -> DeltaTable {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn child() -> DeltaTable {
        table(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: orders, namespace: ns}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: id, type: bigint}\n    - {name: customer_id, type: bigint}\n  constraints:\n    - foreignKey: {columns: [customer_id], references: customers, referencedColumns: [id]}\n",
        )
    }

    fn parent(reason: &str, ready: bool, stalled: bool, applied: bool) -> Arc<DeltaTable> {
        let mut t = table(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: customers, namespace: ns}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: id, type: bigint}\n",
        );
        let cond = |type_: &str, on: bool| Condition {
            type_: type_.into(),
            status: if on { "True" } else { "False" }.into(),
            reason: reason.into(),
            message: format!("{reason} says why"),
            observed_generation: None,
            last_transition_time: String::new(),
        };
        t.status = Some(DeltaTableStatus {
            conditions: vec![cond(READY, ready), cond(STALLED, stalled)],
            last_applied: applied.then(LastApplied::default),
            ..Default::default()
        });
        Arc::new(t)
    }

    #[test]
    fn a_child_waits_for_a_parent_not_declared_or_not_ready_and_goes_once_it_is() {
        let me = child();
        let Parents::Waiting(m) = check(&me, &[]) else {
            panic!("no parent declared must wait");
        };
        assert!(
            m.contains("customers") && m.contains("spec.constraints[0].foreignKey"),
            "{m}"
        );
        let starting = parent("SchemaNotFound", false, false, false);
        assert!(
            matches!(check(&me, &[starting]), Parents::Waiting(m) if m.contains("SchemaNotFound"))
        );
        assert_eq!(
            check(&me, &[parent("InSync", true, false, true)]),
            Parents::Usable
        );
        // a parent whose table exists and whose new change awaits approval is usable
        assert_eq!(
            check(&me, &[parent("ApprovalRequired", false, true, true)]),
            Parents::Usable
        );
        // so is one degraded by drift under driftPolicy Fail: its table is there as under Report
        assert_eq!(
            check(&me, &[parent("DriftDetected", false, true, true)]),
            Parents::Usable
        );
    }

    #[test]
    fn a_failed_parent_blocks_its_child_naming_it_and_what_it_says() {
        let me = child();
        let Parents::Failed(m) = check(&me, &[parent("InvalidSpec", false, true, false)]) else {
            panic!("a stalled parent must fail the child");
        };
        assert!(
            m.contains("DeltaTable customers") && m.contains("InvalidSpec: InvalidSpec says why"),
            "{m}"
        );
        // a never-applied parent awaiting approval has no table yet: it failed nothing, but it is not usable
        assert!(matches!(
            check(&me, &[parent("ApprovalRequired", false, true, false)]),
            Parents::Failed(_)
        ));
    }

    #[test]
    fn only_waiting_children_are_woken() {
        let p = parent("InSync", true, false, true);
        let mut waiting = child();
        waiting.status = Some(DeltaTableStatus {
            conditions: vec![Condition {
                type_: READY.into(),
                status: "False".into(),
                reason: "WaitingForParent".into(),
                message: String::new(),
                observed_generation: None,
                last_transition_time: String::new(),
            }],
            ..Default::default()
        });
        let in_sync = {
            let mut c = child();
            c.metadata.name = Some("other".into());
            c
        };
        let all = vec![Arc::new(waiting), Arc::new(in_sync), p.clone()];
        let woken: Vec<String> = waiting_children(&p, &all)
            .iter()
            .map(|t| t.name_any())
            .collect();
        assert_eq!(woken, vec!["orders".to_string()]);
    }
}
