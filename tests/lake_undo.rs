//! Undo where the user is: the undo line a lake plan prints is a command that
//! works. Real Delta tables in temp dirs, the binary as a user runs it, rows
//! written by delta-rs as an outside writer, and the Python `deltalake`
//! package reading the result.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use delta_operator::backend::Backend;
use delta_operator::backend::lake::LakeBackend;
use delta_operator::plan::undo_window::{self, UndoWindow};
use deltalake::arrow::array::{ArrayRef, Int64Array, StringArray};
use serde_json::Value;
use support::output_text as text;
use support::py;
use support::{Lake, tref};

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Runs and asserts the exit code; never a panic, whatever the input.
fn expect(dir: &Path, args: &[&str], want: i32) -> String {
    let o = run(dir, args);
    let out = text(&o);
    assert_eq!(code(&o), want, "{args:?}:\n{out}");
    assert!(!out.contains("panicked"), "{args:?} panicked:\n{out}");
    out
}

const SCHEMA: &str = "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {name: sales}
spec: {catalog: main, mode: strict}
";

/// The table: properties, two CHECKs, a comment, a partition column.
/// Without `note`, the property `team` and the CHECKs change too, so an undo
/// of that plan has table metadata to bring back as well as a column.
fn orders(amount: &str, with_note: bool) -> String {
    let (note, team, id_check) = if with_note {
        (
            "    - {name: note, type: string, comment: free text}\n",
            "sales",
            "    - check: {name: id_positive, expression: id > 0}\n",
        )
    } else {
        ("", "finance", "")
    };
    format!(
        "---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {{name: orders}}
spec:
  schemaRef: sales
  comment: Orders as placed
  columns:
    - {{name: id, type: bigint, nullable: false}}
    - {{name: amount, type: {amount}, comment: cents}}
    - {{name: region, type: string}}
{note}  partitionedBy: [region]
  properties:
    team: {team}
    delta.logRetentionDuration: interval 30 days
  constraints:
    - check: {{name: amount_not_negative, expression: amount >= 0}}
{id_check}"
    )
}

struct World {
    dir: tempfile::TempDir,
    lake: Lake,
}

impl World {
    /// A work folder whose `./lake` is the CLI's default target.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("lake")).unwrap();
        std::fs::create_dir_all(dir.path().join("m")).unwrap();
        let backend = LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap();
        let lake = Lake {
            dir: tempfile::tempdir().unwrap(),
            backend,
        };
        World { dir, lake }
    }

    fn d(&self) -> &Path {
        self.dir.path()
    }

    fn manifests(&self, docs: &[&str]) {
        let m = self.d().join("m");
        for e in std::fs::read_dir(&m).unwrap().flatten() {
            std::fs::remove_file(e.path()).unwrap();
        }
        for (i, doc) in docs.iter().enumerate() {
            std::fs::write(m.join(format!("{i}.yaml")), doc).unwrap();
        }
    }

    fn plan(&self) -> (i32, String) {
        let o = run(self.d(), &["plan", "-f", "m/"]);
        (code(&o), text(&o))
    }

    /// Plans, then applies that plan approved; returns the plan's text.
    fn apply_approved(&self) -> String {
        let (c, plan) = self.plan();
        assert_eq!(c, 2, "changes planned:\n{plan}");
        let id = plan
            .lines()
            .find_map(|l| l.strip_prefix("Plan id: "))
            .expect("a plan id")
            .trim()
            .to_string();
        expect(self.d(), &["apply", "-f", "m/", "--approve", &id], 0);
        plan
    }

    async fn append(&self, ids: &[i64], amounts: &[i64], regions: &[&str]) {
        let cols: Vec<(&str, ArrayRef)> = vec![
            ("id", Arc::new(Int64Array::from(ids.to_vec()))),
            ("amount", Arc::new(Int64Array::from(amounts.to_vec()))),
            ("region", Arc::new(StringArray::from(regions.to_vec()))),
        ];
        self.lake.append(&tref("orders"), cols).await;
    }

    /// Everything a restore must bring back: rows (sorted), the schema JSON,
    /// the properties (CHECKs included), partitioning and comment.
    async fn state(&self) -> State {
        let t = tref("orders");
        let mut rows = self.lake.query(&t, "SELECT * FROM t").await;
        rows.sort();
        let table = deltalake::open_table(self.lake.url(&t)).await.unwrap();
        let snap = table.snapshot().unwrap();
        let md = snap.metadata();
        State {
            rows,
            schema: serde_json::to_value(snap.schema().as_ref()).unwrap(),
            properties: md
                .configuration()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            partitioned_by: md.partition_columns().to_vec(),
            comment: md.description().map(str::to_string),
        }
    }

    async fn version(&self) -> u64 {
        self.lake.version(&tref("orders")).await
    }

    /// The window of a restore point of `orders` at `version`, from its history.
    async fn window(&self, version: u64) -> UndoWindow {
        let h = self
            .lake
            .backend
            .history(&tref("orders"))
            .await
            .unwrap()
            .expect("a table");
        undo_window::of_read(&h, version)
    }
}

