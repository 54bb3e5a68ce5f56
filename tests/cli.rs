//! The binary as a user runs it: the README's first command on a copy of
//! examples/, the approval flow, import, read and offline plans, and a reader
//! outside the project (the Python `deltalake` package) seeing the tables.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use support::output_text as text;
use support::py;

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

/// Appends 2,000 rows (status 'new') to the example orders table with Python deltalake; the
/// table's row count after it.
fn append_2000_orders(d: &Path) -> String {
    py(
        d,
        "import deltalake, pyarrow as pa, datetime\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
s = t.to_pyarrow_table().schema\n\
ids = list(range(2000))\n\
rows = pa.table({'order_id': pa.array(ids, pa.int64()), 'customer_id': pa.array(ids, pa.int64()), 'amount': pa.array(ids, pa.int32()), 'status': ['new'] * 2000, 'items': pa.array([None] * 2000, s.field('items').type), 'order_date': pa.array([datetime.date(2026, 11, 1)] * 2000)}, schema=s)\n\
deltalake.write_deltalake('lake/main/sales/orders', rows, mode='append')\n\
print(deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table().num_rows)",
    )
}

/// `apply -f examples/` under GNU time (its last line: `peak RSS <n> KB`), with the default
/// config and memory budget.
fn apply_under_gnu_time(d: &Path) -> Output {
    Command::new("/usr/bin/time")
        .args(["-f", "peak RSS %M KB"])
        .arg(BIN)
        .args(["apply", "-f", "examples/"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env_remove("DELTA_OPERATOR_LAKE_MEMORY_MB")
        .output()
        .expect("GNU time (/usr/bin/time) and the binary")
}

fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    std::fs::create_dir(dir.path().join("examples")).unwrap();
    for e in std::fs::read_dir(examples).unwrap().flatten() {
        std::fs::copy(e.path(), dir.path().join("examples").join(e.file_name())).unwrap();
    }
    dir
}

fn plan_id(out: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix("Plan id: "))
        .expect("a plan id line")
        .trim()
        .to_string()
}

#[test]
fn the_readme_flow_create_change_refuse_approve() {
    let dir = workdir();
    let d = dir.path();
    // the README's first command, on a fresh copy
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(d.join("lake/main/sales/orders/_delta_log").is_dir());
    assert!(d.join("lake/main/sales/customers/_delta_log").is_dir());
    // run again: no changes
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("Plan: 0 to add, 0 to change, 0 to destroy"),
        "{}",
        text(&o)
    );

    // a reader outside the project writes and reads rows
    let n = py(
        d,
        "import deltalake, pyarrow as pa\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
s = t.to_pyarrow_table().schema\n\
import datetime\n\
rows = pa.table({'order_id': pa.array([1,2,3], pa.int64()), 'customer_id': pa.array([7,7,8], pa.int64()), 'amount': pa.array([100,250,0], pa.int32()), 'status': ['new','paid','new'], 'items': pa.array([None,None,None], s.field('items').type), 'order_date': pa.array([datetime.date(2026,11,1)]*3)}, schema=s)\n\
deltalake.write_deltalake('lake/main/sales/orders', rows, mode='append')\n\
print(deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table().num_rows)",
    );
    assert_eq!(n, "3");

    // amount int → bigint and status removed: a rewrite and a destructive step
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let changed = spec
        .replace("      type: int\n", "      type: bigint\n")
        .replace("    - name: status\n      type: string\n", "");
    assert_ne!(spec, changed);
    std::fs::write(&orders, changed).unwrap();
    let o = run(d, &["plan", "-f", "examples/"]);
    let out = text(&o);
    assert_eq!(code(&o), 2, "{out}");
    // int → bigint cannot lose a value: one write-once replace, destructive because it drops status
    assert!(
        out.contains("REPLACE TABLE (from itself)")
            && out.contains("[destructive]")
            && !out.contains("STAGE"),
        "{out}"
    );
    let id = plan_id(&out);
    let version = || {
        std::fs::read_dir(d.join("lake/main/sales/orders/_delta_log"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count()
    };
    let v_before = version();

    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 4, "refused without approval: {}", text(&o));
    assert_eq!(version(), v_before, "nothing changed");
    let o = run(
        d,
        &["apply", "-f", "examples/", "--approve", "0123456789abcdef"],
    );
    assert_eq!(code(&o), 4, "a wrong id approves nothing: {}", text(&o));
    assert_eq!(version(), v_before, "nothing changed");
    let o = run(d, &["apply", "-f", "examples/", "--approve", &id]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("restore point"), "{}", text(&o));
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));

    // the outside reader sees the new schema and every row
    let seen = py(
        d,
        "import deltalake\n\
t = deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table()\n\
print(t.num_rows, str(t.schema.field('amount').type), 'status' in t.schema.names, sorted(x for x in t.column('amount').to_pylist() if x is not None))",
    );
    assert_eq!(seen, "3 int64 False [0, 100, 250]");
}

