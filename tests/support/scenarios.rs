//! Promises every backend keeps, written once over `Target` and run by each backend's suite
//! (`lake_backend`, `databricks_warehouse`, `spark_connect`): the same steps and assertions on
//! delta-rs, the warehouse emulator's Spark and a Spark Connect server. Assertions are on what
//! a reader of the table sees (rows, columns), never on a backend's statements, which differ.

use delta_operator::apply::ApplyError;
use delta_operator::plan::RiskClass;

use super::table;
use super::target::Target;

const ID: &str = "    - {name: id, type: bigint}\n";
const NOTE: &str = "    - {name: note, type: string}\n";

fn orders(columns: &[&str]) -> String {
    table("orders", &format!("  columns:\n{}", columns.concat()))
}

/// An added column loses no row: not those written before the plan, nor those a job appends
/// between the plan and the apply. It runs without approval (metadata only), the old rows read
/// NULL in it, and the plan after the apply is empty.
pub async fn an_added_column_keeps_every_row_and_a_writers_append<T: Target>(t: &T) {
    let v1 = t.manifests(&orders(&[ID]));
    t.apply_ok(&v1, None).await;
    t.append_ids("orders", &[1, 2, 3]).await;

    let v2 = t.manifests(&orders(&[ID, NOTE]));
    let plan = t.plan(&v2).await;
    let steps = plan.tables[0].steps();
    assert!(!steps.is_empty(), "adding a column plans a step");
    assert!(
        steps.iter().all(|s| s.class < RiskClass::Rewrite),
        "an added column neither rewrites nor loses data: {:?}",
        steps
            .iter()
            .map(|s| (s.action.title(), s.class))
            .collect::<Vec<_>>()
    );
    // a job appends between the plan and the apply
    t.append_ids("orders", &[4, 5]).await;
    t.apply_ok(&v2, None).await;

    assert_eq!(t.ids("orders").await, vec![1, 2, 3, 4, 5]);
    let live = t.read("orders").await.expect("the table");
    assert!(live.column("note").is_some(), "the column was added");
    assert!(
        !t.plan(&v2).await.has_changes(),
        "the plan after apply is empty"
    );
}

/// A column the spec stops listing is dropped only with the approval of that exact plan: with
/// none, or another plan's, nothing changes; with it, the column goes and every row stays.
pub async fn a_dropped_column_waits_for_the_approval_of_that_plan<T: Target>(t: &T) {
    let v1 = t.manifests(&orders(&[ID, NOTE]));
    t.apply_ok(&v1, None).await;
    t.append_ids("orders", &[1, 2, 3]).await;

    let v2 = t.manifests(&orders(&[ID]));
    let plan = t.plan(&v2).await;
    assert!(
        plan.tables[0]
            .steps()
            .iter()
            .any(|s| s.class == RiskClass::Destructive),
        "dropping a column is destructive"
    );
    let unapproved = t.apply_with(&v2, None).await;
    assert!(
        matches!(unapproved, Err(ApplyError::NeedsApproval { .. })),
        "without approval: {unapproved:?}"
    );
    let wrong = t.apply_with(&v2, Some("0000000000000000")).await;
    assert!(
        matches!(wrong, Err(ApplyError::WrongApproval { .. })),
        "another plan's approval: {wrong:?}"
    );
    let live = t.read("orders").await.expect("the table");
    assert!(
        live.column("note").is_some(),
        "refused applies drop nothing"
    );
    assert_eq!(t.ids("orders").await, vec![1, 2, 3]);

    t.apply_ok(&v2, Some(plan.id.as_str())).await;
    let live = t.read("orders").await.expect("the table");
    assert!(live.column("note").is_none(), "the approved plan drops it");
    assert_eq!(t.ids("orders").await, vec![1, 2, 3]);
    assert!(
        !t.plan(&v2).await.has_changes(),
        "the plan after apply is empty"
    );
}

/// A table a job outside the operator creates and keeps evolving (it adds columns and sets
/// the table comment it owns), governed at scope Annotations: before the job makes it, the
/// spec is deferred (nothing created, nothing failed); once it exists, the first plan claims it
/// at that scope and sets the column comment the spec declares, in metadata steps only; the
/// job's later columns and comment never make a plan, no column is ever dropped, and every
/// row the job writes stays.
pub async fn a_table_a_job_evolves_is_governed_at_annotations_scope<T: Target>(t: &T) {
    let spec = t.manifests(&table(
        "events",
        "  scope: Annotations\n  columns:\n    - {name: amount, comment: in cents}\n",
    ));
    let plan = t.plan(&spec).await;
    assert_eq!(plan.summary.deferred, 1, "{plan:#?}");
    assert!(!plan.has_changes(), "a deferred table plans nothing");
    let report = t.apply_ok(&spec, None).await;
    assert_eq!(report.tables[0].status.word(), "deferred");
    assert!(
        t.read("events").await.is_none(),
        "a narrow scope creates nothing"
    );

    t.outside_create("events").await;
    t.append_ids("events", &[1, 2]).await;
    let plan = t.plan(&spec).await;
    let steps = plan.tables[0].steps();
    assert!(
        !steps.is_empty() && steps.iter().all(|s| s.class == RiskClass::Meta),
        "claim and comment only: {:?}",
        steps.iter().map(|s| s.action.title()).collect::<Vec<_>>()
    );
    // the job goes on between the plan and the apply
    t.outside_add_column("events", "country").await;
    t.outside_table_comment("events", "raw events, by the pipeline")
        .await;
    t.append_ids("events", &[3]).await;
    t.apply_ok(&spec, None).await;

    let live = t.read("events").await.expect("the table");
    assert_eq!(
        live.column("amount").and_then(|c| c.comment.as_deref()),
        Some("in cents")
    );
    assert_eq!(
        live.governed_scope(),
        delta_operator::model::Scope::Annotations
    );
    for round in 0..2 {
        t.outside_add_column("events", &format!("extra_{round}"))
            .await;
        t.outside_table_comment("events", &format!("the job words, round {round}"))
            .await;
        t.append_ids("events", &[10 + round]).await;
        let plan = t.plan(&spec).await;
        assert!(
            !plan.has_changes(),
            "the job's own changes never make a plan: {}",
            delta_operator::plan::render::text::render(&plan)
        );
    }
    let live = t.read("events").await.expect("the table");
    let names: Vec<&str> = live.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["id", "amount", "country", "extra_0", "extra_1"]);
    assert_eq!(live.comment.as_deref(), Some("the job words, round 1"));
    assert_eq!(t.ids("events").await, vec![1, 2, 3, 10, 11]);
}