#[derive(Debug, PartialEq)]
struct State {
    rows: Vec<String>,
    schema: Value,
    properties: BTreeMap<String, String>,
    partitioned_by: Vec<String>,
    comment: Option<String>,
}

/// The title of a numbered step line (`  1. REPLACE TABLE …`), if `l` is one.
fn step_title(l: &str) -> Option<&str> {
    let (n, rest) = l.trim_start().split_once(". ")?;
    n.parse::<u32>().ok().map(|_| rest)
}

/// The undo line of the step whose title starts with `title`, split into the binary's arguments.
fn undo_of(plan: &str, title: &str) -> Vec<String> {
    let lines: Vec<&str> = plan.lines().collect();
    let at = lines
        .iter()
        .position(|l| step_title(l).is_some_and(|t| t.starts_with(title)))
        .unwrap_or_else(|| panic!("no step {title:?} in:\n{plan}"));
    let undo = lines[at + 1..]
        .iter()
        .take_while(|l| step_title(l).is_none())
        .find_map(|l| l.trim().strip_prefix("undo: "))
        .unwrap_or_else(|| panic!("step {title:?} has no undo line:\n{plan}"));
    // the window beside it is not part of the command
    let undo = undo.split(" (").next().unwrap_or(undo);
    let words: Vec<String> = undo.split_whitespace().map(str::to_string).collect();
    assert_eq!(
        words.first().map(String::as_str),
        Some("delta-operator"),
        "a lake undo is a command of this binary: {undo}"
    );
    words[1..].to_vec()
}

