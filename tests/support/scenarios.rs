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