/// The CLI remembers no approval (no state file): a second apply of a plan that
/// ran is refused because the world it described moved (exit 3), and when the
/// same plan recurs after the printed undo, `apply` waits for an approval again
/// (exit 4); `--approve` is the approval of the one invocation that carries it.
#[test]
fn a_second_apply_of_the_same_plan_is_refused_and_a_recurring_plan_needs_approving_again() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let dropped = spec.replace("    - name: status\n      type: string\n", "");
    assert_ne!(spec, dropped);
    std::fs::write(&orders, dropped).unwrap();
    let o = run(d, &["plan", "-f", "examples/"]);
    let out = text(&o);
    assert_eq!(code(&o), 2, "{out}");
    let id = plan_id(&out);
    let undo = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("undo: delta-operator "))
        .unwrap_or_else(|| panic!("an undo command: {out}"))
        .to_string();
    // the command, then until when it works
    let (undo, window) = undo
        .split_once(" (")
        .unwrap_or_else(|| panic!("the undo shows its window: {undo}"));
    assert!(window.starts_with("works until "), "{window}");
    let undo = undo.to_string();
    let o = run(
        d,
        &[
            "apply",
            "-f",
            "examples/",
            "--plan-id",
            &id,
            "--approve",
            &id,
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    // the same plan and approval once more: the table moved on, so the plan is stale
    let o = run(
        d,
        &[
            "apply",
            "-f",
            "examples/",
            "--plan-id",
            &id,
            "--approve",
            &id,
        ],
    );
    assert_eq!(code(&o), 3, "{}", text(&o));

    // the printed undo, with the manifest not reverted: the very same plan recurs
    let args: Vec<&str> = undo.split_whitespace().collect();
    let o = run(d, &args);
    assert_eq!(code(&o), 0, "{undo}: {}", text(&o));
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(plan_id(&text(&o)), id, "{}", text(&o));
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 4, "waits for an approval: {}", text(&o));
    // a new approval, given by whoever runs it (the `<id>-<n>` form names the same plan)
    let again = format!("{id}-2");
    let o = run(d, &["apply", "-f", "examples/", "--approve", &again]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn validate_reports_file_path_and_fix_and_exits_1() {
    let dir = workdir();
    let d = dir.path();
    std::fs::write(d.join("examples/bad.yaml"), "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: bad}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: a, type: strng, nulable: true}\n").unwrap();
    let o = run(d, &["validate", "-f", "examples/"]);
    let out = text(&o);
    assert_eq!(code(&o), 1, "{out}");
    assert!(
        out.contains("examples/bad.yaml")
            && out.contains("spec.columns[0].type")
            && out.contains("did you mean 'string'"),
        "{out}"
    );
    assert!(
        out.contains("spec.columns[0].nulable") && out.contains("did you mean 'nullable'"),
        "{out}"
    );
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 1, "plan refuses invalid manifests too");
}

#[test]
fn crds_print_what_is_committed() {
    let o = run(Path::new("."), &["crds"]);
    assert_eq!(code(&o), 0);
    let committed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crds/delta-operator.yaml"),
    )
    .expect("crds/delta-operator.yaml is committed");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        committed,
        "crds/ is stale: run `cargo run -- crds > crds/delta-operator.yaml`"
    );
}

