//! Whole plans (orphans, summary) and foreign keys across tables.

use super::*;

/// orders (declared, unchanged), retired (marked, no spec), manual (no marker),
/// and a marked table in an undeclared schema.
fn orphan_world() -> (Vec<DesiredTable>, Vec<ObservedTable>) {
    let (d, o) = orders();
    let retired = live(
        "retired",
        vec![
            ocol("a", "int"),
            ocol("b", "int"),
            ocol("c", "int"),
            ocol("d", "int"),
        ],
    );
    let mut manual = live("manual", vec![ocol("a", "int")]);
    manual.properties.clear();
    let mut elsewhere = live("elsewhere", vec![ocol("a", "int")]);
    elsewhere.table = TableRef::new("main", "finance", "elsewhere");
    (vec![d], vec![o, retired, manual, elsewhere])
}

#[test]
fn orphans_in_an_additive_schema_are_kept_and_listed() {
    let (d, o) = orphan_world();
    let plan = plan::plan(&d, &o, &[scope("sales", SchemaMode::Additive)], &dbx());
    let names: Vec<(String, TableAction)> = plan
        .tables
        .iter()
        .map(|t| (t.table.to_string(), t.action))
        .collect();
    assert_eq!(
        names,
        vec![
            ("main.sales.orders".to_string(), TableAction::Unchanged),
            ("main.sales.retired".to_string(), TableAction::Keep)
        ]
    );
    let retired = &plan.tables[1];
    assert!(retired.steps().is_empty() && retired.changes.is_empty() && retired.is_accepted());
    assert_eq!(retired.resource.as_deref(), Some("sales/retired"));
    assert!(
        retired.notes.iter().any(|n| n.contains("additive")),
        "{:?}",
        retired.notes
    );
    assert_eq!(
        plan.unmanaged,
        vec![TableRef::new("main", "sales", "manual")]
    );
    assert_eq!(plan.summary, plan::Summary::default());
    assert!(!plan.has_changes());
    assert_eq!(gate(&plan, Policy::Auto, None), Decision::NothingToDo);
}

#[test]
fn orphans_in_a_strict_schema_are_dropped_destructively() {
    let (d, o) = orphan_world();
    for caps in [dbx(), lake()] {
        let plan = plan::plan(&d, &o, &[scope("sales", SchemaMode::Strict)], &caps);
        let retired = plan
            .tables
            .iter()
            .find(|t| t.table == tref("retired"))
            .unwrap();
        assert_eq!(retired.action, TableAction::Destroy);
        assert_eq!(
            retired.changes,
            vec![Change::DropTable {
                reason: DropReason::Orphan,
                columns: 4
            }]
        );
        assert_eq!(steps(retired), vec!["1. DROP TABLE [destructive]"]);
        let s = &retired.steps()[0];
        // the same undo on every backend, rendered by each when it compiles the plan
        assert_eq!(undo_of(retired, s), Some(Undo::Undrop), "{}", caps.backend);
        assert_eq!(s.est_bytes, Some(SIZE));
        assert_eq!(
            s.warnings,
            vec!["drops the table and its 4 columns".to_string()]
        );
        // strict never reaches a table the operator did not create, nor another schema
        assert_eq!(
            plan.unmanaged,
            vec![TableRef::new("main", "sales", "manual")]
        );
        assert!(!plan.tables.iter().any(|t| t.table.schema == "finance"));
        assert_eq!(
            (
                plan.summary.destroy,
                plan.summary.steps,
                plan.summary.warnings
            ),
            (1, 1, 1)
        );
        assert_eq!(plan.risk(), Some(RiskClass::Destructive));
    }
}

#[test]
fn a_deleted_resource_drops_with_its_own_reason() {
    let (_, o) = orders();
    let p = plan_delete(&o, &dbx());
    assert_eq!(p.action, TableAction::Destroy);
    assert_eq!(
        p.notes,
        vec!["its resource was deleted with deletionPolicy Delete".to_string()]
    );
    assert!(p.changes[0].describe().contains("deletionPolicy Delete"));
    assert_eq!(undo_of(&p, &p.steps()[0]), Some(Undo::Undrop));
}

