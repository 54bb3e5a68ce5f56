//! The plan is the contract, on the lake (real Delta tables through delta-rs):
//! every `commit "<operation>" [<actions>] to <table>` a JSON plan shows is a
//! commit the table's `_delta_log` then holds, in order, with that operation
//! and exactly those action kinds, and no commit the plan does not show.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use delta_operator::apply::apply;
use delta_operator::engine::Inputs;
use delta_operator::plan::Plan;
use delta_operator::plan::render::json;
use deltalake::arrow::array::{ArrayRef, Int64Array, StringArray};
use serde_json::Value;
use support::{Lake, SCHEMA, STRICT_SCHEMA, manifests, table, tref};

/// One commit of a table: its operation and the kinds of its actions (commitInfo aside).
#[derive(Debug, PartialEq, Eq)]
struct Commit {
    operation: String,
    actions: BTreeSet<String>,
}

fn commits(table_dir: &Path, after: Option<u64>) -> Vec<Commit> {
    let log = table_dir.join("_delta_log");
    let mut versions: Vec<u64> = std::fs::read_dir(&log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
        .filter(|v| after.is_none_or(|a| *v > a))
        .collect();
    versions.sort();
    versions
        .into_iter()
        .map(|v| {
            let text = std::fs::read_to_string(log.join(format!("{v:020}.json"))).unwrap();
            let mut c = Commit {
                operation: String::new(),
                actions: BTreeSet::new(),
            };
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let a: Value = serde_json::from_str(line).unwrap();
                let (kind, body) = a.as_object().unwrap().iter().next().unwrap();
                if kind == "commitInfo" {
                    c.operation = body["operation"].as_str().unwrap_or_default().to_string();
                } else {
                    c.actions.insert(kind.clone());
                }
            }
            c
        })
        .collect()
}

/// The commits a plan shows for the table at `rel`, in order.
fn shown_commits(plan: &Plan, rel: &str) -> Vec<Commit> {
    let prefix = "commit \"";
    plan.tables
        .iter()
        .flat_map(|t| t.steps())
        .flat_map(|s| s.statements.iter())
        .filter_map(|s| {
            let s = s.to_string();
            let rest = s.strip_prefix(prefix)?;
            let (op, rest) = rest.split_once("\" [")?;
            let (actions, rest) = rest.split_once("] to ")?;
            let (to, _) = rest.split_once(": ")?;
            (to == rel).then(|| Commit {
                operation: op.to_string(),
                actions: actions
                    .split(", ")
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect(),
            })
        })
        .collect()
}

fn version(dir: &Path) -> Option<u64> {
    if !dir.join("_delta_log").exists() {
        return None;
    }
    commits(dir, None).len().checked_sub(1).map(|v| v as u64)
}

/// Applies the plan a reviewer saw (JSON round trip), approved, and checks the
/// table's new commits against the commits it shows.
async fn apply_and_compare(lake: &Lake, inputs: &Inputs, name: &str) -> Plan {
    let plan = json::parse(&json::render(&lake.plan(inputs).await)).expect("round trip");
    let dir = lake.backend.table_path(&tref(name));
    let before = version(&dir);
    let (_, report) = apply(
        &lake.backend,
        inputs,
        Some(&plan.id),
        Some(&plan.id),
        &support::options(),
    )
    .await
    .unwrap_or_else(|e| panic!("apply: {e}"));
    assert!(!report.failed(), "{report:#?}");
    let shown = shown_commits(&plan, &format!("main/sales/{name}"));
    assert!(!shown.is_empty(), "the plan shows commits");
    assert_eq!(
        commits(&dir, before),
        shown,
        "the table's new commits are the ones the plan shows"
    );
    plan
}

fn body(extra: &str) -> String {
    format!("  columns:\n    - {{name: id, type: bigint, nullable: false}}\n{extra}")
}

