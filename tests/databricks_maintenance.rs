//! Maintenance on Databricks, on the warehouse emulator (e2e/warehouse/: Delta
//! on Spark, Unity Catalog emulated from the public API reference): the plan
//! shows `OPTIMIZE` and `VACUUM … RETAIN n HOURS` and runs them as shown (the
//! file count drops; a restore to the recorded restore point still works after
//! the vacuum), and a table Unity Catalog says predictive optimization
//! maintains gets no maintenance step, with a note saying why.
//!
//! `make test` exports DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID
//! and WAREHOUSE_URL; without them every test here fails (never skips).

mod support;

use delta_operator::engine::Inputs;
use delta_operator::plan::render::text::render;
use delta_operator::plan::steps::{Action, RiskClass};
use support::table;
use support::warehouse::Wh;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn orders(with_note: bool, maintenance: &str) -> String {
    let note = if with_note {
        "    - {name: note, type: string}\n"
    } else {
        ""
    };
    table(
        "orders",
        &format!(
            "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: region, type: string}}\n{note}{maintenance}"
        ),
    )
}

const MAINTAIN: &str = "  maintenance: {compaction: {every: 1m, zOrderBy: [region]}, vacuum: {retainHours: 168, keepRestorePointsDays: 7}}\n";

async fn num_files(wh: &Wh) -> u64 {
    let r = wh.sql(&format!("DESCRIBE DETAIL {}", wh.q("orders"))).await;
    let i = r
        .columns
        .iter()
        .position(|c| c == "numFiles")
        .expect("numFiles");
    r.rows[0][i].as_deref().unwrap_or("0").parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn compaction_and_vacuum_run_as_planned_and_the_restore_point_survives() {
    let wh = Wh::new("dm", "maint").await;
    wh.apply_ok(&wh.manifests(None, &orders(true, "")), false)
        .await;
    for i in 0..6 {
        wh.sql(&format!(
            "INSERT INTO {} VALUES ({i}, '{}', 'n{i}')",
            wh.q("orders"),
            if i % 2 == 0 { "eu" } else { "us" }
        ))
        .await;
    }
    // a destructive step records a restore point: the column note dropped
    let drop: Inputs = wh.manifests(None, &orders(false, ""));
    let report = wh.apply_ok(&drop, true).await;
    let restore_point = report
        .steps
        .iter()
        .find_map(|s| s.restore_point)
        .expect("the drop recorded a restore point");
    let before = num_files(&wh).await;
    assert!(before >= 6, "one file per insert at least: {before}");

    // maintenance declared: compaction (by its schedule: SQL shows no file sizes) and vacuum
    let inputs: Inputs = wh.manifests(None, &orders(false, MAINTAIN)).at(now_ms());
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    let steps = plan.tables[0].steps();
    let statements: Vec<String> = steps
        .iter()
        .flat_map(|s| s.statements.iter().map(|x| x.to_string()))
        .collect();
    assert!(
        steps.iter().all(|s| s.class == RiskClass::Maintenance),
        "{text}"
    );
    assert!(
        steps
            .iter()
            .any(|s| matches!(s.action, Action::Compact { .. }))
            && steps
                .iter()
                .any(|s| matches!(s.action, Action::Vacuum { .. })),
        "{text}"
    );
    let q = format!("`main`.`{}`.`orders`", wh.schema);
    assert!(
        statements.contains(&format!("OPTIMIZE {q} ZORDER BY (`region`)")),
        "{statements:?}"
    );
    assert!(
        statements.contains(&format!("VACUUM {q} RETAIN 168 HOURS")),
        "{statements:?}"
    );
    // the plan shows them as they run
    assert!(
        text.contains(&format!("OPTIMIZE {q} ZORDER BY (`region`)")),
        "{text}"
    );

    wh.apply_ok(&inputs, false).await;
    let after = num_files(&wh).await;
    assert!(after < before, "compacted: {before} → {after} files");
    // the history shows both, as the operator ran them
    let history = wh
        .sql(&format!("DESCRIBE HISTORY {}", wh.q("orders")))
        .await;
    let op = history
        .columns
        .iter()
        .position(|c| c == "operation")
        .expect("operation");
    let ops: Vec<String> = history.rows.iter().filter_map(|r| r[op].clone()).collect();
    assert!(
        ops.iter().any(|o| o == "OPTIMIZE") && ops.iter().any(|o| o == "VACUUM END"),
        "{ops:?}"
    );
    // nothing due again right after
    let again = wh.plan(&inputs).await;
    assert!(
        again.tables[0]
            .steps()
            .iter()
            .all(|s| !matches!(s.action, Action::Vacuum { .. })),
        "{}",
        render(&again)
    );
    // the restore point recorded before the drop still restores, after the vacuum
    wh.sql(&format!(
        "RESTORE TABLE {} TO VERSION AS OF {restore_point}",
        wh.q("orders")
    ))
    .await;
    let n = wh
        .scalar(&format!("SELECT count(note) FROM {}", wh.q("orders")))
        .await;
    assert_eq!(n, "6", "the dropped column is back with its values");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_table_predictive_optimization_maintains_gets_no_maintenance_step() {
    let wh = Wh::new("dm", "po").await;
    wh.apply_ok(&wh.manifests(None, &orders(true, "")), false)
        .await;
    for i in 0..3 {
        wh.sql(&format!(
            "INSERT INTO {} VALUES ({i}, 'eu', 'x')",
            wh.q("orders")
        ))
        .await;
    }
    let inputs: Inputs = wh.manifests(None, &orders(true, MAINTAIN)).at(now_ms());
    // without it, the compaction and vacuum are due
    let plan = wh.plan(&inputs).await;
    assert!(
        !plan.tables[0].steps().is_empty(),
        "{}\n{:?}\n{:?}",
        render(&plan),
        plan.tables[0].notes,
        plan.tables[0].observed.as_ref().map(|o| o.health.clone())
    );
    wh.sql(&format!(
        "ALTER TABLE {} ENABLE PREDICTIVE OPTIMIZATION",
        wh.q("orders")
    ))
    .await;
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    assert!(plan.tables[0].steps().is_empty(), "{text}");
    // the plan says why (a note of the table's)
    assert!(
        plan.tables[0]
            .notes
            .iter()
            .any(|n| n.contains("predictive optimization maintains this table")),
        "{text}\n{:?}",
        plan.tables[0].notes
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restore_undo_shows_its_window_and_an_outside_vacuum_is_read() {
    use delta_operator::backend::Backend;
    use delta_operator::plan::undo_window;
    let wh = Wh::new("dm", "window").await;
    wh.apply_ok(&wh.manifests(None, &orders(true, "")), false)
        .await;
    for i in 0..3 {
        wh.sql(&format!(
            "INSERT INTO {} VALUES ({i}, 'eu', 'x')",
            wh.q("orders")
        ))
        .await;
    }
    // the drop's undo is a RESTORE, shown with until when it works (DESCRIBE HISTORY read)
    let drop: Inputs = wh.manifests(None, &orders(false, ""));
    let plan = wh.plan(&drop).await;
    let text = render(&plan);
    let undo_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("undo: RESTORE TABLE"))
        .unwrap_or_else(|| panic!("a restore undo:\n{text}"));
    assert!(undo_line.contains(" (works until "), "{undo_line}");
    let report = wh.apply_ok(&drop, true).await;
    let restore_point = report
        .steps
        .iter()
        .find_map(|s| s.restore_point)
        .expect("a restore point");
    let t = wh.t("orders");
    let h = wh.b.history(&t).await.unwrap().expect("a history");
    assert!(
        matches!(
            undo_window::of_read(&h, restore_point),
            undo_window::UndoWindow::Until { .. }
        ),
        "{h:?}"
    );
    // an outside VACUUM that honours the retention is seen in the history (with the
    // retention it ran with) and leaves the window open: a warehouse runs each
    // statement alone, so the 168-hour check cannot be turned off for a shorter one
    // (the lake's test vacuums with 0 hours: tests/lake_undo.rs)
    wh.sql(&format!(
        "UPDATE {} SET region = 'us' WHERE id = 0",
        wh.q("orders")
    ))
    .await;
    wh.sql(&format!("VACUUM {} RETAIN 168 HOURS", wh.q("orders")))
        .await;
    let h = wh.b.history(&t).await.unwrap().expect("a history");
    assert!(
        h.vacuums
            .iter()
            .any(|v| v.retention_ms == Some(168 * 3_600_000)),
        "{h:?}"
    );
    let w = undo_window::of_read(&h, restore_point);
    assert!(matches!(w, undo_window::UndoWindow::Until { .. }), "{w:?}");
    assert!(
        w.describe(None).starts_with("works until "),
        "{}",
        w.describe(None)
    );
}