fn run_undo(dir: &Path, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect(dir, &args, 0)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_printed_undo_of_a_rewrite_and_of_a_column_drop_restores_exactly() {
    let w = World::new();
    w.manifests(&[SCHEMA, &orders("int", true)]);
    expect(w.d(), &["apply", "-f", "m/"], 0);
    w.append(&[1, 2, 3], &[100, 250, 0], &["eu", "us", "eu"])
        .await;
    w.append(&[4], &[7], &["apac"]).await;
    let original = w.state().await;
    let v_original = w.version().await;
    assert_eq!(original.rows.len(), 4);
    assert!(
        original
            .properties
            .contains_key("delta.constraints.amount_not_negative")
            && original.properties.get("team").map(String::as_str) == Some("sales"),
        "{:?}",
        original.properties
    );

    // 1. a rewrite: amount int → bigint
    w.manifests(&[SCHEMA, &orders("bigint", true)]);
    let plan = w.apply_approved();
    let undo_rewrite = undo_of(&plan, "REPLACE TABLE");
    assert_eq!(
        undo_rewrite,
        [
            "restore",
            "main.sales.orders",
            "--version",
            &v_original.to_string()
        ]
    );
    let widened = w.state().await;
    assert_ne!(
        widened.schema, original.schema,
        "the rewrite changed the schema"
    );
    assert_eq!(widened.rows, original.rows);
    let v_widened = w.version().await;

    // 2. a column drop (destructive): note goes
    w.manifests(&[SCHEMA, &orders("bigint", false)]);
    let plan = w.apply_approved();
    let undo_drop = undo_of(&plan, "REPLACE TABLE");
    assert_eq!(undo_drop[3], v_widened.to_string(), "{plan}");
    assert!(plan.contains("[destructive]"), "{plan}");
    let dropped = w.state().await;
    assert_ne!(dropped.schema, widened.schema);
    assert_eq!(
        dropped.properties.get("team").map(String::as_str),
        Some("finance")
    );
    assert!(
        !dropped
            .properties
            .contains_key("delta.constraints.id_positive"),
        "{:?}",
        dropped.properties
    );

    // undo the drop: exactly the widened table again
    let out = run_undo(w.d(), &undo_drop);
    assert!(
        out.contains(&format!(
            "restored main.sales.orders to version {v_widened}"
        )) && out.contains("revert it in Git"),
        "{out}"
    );
    assert_eq!(w.state().await, widened);
    // undo the rewrite: exactly the original
    run_undo(w.d(), &undo_rewrite);
    assert_eq!(w.state().await, original);
    // the original manifest plans clean against it: nothing left over, nothing differs
    w.manifests(&[SCHEMA, &orders("int", true)]);
    let (c, plan) = w.plan();
    assert_eq!(c, 0, "{plan}");
    // an outside reader sees the restored table: its rows, types, columns and CHECK
    let o = py(
        w.d(),
        "import deltalake, pyarrow as pa\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
rows = t.to_pyarrow_table()\n\
print(rows.num_rows, str(rows.schema.field('amount').type), 'note' in rows.schema.names, t.metadata().configuration.get('delta.constraints.amount_not_negative'), sorted(rows.column('id').to_pylist()))",
    );
    assert_eq!(o, "4 int32 True amount >= 0 [1, 2, 3, 4]");
    // and the restored CHECK holds for an outside writer: a negative amount is refused
    let o = py(
        w.d(),
        "import deltalake, pyarrow as pa\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
s = t.to_pyarrow_table().schema\n\
row = pa.table({'id': pa.array([9], pa.int64()), 'amount': pa.array([-1], pa.int32()), 'region': ['eu'], 'note': [None]}, schema=s)\n\
try:\n    deltalake.write_deltalake('lake/main/sales/orders', row, mode='append'); print('written')\n\
except Exception as e:\n    print('refused', 'failed validation check' in str(e))",
    );
    assert_eq!(o, "refused True");
    assert_eq!(w.state().await, original, "nothing written");
    // restoring the version the table is at writes nothing
    let v = w.version().await;
    let out = expect(
        w.d(),
        &["restore", "main.sales.orders", "--version", &v.to_string()],
        0,
    );
    assert!(out.contains("nothing to restore"), "{out}");
    assert_eq!(w.version().await, v);
}

/// The `(…)` beside the undo line of the step whose title starts with `title`.
fn window_of(plan: &str, title: &str) -> String {
    let lines: Vec<&str> = plan.lines().collect();
    let at = lines
        .iter()
        .position(|l| step_title(l).is_some_and(|t| t.starts_with(title)))
        .unwrap_or_else(|| panic!("no step {title:?} in:\n{plan}"));
    let undo = lines[at + 1..]
        .iter()
        .take_while(|l| step_title(l).is_none())
        .find_map(|l| l.trim().strip_prefix("undo: "))
        .unwrap_or_else(|| panic!("step {title:?} has no undo line:\n{plan}"));
    undo.split_once(" (")
        .and_then(|(_, w)| w.strip_suffix(')'))
        .unwrap_or_else(|| panic!("the undo line shows no window: {undo}"))
        .to_string()
}

/// `works until 2026-12-11 14:00 UTC` → epoch ms.
fn until_ms(window: &str) -> i64 {
    let when = window
        .strip_prefix("works until ")
        .and_then(|w| w.strip_suffix(" UTC"))
        .unwrap_or_else(|| panic!("not an open window: {window}"));
    undo_window::parse_utc_ms(&format!("{when}:00")).unwrap_or_else(|| panic!("{window}"))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread")]
async fn the_undo_line_shows_its_window_and_a_vacuum_ends_or_shrinks_it() {
    const H: i64 = 3_600_000;
    let w = World::new();
    w.manifests(&[SCHEMA, &orders("int", true)]);
    expect(w.d(), &["apply", "-f", "m/"], 0);
    w.append(&[1, 2, 3], &[100, 250, 0], &["eu", "us", "eu"])
        .await;
    w.append(&[4], &[7], &["apac"]).await;
    let v_original = w.version().await;

    // a rewrite: its restore undo works a week (Delta's default deleted-file
    // retention) after the next commit, at the earliest now (to the hour below)
    w.manifests(&[SCHEMA, &orders("bigint", true)]);
    let before = now_ms();
    let plan = w.apply_approved();
    let until = until_ms(&window_of(&plan, "REPLACE TABLE"));
    let week = 7 * 24 * H;
    assert!(
        until <= before + week && until > before + week - H - 60_000,
        "a week from now, to the hour below: {until} vs {before}\n{plan}"
    );
    // the same plan shown again shows the same window, and the same id
    let (_, again) = {
        w.manifests(&[SCHEMA, &orders("bigint", false)]);
        w.plan()
    };
    let v_widened = w.version().await;
    assert!(
        window_of(&again, "REPLACE TABLE").starts_with("works until "),
        "{again}"
    );
    let (_, again2) = w.plan();
    assert_eq!(
        again.lines().find(|l| l.starts_with("Plan id: ")),
        again2.lines().find(|l| l.starts_with("Plan id: "))
    );

    // the window of the applied rewrite's restore point, from the table's history
    let open = w.window(v_original).await;
    assert!(
        matches!(open, UndoWindow::Until { ms, .. } if ms > now_ms() + week - 2 * H),
        "{open:?}"
    );

    // an outside VACUUM with retention 0 removes the files the rewrite replaced
    let o = py(
        w.d(),
        "import deltalake\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
print(len(t.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)) > 0)",
    );
    assert_eq!(o, "True");
    // that restore point's window has ended, and says when and why
    let ended = w.window(v_original).await;
    assert!(ended.is_ended(), "{ended:?}");
    let said = ended.describe(Some(now_ms()));
    assert!(
        said.starts_with("no longer works: vacuumed at ") && said.ends_with("(retention 0 hours)"),
        "{said}"
    );
    // and it is true: the restore refuses, the files are gone
    let out = expect(
        w.d(),
        &[
            "restore",
            "main.sales.orders",
            "--version",
            &v_original.to_string(),
        ],
        1,
    );
    assert!(out.contains("are gone"), "{out}");
    // the restore point the table is at now: whoever vacuums with 0 hours may again
    // right after the next commit, so the next plan's window shrinks to now (the hour below)
    let (_, shrunk) = w.plan();
    let now = now_ms();
    let until = until_ms(&window_of(&shrunk, "REPLACE TABLE"));
    assert!(
        until <= now && until > now - H - 60_000,
        "shrunk to now: {until} vs {now}\n{shrunk}"
    );
    assert_eq!(
        undo_of(&shrunk, "REPLACE TABLE")[3],
        w.version().await.to_string()
    );
    assert!(w.version().await > v_widened, "the vacuum committed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_table_comes_back_exactly_with_the_printed_undrop() {
    let w = World::new();
    w.manifests(&[SCHEMA, &orders("int", true)]);
    expect(w.d(), &["apply", "-f", "m/"], 0);
    w.append(&[1, 2], &[5, 6], &["eu", "us"]).await;
    let before = w.state().await;
    let v_before = w.version().await;

    // the manifest goes; the strict schema drops the table (destructive, approved)
    w.manifests(&[SCHEMA]);
    let plan = w.apply_approved();
    let undo = undo_of(&plan, "DROP TABLE");
    assert_eq!(undo, ["undrop", "main.sales.orders"], "{plan}");
    assert!(!w.d().join("lake/main/sales/orders").exists());
    // restore of a dropped table points at undrop
    let out = expect(
        w.d(),
        &["restore", "main.sales.orders", "--version", "0"],
        1,
    );
    assert!(
        out.contains("it was dropped") && out.contains("delta-operator undrop main.sales.orders"),
        "{out}"
    );

    let out = run_undo(w.d(), &undo);
    assert!(
        out.contains("undropped main.sales.orders") && out.contains("revert it in Git"),
        "{out}"
    );
    assert_eq!(w.state().await, before);
    assert_eq!(w.version().await, v_before, "the same table, same history");
    // a second undrop: a table is there now
    let out = expect(w.d(), &["undrop", "main.sales.orders"], 1);
    assert!(out.contains("exists"), "{out}");
    // the manifest back: nothing to do
    w.manifests(&[SCHEMA, &orders("int", true)]);
    let (c, plan) = w.plan();
    assert_eq!(c, 0, "{plan}");
    let o = py(
        w.d(),
        "import deltalake\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
r = t.to_pyarrow_table()\n\
print(r.num_rows, sorted(r.column('amount').to_pylist()), t.metadata().configuration.get('team'))",
    );
    assert_eq!(o, "2 [5, 6] sales");
}

#[tokio::test(flavor = "multi_thread")]
async fn several_dropped_copies_are_listed_and_one_is_chosen_with_from() {
    let w = World::new();
    // drop it twice: first with one row, then (created again) with two
    w.manifests(&[SCHEMA, &orders("int", true)]);
    expect(w.d(), &["apply", "-f", "m/"], 0);
    w.append(&[1], &[1], &["eu"]).await;
    let first = w.state().await;
    w.manifests(&[SCHEMA]);
    w.apply_approved();
    std::thread::sleep(std::time::Duration::from_millis(5));
    w.manifests(&[SCHEMA, &orders("int", true)]);
    expect(w.d(), &["apply", "-f", "m/"], 0);
    w.append(&[2, 3], &[2, 3], &["us", "us"]).await;
    let second = w.state().await;
    w.manifests(&[SCHEMA]);
    w.apply_approved();

    let entries = w.lake.backend.trash_entries(&tref("orders")).await.unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
    let out = expect(w.d(), &["undrop", "main.sales.orders"], 1);
    assert!(
        out.contains("dropped 2 times")
            && out.contains("--from")
            && out.contains(&entries[0].name)
            && out.contains(&entries[1].name),
        "{out}"
    );
    for bogus in ["nope", "../../main/sales/orders", "", "..", "/etc"] {
        let out = expect(w.d(), &["undrop", "main.sales.orders", "--from", bogus], 1);
        assert!(out.contains("no such dropped copy"), "{bogus:?}: {out}");
    }
    assert!(
        !w.d().join("lake/main/sales/orders").exists(),
        "nothing moved"
    );
    // the older copy (oldest first)
    expect(
        w.d(),
        &["undrop", "main.sales.orders", "--from", &entries[0].name],
        0,
    );
    assert_eq!(w.state().await, first);
    assert_ne!(first, second);
    let left = w.lake.backend.trash_entries(&tref("orders")).await.unwrap();
    assert_eq!(left, vec![entries[1].clone()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn restore_refuses_what_it_cannot_do_and_writes_nothing() {
    let w = World::new();
    w.manifests(&[SCHEMA, &orders("int", true)]);
    expect(w.d(), &["apply", "-f", "m/"], 0);
    w.append(&[1, 2], &[5, 6], &["eu", "us"]).await;
    let v0 = w.version().await;
    w.manifests(&[SCHEMA, &orders("bigint", true)]);
    w.apply_approved();
    let v1 = w.version().await;
    let after = w.state().await;

    for (args, says) in [
        (
            vec!["orders", "--version", "1"],
            "expected catalog.schema.table",
        ),
        (
            vec!["main..orders", "--version", "1"],
            "the schema name is empty",
        ),
        (
            vec!["main.sales..", "--version", "1"],
            "expected catalog.schema.table",
        ),
        (vec!["main.sales.a/b", "--version", "1"], "contains '/'"),
        (
            vec!["../x.sales.orders", "--version", "1"],
            "expected catalog.schema.table",
        ),
        (
            vec!["..%2f.sales.orders", "--version", "1"],
            "expected catalog.schema.table",
        ),
        (
            vec!["main.sales._delta_log", "--version", "1"],
            "_delta_log",
        ),
        (
            vec!["main.sales.orders", "--version", "-1"],
            "--version '-1'",
        ),
        (
            vec!["main.sales.orders", "--version", "99999999999999999999999"],
            "whole number",
        ),
        (
            vec!["main.sales.orders", "--version", "two"],
            "whole number",
        ),
        (vec!["main.sales.orders"], "--version N is required"),
        (
            vec!["main.sales.orders", "--version", "18446744073709551615"],
            "no such version",
        ),
        (
            vec!["main.sales.orders", "--version", &(v1 + 1).to_string()],
            "no such version",
        ),
        (
            vec!["main.sales.nothing", "--version", "0"],
            "no table main.sales.nothing",
        ),
    ] {
        let mut a = vec!["restore"];
        a.extend(args.iter().copied());
        let out = expect(w.d(), &a, 1);
        assert!(out.contains(says), "{a:?}: {out}");
        assert!(out.contains("error: "), "{out}");
    }
    // unlock holds its argument to the same checks, and writes no lock entry for it
    let out = expect(w.d(), &["unlock", "main.sa/les.orders"], 1);
    assert!(out.contains("contains '/'"), "{out}");
    assert!(!w.d().join("lake/.locks/main/sa").exists());
    for bad in ["orders", "main.sales.a\\b", "main.sales.\u{7}"] {
        let out = expect(w.d(), &["undrop", bad], 1);
        assert!(out.contains("TABLE '"), "{out}");
    }
    assert_eq!(w.version().await, v1, "nothing written");
    assert_eq!(w.state().await, after);

    // another apply holds the table: exit 5, naming the holder
    let held = w
        .lake
        .backend
        .begin(&tref("orders"), std::time::Duration::ZERO)
        .await
        .unwrap();
    let out = expect(
        w.d(),
        &[
            "restore",
            "main.sales.orders",
            "--version",
            &v0.to_string(),
            "--lock-wait",
            "0s",
        ],
        5,
    );
    assert!(out.contains("is being applied by"), "{out}");
    w.lake.backend.end(held).await;
    assert_eq!(w.version().await, v1);

    // a VACUUM removed the files of the version before the rewrite
    let table = deltalake::open_table(w.lake.url(&tref("orders")))
        .await
        .unwrap();
    let (_, metrics) = table
        .vacuum()
        .with_retention_period(chrono::Duration::zero())
        .with_enforce_retention_duration(false)
        .await
        .unwrap();
    assert!(
        !metrics.files_deleted.is_empty(),
        "the vacuum removed files"
    );
    let out = expect(
        w.d(),
        &["restore", "main.sales.orders", "--version", &v0.to_string()],
        1,
    );
    assert!(
        out.contains("are gone") && out.contains("nothing was restored"),
        "{out}"
    );
    assert_eq!(w.state().await, after, "untouched");
}

#[test]
fn on_a_databricks_target_both_refuse_and_print_the_statement_to_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("dbx.yaml"),
        "targets:\n  dbx:\n    databricks:\n      host: https://workspace.invalid\n      warehouseId: abc123\n      auth: {tokenEnv: UNDO_TEST_TOKEN}\ndefaultTarget: dbx\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(BIN)
            .args(args)
            .args(["--config", "dbx.yaml"])
            .current_dir(dir.path())
            .env_remove("DELTA_OPERATOR_CONFIG")
            .env("UNDO_TEST_TOKEN", "not-a-real-token")
            .output()
            .unwrap();
        (code(&o), text(&o))
    };
    let (c, out) = run(&["restore", "main.sales.orders", "--version", "2"]);
    assert_eq!(c, 1, "{out}");
    assert!(
        out.contains("target 'dbx' is a Databricks workspace")
            && out.contains("RESTORE TABLE `main`.`sales`.`orders` TO VERSION AS OF 2"),
        "{out}"
    );
    let (c, out) = run(&["undrop", "main.sales.orders"]);
    assert_eq!(c, 1, "{out}");
    assert!(
        out.contains("UNDROP TABLE `main`.`sales`.`orders`"),
        "{out}"
    );
    assert!(!out.contains("panicked"), "{out}");
}