#[test]
fn import_writes_manifests_that_plan_clean_and_read_feeds_offline_plans() {
    let dir = workdir();
    let d = dir.path();
    assert_eq!(code(&run(d, &["apply", "-f", "examples/"])), 0);
    let o = run(d, &["import", "--schema", "main.sales", "-o", "imported"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(d, &["plan", "-f", "imported/"]);
    assert_eq!(code(&o), 0, "imported manifests plan clean: {}", text(&o));

    // read → offline plan: the same plan id as planning live
    let spec = std::fs::read_to_string(d.join("examples/orders.yaml")).unwrap();
    std::fs::write(
        d.join("examples/orders.yaml"),
        spec.replace(
            "    - name: status\n      type: string\n",
            "    - name: state\n      type: string\n      renamedFrom: status\n",
        ),
    )
    .unwrap();
    let live = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&live), 2, "{}", text(&live));
    let o = run(d, &["read", "-f", "examples/", "-o", "state.json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let offline = run(
        d,
        &[
            "plan",
            "-f",
            "examples/",
            "--observed",
            "state.json",
            "--backend",
            "lake",
        ],
    );
    assert_eq!(
        plan_id(&text(&offline)),
        plan_id(&text(&live)),
        "offline and live plans agree"
    );
    assert!(
        text(&offline).contains("REPLACE TABLE"),
        "{}",
        text(&offline)
    );
    // Databricks can rename in place after enabling column mapping
    let dbx = run(
        d,
        &[
            "plan",
            "-f",
            "examples/",
            "--observed",
            "state.json",
            "--backend",
            "databricks",
        ],
    );
    let out = text(&dbx);
    assert!(
        out.contains("enable columnMapping")
            && out.contains("RENAME COLUMN status TO state")
            && !out.contains("REPLACE TABLE"),
        "{out}"
    );
    // JSON output: top-level id is the plan id
    let json = run(d, &["plan", "-f", "examples/", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["id"].as_str().unwrap(), plan_id(&text(&live)));
    assert_eq!(v["format_version"], 1);
}

/// A long step says that it runs and for how long: without a terminal (a log, a CI
/// job), one timed line per `--progress-every`, each naming the table, the step and
/// the time so far. (The step is made long by a debug-build failpoint.)
#[test]
fn a_lake_rewrite_prints_rows_done_of_rows_with_a_rate_and_the_time_left() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // 4 order dates: 4 files, so the rewrite streams at least 4 batches
    let n = py(
        d,
        "import deltalake, pyarrow as pa, datetime\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
s = t.to_pyarrow_table().schema\n\
def day_rows(day):\n\
\x20   ids = list(range(day * 1000, day * 1000 + 250))\n\
\x20   return pa.table({'order_id': pa.array(ids, pa.int64()), 'customer_id': pa.array(ids, pa.int64()), 'amount': pa.array([i % 500 for i in ids], pa.int32()), 'status': ['new'] * 250, 'items': pa.array([None] * 250, s.field('items').type), 'order_date': pa.array([datetime.date(2026, 11, day)] * 250)}, schema=s)\n\
for day in range(1, 5): deltalake.write_deltalake('lake/main/sales/orders', day_rows(day), mode='append')\n\
print(deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table().num_rows)",
    );
    assert_eq!(n, "1000");
    // int → bigint: a write-once rewrite of the 1000 rows
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    std::fs::write(
        &orders,
        spec.replace(
            "      type: int\n      comment: Amount",
            "      type: bigint\n      comment: Amount",
        ),
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["apply", "-f", "examples/", "--progress-every", "1s"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_FAILPOINT", "slow-batch")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "1")
        .output()
        .expect("run the binary");
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("REPLACE TABLE (from itself)"),
        "{}",
        text(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.contains("REPLACE TABLE (from itself): running ") && l.contains(" of 1000 rows (")
        })
        .collect();
    assert!(!lines.is_empty(), "no line with the rows done:\n{err}");
    // once a second has passed with rows done: a rate, and the time left while rows remain
    assert!(lines.iter().any(|l| l.contains(" rows/s")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" left") && !l.contains("1000 of 1000 rows")),
        "{lines:?}"
    );
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
}

#[test]
fn a_long_step_prints_timed_progress_lines_without_a_terminal() {
    let dir = workdir();
    let d = dir.path();
    let o = Command::new(BIN)
        .args(["apply", "-f", "examples/", "--progress-every", "1s"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_FAILPOINT", "slow-step-1")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "4")
        .output()
        .expect("run the binary");
    assert_eq!(code(&o), 0, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(". CREATE TABLE: running "))
        .collect();
    assert!(lines.len() >= 2, "timed lines while step 1 ran:\n{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("running 2s") || l.contains("running 3s")),
        "{lines:?}"
    );
    // no terminal: no carriage returns or escape sequences in a log
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
}

#[test]
fn a_using_expression_that_builds_huge_values_is_refused_by_the_memory_limit() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let n = py(
        d,
        "import deltalake, pyarrow as pa, datetime\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
s = t.to_pyarrow_table().schema\n\
ids = list(range(1000))\n\
rows = pa.table({'order_id': pa.array(ids, pa.int64()), 'customer_id': pa.array(ids, pa.int64()), 'amount': pa.array(ids, pa.int32()), 'status': ['new'] * 1000, 'items': pa.array([None] * 1000, s.field('items').type), 'order_date': pa.array([datetime.date(2026, 11, 1)] * 1000)}, schema=s)\n\
deltalake.write_deltalake('lake/main/sales/orders', rows, mode='append')\n\
print(deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table().num_rows)",
    );
    assert_eq!(n, "1000");
    // every customer id becomes ~3 KB of text: ~3 MB for the batch, over a quarter of a 1 MiB budget
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let hostile = spec.replace(
        "    - name: customer_id\n      type: bigint\n",
        "    - name: customer_id\n      type: string\n      using: repeat(cast(customer_id AS string), 1000)\n",
    );
    assert_ne!(spec, hostile);
    std::fs::write(&orders, hostile).unwrap();
    let apply_with_limit = |mb: Option<&str>| {
        let mut c = Command::new(BIN);
        c.args(["apply", "-f", "examples/"])
            .current_dir(d)
            .env_remove("DELTA_OPERATOR_CONFIG");
        match mb {
            Some(mb) => c.env("DELTA_OPERATOR_LAKE_MEMORY_MB", mb),
            None => c.env_remove("DELTA_OPERATOR_LAKE_MEMORY_MB"),
        };
        c.output().expect("run the binary")
    };
    let o = apply_with_limit(Some("1"));
    let out = text(&o);
    assert_ne!(code(&o), 0, "{out}");
    assert!(
        out.contains("of the lake rewrite's memory budget of 1 MiB")
            && out.contains("DELTA_OPERATOR_LAKE_MEMORY_MB"),
        "{out}"
    );
    let kind = || {
        py(
            d,
            "import deltalake\n\
print(deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table().schema.field('customer_id').type)",
        )
    };
    assert_eq!(kind(), "int64", "the table is untouched");
    // a limit that is not a number is named, not ignored
    let o = apply_with_limit(Some("lots"));
    assert!(
        text(&o).contains("DELTA_OPERATOR_LAKE_MEMORY_MB is 'lots'"),
        "{}",
        text(&o)
    );
    // the default budget (256 MiB) lets the same conversion through
    let o = apply_with_limit(None);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_ne!(kind(), "int64");
}

#[test]
fn a_using_expression_that_makes_large_values_is_streamed_in_smaller_batches() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(append_2000_orders(d), "2000");
    // 100 KB a row: 2,000 rows in one batch would be 200 MB, over a batch's 64 MiB share of
    // the default budget; the expression's bound sizes the batches instead (335 rows)
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let large = spec.replace(
        "    - name: customer_id\n      type: bigint\n",
        "    - name: customer_id\n      type: string\n      using: repeat('x', 100000)\n",
    );
    assert_ne!(spec, large);
    std::fs::write(&orders, large).unwrap();
    let o = apply_under_gnu_time(d);
    println!("{}", text(&o).lines().last().unwrap_or_default());
    assert_eq!(code(&o), 0, "{}", text(&o));
    let made = py(
        d,
        "import deltalake, pyarrow.compute as pc\n\
t = deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table()\n\
lengths = pc.utf8_length(t.column('customer_id'))\n\
print(t.num_rows, pc.min(lengths).as_py(), pc.max(lengths).as_py())",
    );
    assert_eq!(made, "2000 100000 100000");
}

/// A CHECK being added is a scan of every row (delta-rs's add constraint) and runs in the
/// rewrite's budget: its batches are sized by what the expression's size-making calls make a
/// row (`rewrite::session_for`). `repeat(status, 100000) <> ''` over 2,000 rows whose
/// status is 'new' is 600 MB in delta-rs's own session (one batch of 8,192 rows at most, no
/// memory limit), peaking past 600 MiB; in the budget's, batches of 335 rows (~100 MB).
#[test]
fn a_check_that_makes_large_values_is_added_in_smaller_batches() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(append_2000_orders(d), "2000");
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let large = spec.replace(
        "  constraints:\n",
        "  constraints:\n    - check:\n        name: status_fits\n        expression: repeat(status, 100000) <> ''\n",
    );
    assert_ne!(spec, large);
    std::fs::write(&orders, large).unwrap();
    let o = apply_under_gnu_time(d);
    let out = text(&o);
    assert_eq!(code(&o), 0, "{out}");
    let peak_kb: u64 = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak RSS "))
        .and_then(|l| l.trim_end_matches(" KB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS line from GNU time: {out}"));
    println!("adding the CHECK peaked at {} MiB", peak_kb / 1024);
    assert!(
        peak_kb < 450 * 1024,
        "adding the CHECK peaked at {} MiB: its scan is not in the budget's batches",
        peak_kb / 1024
    );
    let has = py(
        d,
        "import deltalake\n\
c = deltalake.DeltaTable('lake/main/sales/orders').metadata().configuration\n\
print(c.get('delta.constraints.status_fits'))",
    );
    assert!(has.contains("repeat"), "the CHECK is on the table: {has}");
}

