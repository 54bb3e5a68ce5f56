//! (pure) Whether a view, function or table an object depends on in the
//! graph is ready: an object whose query or body names a declared table,
//! view or function that is not Ready waits (`WaitingForDependency`, naming
//! it), as a foreign-key child waits for its parent (`parents.rs`). A name
//! no resource of the namespace declares is not waited for: it may be live
//! already, or another tool's (the apply fails as Databricks would).

use delta_operator_api::reason::Reason;
use delta_operator_api::spec::crd::Condition;
use delta_operator_core::model::TableRef;

use crate::conditions::READY;

/// A declared resource a query or body may name: its kind (`DeltaTable`,
/// `DeltaView`, `DeltaFunction`), its resource name, the object it declares
/// and its conditions.
#[derive(Debug, Clone)]
pub struct Declared<'a> {
    pub kind: &'static str,
    pub name: String,
    pub object: TableRef,
    pub conditions: &'a [Condition],
    /// Whether the object it declares was ever applied (status.lastApplied):
    /// one that exists and only waits for an approval of a new change is usable.
    pub applied: bool,
}

impl Declared<'_> {
    fn ready(&self) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == READY)
    }

    /// Ready, or applied once and only waiting for an approval now.
    fn usable(&self) -> bool {
        match self.ready() {
            Some(c) if c.status == "True" => true,
            Some(c) => self.applied && c.reason == Reason::ApprovalRequired.to_string(),
            None => false,
        }
    }
}

/// Names as Unity Catalog compares them: case-insensitive.
fn same(a: &TableRef, b: &TableRef) -> bool {
    a.catalog.eq_ignore_ascii_case(&b.catalog)
        && a.schema.eq_ignore_ascii_case(&b.schema)
        && a.table.eq_ignore_ascii_case(&b.table)
}

/// The first declared dependency of `reads` (what the object's query or body
/// names, three-part resolved) that is not usable, as the reason and message
/// the object waits with; `None` when every declared one is usable. `me` is
/// left out (a name resolving to the object itself is no dependency).
pub fn waiting_for(
    me: &TableRef,
    reads: &[TableRef],
    declared: &[Declared<'_>],
) -> Option<(Reason, String)> {
    let mut waiting: Vec<String> = Vec::new();
    for r in reads.iter().filter(|r| !same(r, me)) {
        for d in declared.iter().filter(|d| same(&d.object, r)) {
            if d.usable() {
                continue;
            }
            let state = match d.ready() {
                Some(c) if c.message.is_empty() => c.reason.clone(),
                Some(c) => format!("{}: {}", c.reason, clip(&c.message, 200)),
                None => "not reconciled yet".into(),
            };
            let line = format!(
                "{} '{}' ({}) is not Ready ({state})",
                d.kind, d.name, d.object
            );
            if !waiting.contains(&line) {
                waiting.push(line);
            }
        }
    }
    if waiting.is_empty() {
        return None;
    }
    Some((
        Reason::WaitingForDependency,
        format!(
            "waiting for what it reads: {}; it is planned once that is Ready",
            waiting.join("; ")
        ),
    ))
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

    fn cond(status: &str, reason: &str, message: &str) -> Vec<Condition> {
        vec![Condition {
            type_: READY.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: Some(1),
            last_transition_time: "2026-01-01T00:00:00Z".into(),
        }]
    }

    fn t(name: &str) -> TableRef {
        TableRef::new("main", "sales", name)
    }

    #[test]
    fn a_declared_table_not_ready_is_waited_for_by_name() {
        let c = cond("False", "Applying", "step 1/2");
        let declared = [Declared {
            kind: "DeltaTable",
            name: "orders".into(),
            object: t("orders"),
            conditions: &c,
            applied: false,
        }];
        let (reason, message) = waiting_for(&t("v"), &[t("ORDERS")], &declared).unwrap();
        assert_eq!(reason, Reason::WaitingForDependency);
        assert!(
            message.contains(
                "DeltaTable 'orders' (main.sales.orders) is not Ready (Applying: step 1/2)"
            ),
            "{message}"
        );
    }

    #[test]
    fn ready_undeclared_and_approval_waiting_applied_ones_are_not_waited_for() {
        let ready = cond("True", "InSync", "");
        let approval = cond("False", "ApprovalRequired", "needs approval");
        let declared = [
            Declared {
                kind: "DeltaFunction",
                name: "mask".into(),
                object: t("mask"),
                conditions: &ready,
                applied: true,
            },
            Declared {
                kind: "DeltaView",
                name: "base".into(),
                object: t("base"),
                conditions: &approval,
                applied: true,
            },
        ];
        let reads = [t("mask"), t("base"), t("not_declared")];
        assert_eq!(waiting_for(&t("v"), &reads, &declared), None);
        // never applied: an approval awaited for its creation is still a wait
        let fresh = [Declared {
            applied: false,
            ..declared[1].clone()
        }];
        assert!(waiting_for(&t("v"), &reads, &fresh).is_some());
    }

    #[test]
    fn an_unreconciled_dependency_waits_and_the_object_itself_does_not() {
        let none: Vec<Condition> = vec![];
        let declared = [Declared {
            kind: "DeltaView",
            name: "v".into(),
            object: t("v"),
            conditions: &none,
            applied: false,
        }];
        assert_eq!(waiting_for(&t("v"), &[t("v")], &declared), None);
        let (_, m) = waiting_for(&t("w"), &[t("v")], &declared).unwrap();
        assert!(m.contains("not reconciled yet"), "{m}");
    }
}