#[tokio::test]
async fn every_commit_a_lake_plan_shows_is_the_commit_delta_records() {
    let lake = Lake::new();
    let m = |b: &str| manifests(&format!("{SCHEMA}{}", table("t", b)));
    // create, with a CHECK
    let v1 = m(&body(concat!(
        "    - {name: amount, type: int, nullable: false}\n",
        "    - {name: status, type: string}\n",
        "  properties: {team: sales, stale: 'yes'}\n",
        "  constraints:\n    - check: {name: amount_positive, expression: amount > 0}\n"
    )));
    apply_and_compare(&lake, &v1, "t").await;
    let ids: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![1, 2, 3]));
    let amounts: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![10, 20, 30]));
    let status: ArrayRef = std::sync::Arc::new(StringArray::from(vec!["1", "2", "x"]));
    lake.append(
        &tref("t"),
        vec![("id", ids), ("amount", amounts), ("status", status)],
    )
    .await;
    // metadata in place: comment, properties set and unset, a column and its comment,
    // NOT NULL dropped, a CHECK dropped and another added
    let v2 = m(&body(concat!(
        "    - {name: amount, type: int}\n",
        "    - {name: status, type: string, comment: where it is}\n",
        "    - {name: channel, type: string}\n",
        "  comment: \"orders, it's ${x}\"\n",
        "  properties: {team: finance, stale: null}\n",
        "  constraints:\n    - check: {name: amount_small, expression: amount < 1000}\n"
    )));
    let plan = apply_and_compare(&lake, &v2, "t").await;
    let titles: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .map(|s| s.action.title())
        .collect();
    assert!(
        titles.len() >= 6,
        "every in-place kind is in this plan: {titles:#?}"
    );
    // a staged rewrite (a cast that may fail), then a write-once one that drops a
    // column, with a clone before it
    let v3 = m(&body(concat!(
        "    - {name: amount, type: int}\n",
        "    - {name: status, type: int, comment: where it is, using: \"CASE WHEN status = 'x' THEN 0 ELSE CAST(status AS INT) END\"}\n",
        "    - {name: channel, type: string}\n",
        "  comment: \"orders, it's ${x}\"\n",
        "  properties: {team: finance}\n",
        "  constraints:\n    - check: {name: amount_small, expression: amount < 1000}\n"
    )));
    let plan = apply_and_compare(&lake, &v3, "t").await;
    assert!(
        plan.tables[0]
            .steps()
            .iter()
            .any(|s| s.action.title() == "STAGE rewritten data"),
        "{}",
        delta_operator::plan::render::text::render(&plan)
    );
    let v4 = format!(
        "{}  safety: {{cloneBeforeRewrite: true}}\n",
        body(concat!(
            "    - {name: amount, type: int}\n",
            "    - {name: channel, type: string}\n",
            "  comment: \"orders, it's ${x}\"\n",
            "  properties: {team: finance}\n",
            "  constraints:\n    - check: {name: amount_small, expression: amount < 1000}\n"
        ))
    );
    let plan = apply_and_compare(&lake, &m(&v4), "t").await;
    let clone = plan.tables[0]
        .steps()
        .iter()
        .find_map(|s| match &s.action {
            delta_operator::plan::Action::CloneTable { name } => Some(name.clone()),
            _ => None,
        })
        .expect("a clone");
    assert!(clone.ends_with("{version}"), "{clone}");
    // the clone's own first commit is the one its step shows
    let clone_rel = plan.tables[0]
        .steps()
        .iter()
        .flat_map(|s| &s.statements)
        .find_map(|s| {
            let s = s.to_string();
            let rest = s.strip_prefix("commit \"CREATE TABLE\" [protocol, metaData, add] to ")?;
            Some(rest.split_once(": ")?.0.to_string())
        })
        .expect("the clone's commit");
    let bound = clone_rel.replace(
        "{version}",
        &(version(&lake.backend.table_path(&tref("t"))).unwrap() - 1).to_string(),
    );
    let clone_commits = commits(&lake.dir.path().join(&bound), None);
    assert_eq!(clone_commits.len(), 1, "{bound}");
    assert_eq!(clone_commits[0].operation, "CREATE TABLE");
    assert!(!lake.plan(&m(&v4)).await.has_changes(), "converged");
    // a strict schema drops a table without a manifest: its folder moves to the trash
    let gone = manifests(STRICT_SCHEMA);
    let plan = lake.plan(&gone).await;
    let drop = plan.tables[0].steps()[0].statements.clone();
    assert!(
        drop[0]
            .to_string()
            .starts_with("move the folder main/sales/t to .trash/main/sales/t/"),
        "{drop:?}"
    );
    lake.apply(&gone, true).await.expect("dropped");
    assert!(!lake.backend.table_path(&tref("t")).exists());
    let trash = lake.dir.path().join(".trash/main/sales/t");
    assert_eq!(
        std::fs::read_dir(&trash).unwrap().count(),
        1,
        "one dropped copy"
    );
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Maintenance (issue 34): a compaction's OPTIMIZE, and a vacuum's VACUUM START and
/// END, whether it deletes files or finds none (the operator then commits the two
/// itself), are the commits the plan shows; a checkpoint is no commit.
#[tokio::test]
async fn maintenance_commits_are_the_ones_the_plan_shows() {
    let lake = Lake::new();
    let m = |maintenance: &str| {
        manifests(&format!(
            "{SCHEMA}{}",
            table("t", &body(&format!("  maintenance: {maintenance}\n")))
        ))
        .at(now_ms())
    };
    let all = m(
        "{compaction: {whenSmallFiles: 3}, vacuum: {retainHours: 0, allowShortRetention: true}, checkpoint: {everyVersions: 3}}",
    );
    lake.apply(&all, false).await.unwrap();
    for i in 0..4i64 {
        let ids: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![i]));
        lake.append(&tref("t"), vec![("id", ids)]).await;
    }
    // compaction, a vacuum that deletes the files it compacted away, a checkpoint
    let plan = apply_and_compare(&lake, &all, "t").await;
    assert_eq!(
        plan.tables[0].steps().len(),
        3,
        "{}",
        delta_operator::plan::render::text::render(&plan)
    );
    // a vacuum with nothing to delete (its schedule made it due: `now` is two days later)
    let vacuum = manifests(&format!(
        "{SCHEMA}{}",
        table(
            "t",
            &body("  maintenance: {vacuum: {retainHours: 0, allowShortRetention: true}}\n")
        )
    ))
    .at(now_ms() + 2 * 86_400_000);
    let plan = apply_and_compare(&lake, &vacuum, "t").await;
    assert_eq!(
        plan.tables[0]
            .steps()
            .iter()
            .map(|s| s.action.title())
            .collect::<Vec<_>>(),
        vec!["VACUUM RETAIN 0 HOURS"]
    );
}