#[test]
fn summary_counts_every_kind_of_table() {
    let (d_orders, o_orders) = orders();
    let mut d_new = desired("customers", vec![col("id", "bigint")]);
    d_new.comment = Some("new".into());
    let mut d_upd = desired("items", vec![col("id", "int")]);
    d_upd.columns[0].data_type = DataType::Long;
    let o_upd = live("items", vec![ocol("id", "int")]);
    let mut d_bad = desired("events", vec![col("id", "int")]);
    d_bad.columns.push(not_null(col("kind", "string")));
    let o_bad = live("events", vec![ocol("id", "int")]);
    let o_orphan = live("retired", vec![ocol("a", "int")]);
    let plan = plan::plan(
        &[d_orders, d_new, d_upd, d_bad],
        &[o_orders, o_upd, o_bad, o_orphan],
        &[scope("sales", SchemaMode::Strict)],
        &lake(),
    );
    let s = plan.summary;
    assert_eq!(
        (s.add, s.change, s.destroy, s.rejected),
        (1, 1, 1, 1),
        "{s:?}"
    );
    // create 1 + write-once rewrite 1 (int → bigint is lossless) + drop table 1
    assert_eq!((s.steps, s.rewrites, s.warnings), (3, 1, 1), "{s:?}");
    assert_eq!(s.short(), "+1 ~1 -1");
    assert_eq!(
        gate(&plan, Policy::Auto, Some(plan.id.as_str())),
        Decision::Apply,
        "a rejected table is left alone; the others apply"
    );
    assert!(
        matches!(
            gate(&plan, Policy::Auto, None),
            Decision::NeedsApproval { .. }
        ),
        "the orphan's drop still needs its approval"
    );
}

// ---------------------------------------------------------------------------
// Foreign keys: parents first, and a child blocked by its parent

#[test]
fn resolve_order_puts_parents_first_ties_by_name() {
    let mut child = desired("a_child", vec![col("parent_id", "bigint")]);
    child.foreign_keys.push(fk_to("z_parent"));
    let mut grandchild = desired("0_grandchild", vec![col("parent_id", "bigint")]);
    grandchild.foreign_keys.push(fk_to("a_child"));
    let parent = desired("z_parent", vec![col("id", "bigint")]);
    let mut selfref = desired(
        "m_tree",
        vec![col("parent_id", "bigint"), col("id", "bigint")],
    );
    selfref.foreign_keys.push(fk_to("m_tree"));
    let mut external = desired("b_ext", vec![col("parent_id", "bigint")]);
    external.foreign_keys.push(fk_to("not_declared"));
    let all = vec![grandchild, child, selfref, parent, external];
    let order: Vec<String> = plan::resolve_order(&all)
        .iter()
        .map(|d| d.table.table.clone())
        .collect();
    assert_eq!(
        order,
        vec!["b_ext", "m_tree", "z_parent", "a_child", "0_grandchild"]
    );

    // the whole plan follows the same order
    let plan = plan::plan(&all, &[], &[], &dbx());
    let names: Vec<String> = plan.tables.iter().map(|t| t.table.table.clone()).collect();
    assert_eq!(names, order);
}

#[test]
fn a_cycle_falls_back_to_name_order() {
    let mut x = desired("x", vec![col("parent_id", "bigint")]);
    x.foreign_keys.push(fk_to("y"));
    let mut y = desired("y", vec![col("parent_id", "bigint")]);
    y.foreign_keys.push(fk_to("x"));
    let first = desired("a", vec![col("id", "bigint")]);
    let all = [y, x, first];
    let order: Vec<&str> = plan::resolve_order(&all)
        .iter()
        .map(|d| d.table.table.as_str())
        .collect();
    assert_eq!(order, vec!["a", "x", "y"]);
}