/// The sink's early flush (`lake/rewrite/sink.rs`): a rewrite of a table of many partitions
/// keeps one open file per partition, and past the files' share of the budget (a quarter:
/// 4 MiB of 16) it finishes them early. Without it the rewrite writes one file per partition
/// (a file rolls at 128 MB); with it, more and smaller files, every row kept.
#[test]
fn a_rewrite_of_many_partitions_finishes_its_files_early_within_the_budget() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // 40,000 rows of ~300 bytes over 64 order dates in 8 appends (each a file per date, so
    // every date comes back 8 times as the rewrite reads one file at a time): ~12 MB of
    // batches through the sink, 64 files open at once
    let before = py(
        d,
        "import deltalake, pyarrow as pa, datetime\n\
t = deltalake.DeltaTable('lake/main/sales/orders')\n\
s = t.to_pyarrow_table().schema\n\
n = 5000\n\
for k in range(8): ids = list(range(k * n + 1, (k + 1) * n + 1)); rows = pa.table({'order_id': pa.array(ids, pa.int64()), 'customer_id': pa.array(ids, pa.int64()), 'amount': pa.array([i % 1000 for i in ids], pa.int32()), 'status': ['%0300d' % i for i in ids], 'items': pa.array([None] * n, s.field('items').type), 'order_date': pa.array([datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 64) for i in ids])}, schema=s); deltalake.write_deltalake('lake/main/sales/orders', rows, mode='append')\n\
t = deltalake.DeltaTable('lake/main/sales/orders').to_pyarrow_table()\n\
print(t.num_rows, sum(t.column('order_id').to_pylist()), len(set(t.column('order_date').to_pylist())))",
    );
    assert_eq!(before, "40000 800020000 64");
    // a rename: a write-once rewrite of every row
    let orders = d.join("examples/orders.yaml");
    let spec = std::fs::read_to_string(&orders).unwrap();
    let renamed = spec.replace(
        "    - name: status\n      type: string\n",
        "    - name: state\n      type: string\n      renamedFrom: status\n",
    );
    assert_ne!(spec, renamed);
    std::fs::write(&orders, renamed).unwrap();
    let o = Command::new(BIN)
        .args(["apply", "-f", "examples/"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_LAKE_MEMORY_MB", "16")
        .output()
        .expect("run the binary");
    assert_eq!(code(&o), 0, "{}", text(&o));
    let after = py(
        d,
        "import deltalake\n\
dt = deltalake.DeltaTable('lake/main/sales/orders')\n\
t = dt.to_pyarrow_table()\n\
print(t.num_rows, sum(t.column('order_id').to_pylist()), len(set(t.column('order_date').to_pylist())), sum(len(v) for v in t.column('state').to_pylist()), len(dt.file_uris()))",
    );
    let figures: Vec<u64> = after
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(
        figures[..4],
        [40000, 800020000, 64, 40000 * 300],
        "every row kept: {after}"
    );
    assert!(
        figures[4] > 64,
        "the files were finished early: more files than the 64 partitions, got {}",
        figures[4]
    );
}

#[test]
fn apply_reports_an_unreadable_table_on_one_line_and_exits_1() {
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // customers' newest commit is torn; orders is fine
    let log = d.join("lake/main/sales/customers/_delta_log");
    let newest = std::fs::read_dir(&log)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .max()
        .unwrap();
    std::fs::write(&newest, "{\"commitInfo\": {\"timestamp\": 1").unwrap();
    let name = newest.file_name().unwrap().to_string_lossy().to_string();
    // the kernel appends a backtrace to its errors when RUST_BACKTRACE is set
    let o = Command::new(BIN)
        .args(["apply", "-f", "examples/"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run the binary");
    let out = text(&o);
    assert_eq!(code(&o), 1, "an unreadable table is not a success: {out}");
    let line = out
        .lines()
        .find(|l| {
            l.contains("main.sales.customers")
                && l.contains("unreadable")
                && l.contains("cannot be read")
        })
        .unwrap_or_else(|| panic!("apply names the unreadable table: {out}"));
    assert!(line.contains(&name), "names the file: {line}");
    assert!(
        out.lines().count() < 10
            && !out.contains("backtrace")
            && !out.lines().any(|l| l.trim_start().starts_with("at ")),
        "no backtrace: {out}"
    );
    // plan says the same on one line
    let o = Command::new(BIN)
        .args(["plan", "-f", "examples/"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run the binary");
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(
        !text(&o).lines().any(|l| l.trim_start().starts_with("at ")),
        "no backtrace in the plan: {}",
        text(&o)
    );
}

/// Ctrl-C (SIGINT) while a step runs: the step ends, no further step starts, the apply says
/// so and releases its tables' locks, so the next apply proceeds at once (before, the lake's
/// lock was left to expire). SIGTERM (a cancelled CI job) does the same.
#[test]
fn ctrl_c_stops_after_the_running_step_and_releases_the_locks() {
    interrupted_by("-INT");
}

#[test]
fn sigterm_stops_after_the_running_step_and_releases_the_locks() {
    interrupted_by("-TERM");
}

fn interrupted_by(signal: &str) {
    let dir = workdir();
    let d = dir.path();
    let mut cmd = Command::new(BIN);
    cmd.args(["apply", "-f", "examples/"])
        .current_dir(d)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .env("DELTA_OPERATOR_FAILPOINT", "slow-step-1")
        .env("DELTA_OPERATOR_FAILPOINT_SECONDS", "3");
    let child = support::start_paused(
        cmd,
        "step-1",
        "interrupted apply",
        std::time::Duration::from_secs(120),
    );
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args([signal, &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let o = child.wait_with_output().expect("wait");
    assert_eq!(code(&o), 130, "an interrupted apply exits 130");
    // each table's newest lock entry says released (a holder that died unreleased on this host
    // is taken over at once too, so the entries are the proof)
    for t in ["customers", "orders"] {
        let folder = d.join("lake/.locks/main/sales").join(t);
        let newest = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .flatten()
            .map(|e| e.path())
            .max()
            .expect("a lock entry");
        let entry = std::fs::read_to_string(&newest).unwrap();
        assert!(
            entry.contains("\"state\":\"released\""),
            "{t}'s lock was released by the interrupted apply: {entry}"
        );
    }
    // the first table's first step ran; the rest did not: the next apply, not willing to wait
    // for any lock, finds every table free and finishes the work
    let o = run(d, &["apply", "-f", "examples/", "--lock-wait", "0s"]);
    assert_eq!(code(&o), 0, "the locks were released: {}", text(&o));
    assert!(
        text(&o).contains("ok"),
        "what the interrupted apply left is applied now: {}",
        text(&o)
    );
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

/// A target's `defaultSchemaMode` is the mode of every DeltaSchema on it whose spec names none;
/// a spec that names one keeps it.
#[test]
fn a_target_sets_the_mode_of_the_schemas_that_name_none() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = d.join("m");
    std::fs::create_dir(&m).unwrap();
    let schema = |mode: &str| {
        format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main{mode}}}\n"
        )
    };
    std::fs::write(m.join("sales.yaml"), schema("")).unwrap();
    for t in ["kept", "gone"] {
        std::fs::write(
            m.join(format!("{t}.yaml")),
            format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: {t}}}\nspec:\n  schemaRef: sales\n  columns:\n    - {{name: id, type: bigint}}\n"),
        )
        .unwrap();
    }
    let config = |extra: &str| {
        let path = d.join(format!("config{}.yaml", extra.len()));
        std::fs::write(
            &path,
            format!(
                "targets:\n  local:\n    lake: {{root: ./lake}}\n{extra}defaultTarget: local\n"
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let strict = config("    defaultSchemaMode: strict\n");
    let plain = config("");
    let o = run(d, &["apply", "-f", "m", "--config", &strict]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    std::fs::remove_file(m.join("gone.yaml")).unwrap();
    // the strict target: the orphan is planned for its (destructive) drop
    let o = run(d, &["plan", "-f", "m", "--config", &strict]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("main.sales.gone   - destroy"),
        "{}",
        text(&o)
    );
    // the default target: additive, the orphan is kept
    let o = run(d, &["plan", "-f", "m", "--config", &plain]);
    assert!(
        text(&o).contains("main.sales.gone   · orphan, kept"),
        "{}",
        text(&o)
    );
    // a spec that names its mode keeps it on the strict target
    std::fs::write(m.join("sales.yaml"), schema(", mode: additive")).unwrap();
    let o = run(d, &["plan", "-f", "m", "--config", &strict]);
    assert!(
        text(&o).contains("main.sales.gone   · orphan, kept"),
        "{}",
        text(&o)
    );
}

/// `import --governed-only` on the lake: a table a job made (no marker) whose name matches is
/// written as a governance-only spec (scope Annotations, no column types), the operator's own
/// tables as full specs, and the first plan is only CLAIMs; after the apply nothing differs,
/// and the job's later column is never planned.
#[test]
fn an_import_with_governed_only_claims_the_jobs_table_at_annotations() {
    let dir = workdir();
    let d = dir.path();
    assert_eq!(code(&run(d, &["apply", "-f", "examples/"])), 0);
    let raw = d.join("lake/main/sales/raw_clicks");
    std::fs::create_dir_all(&raw).unwrap();
    let url = url::Url::from_directory_path(&raw).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let add_column = |name: &str| {
        rt.block_on(async {
            use deltalake::kernel::{DataType, PrimitiveType, StructField};
            let t = deltalake::open_table(url.clone()).await.unwrap();
            t.add_columns()
                .with_fields([StructField::new(
                    name,
                    DataType::Primitive(PrimitiveType::String),
                    true,
                )])
                .await
                .unwrap();
        })
    };
    rt.block_on(async {
        use deltalake::kernel::{DataType, PrimitiveType, StructField};
        deltalake::DeltaTable::try_from_url(url.clone())
            .await
            .unwrap()
            .create()
            .with_table_name("raw_clicks")
            .with_columns([StructField::new(
                "id",
                DataType::Primitive(PrimitiveType::Long),
                true,
            )])
            .await
            .unwrap();
    });
    let o = run(
        d,
        &[
            "import",
            "--schema",
            "main.sales",
            "-o",
            "imported",
            "--governed-only",
            "raw_*",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("governance-only main.sales.raw_clicks: matched --governed-only raw_*"),
        "{}",
        text(&o)
    );
    let spec = std::fs::read_to_string(d.join("imported/raw-clicks.yaml")).unwrap();
    assert!(
        spec.contains("scope: Annotations") && !spec.contains("type:"),
        "{spec}"
    );
    let orders = std::fs::read_to_string(d.join("imported/orders.yaml")).unwrap();
    assert!(
        !orders.contains("scope:") && orders.contains("type:"),
        "{orders}"
    );
    let o = run(d, &["plan", "-f", "imported/"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let steps: Vec<String> = text(&o)
        .lines()
        .filter(|l| l.trim_start().starts_with("1. ") || l.trim_start().starts_with("2. "))
        .map(str::to_string)
        .collect();
    assert_eq!(steps.len(), 1, "{}", text(&o));
    assert!(steps[0].contains("CLAIM ownership"), "{}", text(&o));
    assert_eq!(code(&run(d, &["apply", "-f", "imported/"])), 0);
    add_column("added_by_job");
    let o = run(d, &["plan", "-f", "imported/"]);
    assert_eq!(code(&o), 0, "the job's column is its own: {}", text(&o));
}

/// A target's `handOff`: `validate`, `plan` and `apply` refuse a spec that declares what it
/// hands off (naming the target and the field, exit 1), and a property the job sets under a
/// handed-off prefix is never planned, while the rest of the spec is.
#[test]
fn a_targets_hand_off_is_refused_where_declared_and_never_planned() {
    let p = support::project::Project::lake(
        "./lake",
        "    handOff: {to: the ingest job, aspects: [Comments], properties: [pipelines.]}\n",
    );
    let d = p.path();
    let config = p.config.as_str();
    let table = |extra: &str| {
        p.manifest(
            "orders.yaml",
            &format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: orders}}\nspec:\n  schemaRef: sales\n  comment: orders\n  columns:\n    - {{name: id, type: bigint}}\n{extra}"),
        );
    };
    table("");
    for cmd in ["validate", "plan", "apply"] {
        let o = run(d, &[cmd, "-f", "m", "--config", config]);
        assert_eq!(code(&o), 1, "{cmd}: {}", text(&o));
        assert!(
            text(&o).contains("spec.comment")
                && text(&o).contains("handed off to the ingest job by the target 'local'"),
            "{cmd}: {}",
            text(&o)
        );
    }
    assert!(
        !d.join("lake/main/sales/orders").exists(),
        "nothing applied"
    );
    // without the comment: applied; the job's property under the prefix is its own
    p.manifest(
        "orders.yaml",
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: orders}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: id, type: bigint}\n  properties: {delta.appendOnly: \"false\"}\n",
    );
    let o = run(d, &["apply", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(d, &["plan", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("· 0 steps ·"), "{}", text(&o));
}

/// validate = plan on names (issue 26): a column name Delta holds only with column mapping,
/// in a table whose schema targets the lake (which cannot turn mapping on for it), is
/// refused by `validate` as `plan` refuses it, both naming the column and the fix (exit 1);
/// renamed, validate passes and plan shows the table to create.
#[test]
fn validate_and_plan_both_refuse_a_name_that_needs_column_mapping_on_a_lake_target() {
    let p = support::project::Project::lake("./lake", "");
    let d = p.path();
    let config = p.config.as_str();
    let table = |column: &str| {
        p.manifest(
            "orders.yaml",
            &format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: orders}}\nspec:\n  schemaRef: sales\n  columns:\n    - {{name: id, type: bigint}}\n    - {{name: \"{column}\", type: int}}\n"),
        );
    };
    table("unit price");
    for cmd in ["validate", "plan"] {
        let o = run(d, &[cmd, "-f", "m", "--config", config]);
        let out = text(&o);
        assert_eq!(code(&o), 1, "{cmd}: {out}");
        assert!(
            out.contains("'unit price' contains ' '")
                && out.contains("unless column mapping is on")
                && out.contains("rename it"),
            "{cmd}: {out}"
        );
    }
    table("unit_price");
    let o = run(d, &["validate", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // exit 2: changes to make
    let o = run(d, &["plan", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("+ unit_price int"), "{}", text(&o));
}

/// validate = plan = apply on functions (issue 26): a CHECK calling a function the lake's
/// engine (DataFusion in delta-rs) does not have (`day`), or has only under another name
/// (`length`, DataFusion's `character_length`, which delta-rs cannot store under the alias),
/// is refused on a lake target by `validate` and `plan` before anything runs (exit 1), naming
/// the field, the function and the fix; so is a `using:` calling one. On a Databricks target
/// the same manifest is valid; with DataFusion's name the lake plans it.
#[test]
fn validate_and_plan_refuse_a_function_the_lake_lacks_on_a_lake_target() {
    let p = support::project::Project::lake("./lake", "");
    let d = p.path();
    let config = p.config.as_str();
    let table = |check: &str, using: &str| {
        p.manifest(
            "orders.yaml",
            &format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: orders}}\nspec:\n  schemaRef: sales\n  columns:\n    - {{name: id, type: bigint}}\n    - {{name: order_date, type: date}}\n    - {{name: status, type: string{using}}}\n  constraints:\n    - check: {{name: c, expression: \"{check}\"}}\n"),
        );
    };
    for (check, using, field, function, says) in [
        (
            "day(order_date) > 0",
            "",
            "spec.constraints[0].check.expression",
            "day",
            "does not have",
        ),
        (
            "length(status) > 0",
            "",
            "spec.constraints[0].check.expression",
            "length",
            "only under the name character_length",
        ),
        (
            "id > 0",
            ", using: \"ucase(status)\"",
            "spec.columns[2].using",
            "ucase",
            "does not have",
        ),
    ] {
        table(check, using);
        for cmd in ["validate", "plan"] {
            let o = run(d, &[cmd, "-f", "m", "--config", config]);
            let out = text(&o);
            assert_eq!(code(&o), 1, "{cmd} {check}: {out}");
            assert!(
                out.contains(field)
                    && out.contains(&format!("calls {function},"))
                    && out.contains("DataFusion in delta-rs")
                    && out.contains(says)
                    && out.contains("fix:"),
                "{cmd} {check}: {out}"
            );
        }
        // the same manifests on a Databricks target: valid
        let dbx = d.join("dbx.yaml");
        std::fs::write(
            &dbx,
            "targets:\n  local:\n    databricks: {host: https://x.cloud.databricks.com, warehouseId: abc, auth: {tokenEnv: MY_TOKEN}}\ndefaultTarget: local\n",
        )
        .unwrap();
        let o = run(
            d,
            &["validate", "-f", "m", "--config", dbx.to_str().unwrap()],
        );
        assert_eq!(code(&o), 0, "databricks {check}: {}", text(&o));
    }
    // DataFusion's own name: valid, and planned to create (exit 2)
    table("character_length(status) > 0", "");
    let o = run(d, &["validate", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = run(d, &["plan", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 2, "{}", text(&o));
}

/// A live table no manifest declares, and a declared table whose name is the same to a
/// reader (issue 26): `оrders` with a Cyrillic `о` beside a live `orders` that another tool
/// wrote. `validate` cannot know the live table; `plan` refuses the declared one naming both
/// (exit 1) and `apply` creates nothing; renamed, the table is planned as usual.
#[test]
fn a_declared_lookalike_of_a_live_undeclared_table_is_refused_naming_both() {
    let p = support::project::Project::lake("./lake", "");
    let d = p.path();
    let config = p.config.as_str();
    // a table another tool made: no owner marker, no manifest
    py(
        d,
        "import pyarrow as pa\nfrom deltalake import write_deltalake\nwrite_deltalake('lake/main/sales/orders', pa.table({'id': pa.array([1], pa.int64())}))\nprint('ok')",
    );
    let table = |name: &str| {
        p.manifest(
            "orders.yaml",
            &format!("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: orders-2}}\nspec:\n  schemaRef: sales\n  name: \"{name}\"\n  columns:\n    - {{name: id, type: bigint}}\n"),
        );
    };
    table("\u{43e}rders");
    let o = run(d, &["validate", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    for cmd in ["plan", "apply"] {
        let o = run(d, &[cmd, "-f", "m", "--config", config]);
        let out = text(&o);
        assert_eq!(code(&o), 1, "{cmd}: {out}");
        assert!(
            out.contains("NameLooksLikeLiveTable")
                && out.contains("table '\u{43e}rders' and the live table 'orders' of main.sales")
                && out.contains("no manifest declares")
                && out.contains("look the same")
                && out.contains("rename the declared table"),
            "{cmd}: {out}"
        );
    }
    assert!(
        !d.join("lake/main/sales/\u{43e}rders").exists(),
        "the lookalike was created"
    );
    // a name of its own: planned to create (exit 2), the live table listed as unmanaged
    table("orders_2");
    let o = run(d, &["plan", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(!text(&o).contains("NameLooksLikeLiveTable"), "{}", text(&o));
}

/// On an S3 store without conditional writes (moto with them turned off, as
/// tests/lake_s3.rs turns them off for the library), `apply` cannot take a table's lock:
/// the binary exits 1 saying the store lacks conditional writes and what to change
/// (AWS_CONDITIONAL_PUT), not "reading the tables failed", and creates nothing; with
/// them on, the same apply creates the table.
#[test]
fn apply_on_s3_without_conditional_writes_says_what_to_change() {
    let (_moto, port) = support::moto::moto();
    let p = support::project::Project::lake("s3://lake/warehouse", "");
    p.manifest(
        "orders.yaml",
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: orders}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: id, type: bigint}\n",
    );
    let on_s3 = |args: &[&str], conditional_put: Option<&str>| {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(p.path())
            .env_remove("DELTA_OPERATOR_CONFIG")
            .env_remove("AWS_CONDITIONAL_PUT")
            .envs(support::moto::env(port));
        if let Some(v) = conditional_put {
            c.env("AWS_CONDITIONAL_PUT", v);
        }
        c.output().expect("run the binary")
    };
    let config = p.config.as_str();
    let o = on_s3(&["apply", "-f", "m", "--config", config], Some("disabled"));
    let out = text(&o);
    assert_eq!(code(&o), 1, "{out}");
    assert!(
        out.contains("does not support conditional writes")
            && out.contains("leave AWS_CONDITIONAL_PUT at its default")
            && out.contains("nothing was changed")
            && !out.contains("reading the tables"),
        "{out}"
    );
    let o = on_s3(&["plan", "-f", "m", "--config", config], None);
    assert_eq!(code(&o), 2, "nothing was created: {}", text(&o));
    let o = on_s3(&["apply", "-f", "m", "--config", config], None);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

/// An apply of an approved plan killed after its first step: `apply --approve <the same id>`
/// resumes what is left, with no new approval, because every step left is a step of the
/// approved plan (the CLI recorded it before running). A step the approval did not cover is
/// still refused, and once the plan has run to the end the record is gone.
#[test]
fn an_interrupted_approved_apply_resumes_on_the_same_approval() {
    let dir = workdir();
    let d = dir.path();
    let state = d.join("state");
    let run_in_state = |args: &[&str], failpoint: Option<&str>| {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(d)
            .env_remove("DELTA_OPERATOR_CONFIG")
            .env("DELTA_OPERATOR_STATE_DIR", &state);
        if let Some(f) = failpoint {
            c.env("DELTA_OPERATOR_FAILPOINT", f);
        }
        c.output().expect("run the binary")
    };
    assert_eq!(code(&run(d, &["apply", "-f", "examples/"])), 0);
    let edit = |file: &str, from: &str, to: &str| {
        let p = d.join("examples").join(file);
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(s.contains(from), "{file}: {from}");
        std::fs::write(&p, s.replace(from, to)).unwrap();
    };
    edit(
        "customers.yaml",
        "    - name: email\n      type: string\n",
        "",
    );
    edit(
        "orders.yaml",
        "    - name: status\n      type: string\n",
        "",
    );
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let approved = plan_id(&text(&o));
    // killed right after the first step
    let o = run_in_state(
        &["apply", "-f", "examples/", "--approve", &approved],
        Some("after-step-1"),
    );
    assert_ne!(code(&o), 0, "the failpoint aborts: {}", text(&o));
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_ne!(plan_id(&text(&o)), approved, "part of the plan ran");
    // one more destructive change: not covered by the approval
    edit(
        "orders.yaml",
        "    - name: customer_id\n      type: bigint\n",
        "",
    );
    let o = run_in_state(&["apply", "-f", "examples/", "--approve", &approved], None);
    assert_eq!(
        code(&o),
        4,
        "a step the approval did not cover: {}",
        text(&o)
    );
    edit(
        "orders.yaml",
        "    - name: amount\n",
        "    - name: customer_id\n      type: bigint\n    - name: amount\n",
    );
    // what is left of the approved plan: resumed on the same approval
    let o = run_in_state(&["apply", "-f", "examples/", "--approve", &approved], None);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains(&format!("resuming the approved plan {approved}")),
        "{}",
        text(&o)
    );
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let left: Vec<_> = std::fs::read_dir(state.join("approvals"))
        .map(|r| r.flatten().collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "the record is gone once the plan ran to the end"
    );
}

/// One of two declared tables is held by another apply (by its writer name, a live process
/// here): `apply` changes the free table, leaves the held one alone, says on its own line
/// which table was not applied and who holds it, and exits 5; once the holder lets go, a
/// rerun applies the rest and exits 0.
#[tokio::test(flavor = "multi_thread")]
async fn apply_with_one_table_held_elsewhere_applies_the_other_and_exits_5() {
    use delta_operator::backend::Backend;
    use delta_operator::backend::lake::LakeBackend;
    let dir = workdir();
    let d = dir.path();
    let o = run(d, &["apply", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let lake = LakeBackend::open(d.join("lake").to_str().unwrap()).unwrap();
    let other = LakeBackend::open(d.join("lake").to_str().unwrap())
        .unwrap()
        .with_writer("the-other-apply");
    let customers = support::tref("customers");
    let orders = support::tref("orders");
    let held = other
        .begin(&customers, std::time::Duration::ZERO)
        .await
        .expect("the other apply takes customers");
    // both tables change: a new comment each
    for (file, from, to) in [
        (
            "customers.yaml",
            "One row per customer",
            "Customers, one row each",
        ),
        (
            "orders.yaml",
            "Orders as placed",
            "Orders, as they were placed",
        ),
    ] {
        let p = d.join("examples").join(file);
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(s.contains(from), "{file}: {from}");
        std::fs::write(&p, s.replace(from, to)).unwrap();
    }
    let comment = |t: delta_operator::model::TableRef| {
        let lake = &lake;
        async move {
            lake.read(
                std::slice::from_ref(&t),
                &delta_operator::backend::Extras::none(),
            )
            .await
            .expect("read")
            .pop()
            .flatten()
            .expect("the table exists")
            .comment
        }
    };
    let o = run(d, &["apply", "-f", "examples/", "--lock-wait", "1s"]);
    let out = text(&o);
    assert_eq!(code(&o), 5, "a table left to another apply exits 5: {out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("locked: "))
        .unwrap_or_else(|| panic!("a line for the held table: {out}"));
    assert!(
        line.contains("main.sales.customers was not applied")
            && line.contains("the other tables went on")
            && line.contains("the-other-apply"),
        "names the table, the holder, and that the others went on: {line}"
    );
    assert!(
        !out.lines()
            .any(|l| l.starts_with("locked: ") && l.contains("main.sales.orders")),
        "orders is not reported as held: {out}"
    );
    assert_eq!(
        comment(orders.clone()).await.as_deref(),
        Some("Orders, as they were placed"),
        "the free table is applied: {out}"
    );
    assert_eq!(
        comment(customers.clone()).await.as_deref(),
        Some("One row per customer"),
        "the held table is left alone: {out}"
    );
    other.end(held).await;
    let o = run(d, &["apply", "-f", "examples/", "--lock-wait", "1s"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(
        comment(customers).await.as_deref(),
        Some("Customers, one row each")
    );
    let o = run(d, &["plan", "-f", "examples/"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

/// Views, functions and volumes need a Unity Catalog metastore (issue 33): on a lake target a
/// DeltaView is refused by `plan` (exit 1) with `NotSupportedByBackend`, naming the view and
/// that the target has no metastore; `apply` creates nothing.
#[test]
fn a_view_on_a_lake_target_is_refused_as_not_supported() {
    let p = support::project::Project::lake("./lake", "");
    let d = p.path();
    let config = p.config.as_str();
    p.manifest(
        "recent.yaml",
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaView\nmetadata: {name: recent}\nspec:\n  schemaRef: sales\n  query: SELECT 1 AS one\n",
    );
    let o = run(d, &["plan", "-f", "m", "--config", config]);
    let out = text(&o);
    assert_eq!(code(&o), 1, "{out}");
    assert!(
        out.contains("NotSupportedByBackend")
            && out.contains("recent")
            && out.contains("Unity Catalog metastore"),
        "{out}"
    );
    let o = run(d, &["apply", "-f", "m", "--config", config]);
    assert_eq!(code(&o), 1, "{}", text(&o));
}