#[test]
fn a_child_is_blocked_when_its_parent_is_rejected() {
    let mut parent = desired("z_parent", vec![col("id", "bigint")]);
    parent.columns.push(not_null(col("kind", "string")));
    let parent_live = live("z_parent", vec![ocol("id", "bigint")]);
    let mut child = desired("a_child", vec![col("parent_id", "bigint")]);
    child.foreign_keys.push(fk_to("z_parent"));
    let mut grandchild = desired("b_grandchild", vec![col("parent_id", "bigint")]);
    grandchild.foreign_keys.push(fk_to("a_child"));
    let unrelated = desired("c_other", vec![col("id", "bigint")]);
    let plan = plan::plan(
        &[child, grandchild, parent, unrelated],
        &[parent_live],
        &[],
        &dbx(),
    );
    let outcomes: Vec<(String, String)> = plan
        .tables
        .iter()
        .map(|t| {
            let o = match &t.outcome {
                Outcome::Accepted { .. } => "accepted".to_string(),
                Outcome::Deferred { .. } => "deferred".to_string(),
                Outcome::Rejected { failures } => format!("rejected {}", failures[0].rule),
                Outcome::Blocked { by, .. } => format!(
                    "blocked by {}",
                    by.iter()
                        .map(|b| b.table.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            };
            (t.table.table.clone(), o)
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("c_other", "accepted"),
        ("z_parent", "rejected NonNullableColumnAdd"),
        ("a_child", "blocked by z_parent"),
        ("b_grandchild", "blocked by a_child"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(outcomes, expected);
    assert!(
        plan.tables[2].steps().is_empty(),
        "a blocked table has no steps"
    );
    let Outcome::Blocked { would_run, .. } = &plan.tables[2].outcome else {
        panic!("blocked")
    };
    assert!(
        would_run.iter().any(|s| matches!(
            s.action,
            delta_operator_core::plan::Action::CreateTable { .. }
        )),
        "the dry run keeps the steps a blocked table would run: {would_run:?}"
    );
    assert_eq!(plan.summary.rejected, 3);
    assert_eq!(
        gate(&plan, Policy::Auto, None),
        Decision::Apply,
        "the unrelated table goes on"
    );
    let alone = plan::plan(
        &[plan.tables[1].desired.as_deref().unwrap().clone()],
        &[live("z_parent", vec![ocol("id", "bigint")])],
        &[],
        &dbx(),
    );
    assert_eq!(
        gate(&alone, Policy::Auto, None),
        Decision::Rejected,
        "nothing else to run: the refusal is the decision"
    );
}

#[test]
fn a_table_with_two_refused_parents_names_both_even_one_blocked_later_in_the_pass() {
    // a_top is refused; m_mid is blocked by it in the same pass that first
    // finds b_child, which references both
    let mut top = desired("a_top", vec![col("id", "bigint")]);
    top.columns.push(not_null(col("kind", "string")));
    let top_live = live("a_top", vec![ocol("id", "bigint")]);
    let mut mid = desired(
        "m_mid",
        vec![col("parent_id", "bigint"), col("id", "bigint")],
    );
    mid.foreign_keys.push(fk_to("a_top"));
    let mut child = desired("b_child", vec![col("parent_id", "bigint")]);
    child.foreign_keys.push(fk_to("a_top"));
    child.foreign_keys.push(fk_to("m_mid"));
    let plan = plan::plan(&[child, mid, top], &[top_live], &[], &dbx());
    let child = plan
        .tables
        .iter()
        .find(|t| t.table.table == "b_child")
        .unwrap();
    let Outcome::Blocked { by, .. } = &child.outcome else {
        panic!("{:?}", child.outcome)
    };
    let names: Vec<&str> = by.iter().map(|b| b.table.as_str()).collect();
    assert_eq!(names, vec!["a_top", "m_mid"]);
}
