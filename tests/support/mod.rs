//! Shared helpers for tests against real Delta tables in temp dirs.
#![allow(dead_code)]

pub mod e2e;
pub mod moto;
pub mod project;
pub mod scenarios;
pub mod spark;
pub mod target;
pub mod warehouse;

use std::sync::Arc;

use delta_operator::apply::{ApplyError, ApplyReport, Options, StepStatus, apply};
use delta_operator::backend::lake::LakeBackend;
use delta_operator::backend::{Backend, Extras};
use delta_operator::engine::{Inputs, lower, read_and_plan};
use delta_operator::model::{ObservedTable, TableRef};
use delta_operator::plan::Plan;
use delta_operator::plan::gate::Policy;
use delta_operator::spec::load::{Manifests, load_str};
use deltalake::arrow::array::{ArrayRef, RecordBatch};
use deltalake::arrow::datatypes::{Field, Schema};
use deltalake::datafusion::prelude::SessionContext;
use deltalake::protocol::SaveMode;
use url::Url;

/// The venv's Python (deltalake, pyarrow, moto), made by `make test`.
pub fn python() -> std::path::PathBuf {
    let p = std::env::var_os("DELTA_OPERATOR_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/delta-operator/venv/bin/python")
        });
    assert!(
        p.exists(),
        "no Python with deltalake and moto at {}: run `make test`, which installs them (or set DELTA_OPERATOR_PYTHON)",
        p.display()
    );
    p
}

/// A finished process's stdout and stderr, as one text.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a Python script (the venv's `deltalake`) in `dir`; its stdout, trimmed.
pub fn py(dir: &std::path::Path, script: &str) -> String {
    // exit without interpreter teardown: deltalake's runtime can abort there ("terminate called
    // without an active exception") after the script's work is done and printed
    let script = format!("{script}\nimport os, sys\nsys.stdout.flush()\nos._exit(0)");
    let o = std::process::Command::new(python())
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .output()
        .expect("python");
    assert!(o.status.success(), "python failed:\n{}", output_text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A batch in `table`'s schema: the named columns cast to their types, NULL in the others.
pub fn batch_for(table: &deltalake::DeltaTable, columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;
    let schema: Schema = table
        .snapshot()
        .unwrap()
        .schema()
        .as_ref()
        .try_into_arrow()
        .unwrap();
    let rows = columns.first().map_or(0, |(_, a)| a.len());
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for f in schema.fields() {
        let given = columns
            .iter()
            .find(|(n, _)| *n == f.name())
            .map(|(_, a)| a.clone());
        let a = match given {
            Some(a) => deltalake::arrow::compute::cast(&a, f.data_type()).unwrap(),
            None => deltalake::arrow::array::new_null_array(f.data_type(), rows),
        };
        fields.push(Field::new(f.name(), f.data_type().clone(), f.is_nullable()));
        arrays.push(a);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
}

pub struct Lake {
    pub dir: tempfile::TempDir,
    pub backend: LakeBackend,
}

impl Lake {
    /// A lake whose schema `main.sales` (`SCHEMA`) exists, as the warehouse
    /// harness creates its schema: the tests here are about tables; creating an
    /// absent schema is `tests/lake_schema.rs`'s.
    pub fn new() -> Self {
        let lake = Self::empty();
        std::fs::create_dir_all(lake.dir.path().join("main/sales")).expect("the schema's folder");
        lake
    }

    /// A lake with nothing in it, not even the schema's folder.
    pub fn empty() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend = LakeBackend::open(dir.path().to_str().unwrap()).expect("lake");
        Lake { dir, backend }
    }

    pub async fn plan(&self, inputs: &Inputs) -> Plan {
        read_and_plan(&self.backend, inputs).await.expect("read").0
    }

    /// Applies; `approve` approves the current plan when it needs it.
    pub async fn apply(&self, inputs: &Inputs, approve: bool) -> Result<ApplyReport, ApplyError> {
        let id = if approve {
            Some(self.plan(inputs).await.id)
        } else {
            None
        };
        let (_, report) = apply(&self.backend, inputs, None, id.as_deref(), &options()).await?;
        if let Some(failed) = report
            .steps
            .iter()
            .find(|s| matches!(s.status, StepStatus::Failed { .. }))
        {
            panic!("step failed: {failed:?}");
        }
        Ok(report)
    }

    pub async fn apply_may_fail(
        &self,
        inputs: &Inputs,
        approve: bool,
    ) -> Result<ApplyReport, ApplyError> {
        let id = if approve {
            Some(self.plan(inputs).await.id)
        } else {
            None
        };
        apply(&self.backend, inputs, None, id.as_deref(), &options())
            .await
            .map(|(_, r)| r)
    }

    pub async fn read(&self, t: &TableRef) -> Option<ObservedTable> {
        self.backend
            .read(std::slice::from_ref(t), &Extras::none())
            .await
            .expect("read")
            .pop()
            .flatten()
    }

    pub fn url(&self, t: &TableRef) -> Url {
        Url::from_directory_path(self.backend.table_path(t)).unwrap()
    }

    /// Appends rows with delta-rs itself (a writer outside the operator);
    /// columns not given are NULL.
    pub async fn append(&self, t: &TableRef, columns: Vec<(&str, ArrayRef)>) {
        let table = deltalake::open_table(self.url(t)).await.expect("open");
        let batch = batch_for(&table, columns);
        table
            .write(vec![batch])
            .with_save_mode(SaveMode::Append)
            .await
            .expect("append");
    }

    /// Runs SQL over the table (registered as `t`) and returns the rows as strings.
    pub async fn query(&self, t: &TableRef, sql: &str) -> Vec<String> {
        let table = deltalake::open_table(self.url(t)).await.expect("open");
        let ctx = SessionContext::new();
        table.update_datafusion_session(&ctx.state()).unwrap();
        ctx.register_table("t", table.table_provider().await.unwrap())
            .unwrap();
        let batches = ctx
            .sql(sql)
            .await
            .expect("sql")
            .collect()
            .await
            .expect("collect");
        let text = deltalake::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        text.lines()
            .filter(|l| l.starts_with('|'))
            .skip(1)
            .map(|l| {
                l.split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }

    pub async fn count(&self, t: &TableRef) -> i64 {
        self.query(t, "SELECT count(*) FROM t").await[0]
            .parse()
            .unwrap()
    }

    pub async fn version(&self, t: &TableRef) -> u64 {
        self.backend.version(t).await.unwrap().unwrap()
    }
}

/// Auto policy, a short lock wait, no events.
pub fn options() -> Options<'static> {
    Options {
        policy: Policy::Auto,
        lock_wait: std::time::Duration::from_secs(2),
        on_event: &|_| {},
        may_continue: &|| true,
        fence: None,
    }
}

/// Lowers manifests given as YAML text (several documents).
pub fn manifests(yaml: &str) -> Inputs {
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    load_str("test.yaml", yaml, &mut m, &mut errors);
    assert!(errors.is_empty(), "load errors: {errors:#?}");
    lower(&m).unwrap_or_else(|e| panic!("invalid manifests: {e:#?}"))
}

pub const SCHEMA: &str = "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {name: sales}
spec: {catalog: main}
";

pub const STRICT_SCHEMA: &str = "apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {name: sales}
spec: {catalog: main, mode: strict}
";

/// A DeltaTable manifest named `name` with the given spec body (YAML, indented by 2).
pub fn table(name: &str, body: &str) -> String {
    format!(
        "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: {name}}}\nspec:\n  schemaRef: sales\n{body}\n"
    )
}

pub fn tref(name: &str) -> TableRef {
    TableRef::new("main", "sales", name)
}

/// Starts `cmd` (the binary, its environment naming `DELTA_OPERATOR_FAILPOINT=slow-<point>`)
/// and returns once it has reached that failpoint, for a test to act while it waits there.
/// Its stderr is echoed as `label: …` (so `wait_with_output` returns its stdout only).
pub fn start_paused(
    cmd: std::process::Command,
    point: &str,
    label: &'static str,
    within: std::time::Duration,
) -> std::process::Child {
    let (child, reached) = start_watching(cmd, point, label);
    reached_again(child, &reached, point, label, within)
}

/// Starts `cmd` as [`start_paused`] does, at once: the receiver gets one message each time
/// the process reaches the failpoint `slow-<point>` (a point inside a loop is reached once a round).
pub fn start_watching(
    mut cmd: std::process::Command,
    point: &str,
    label: &'static str,
) -> (std::process::Child, std::sync::mpsc::Receiver<()>) {
    use std::io::BufRead;
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("run the binary");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let wanted = format!("failpoint slow-{point}");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains(&wanted) {
                let _ = tx.send(());
            }
            eprintln!("{label}: {line}");
        }
    });
    (child, rx)
}

/// Waits until the process of [`start_watching`] reaches its failpoint once more (killing it
/// and failing the test if it does not within `within`), and hands the process back.
pub fn reached_again(
    mut child: std::process::Child,
    reached: &std::sync::mpsc::Receiver<()>,
    point: &str,
    label: &'static str,
    within: std::time::Duration,
) -> std::process::Child {
    if reached.recv_timeout(within).is_err() {
        let _ = child.kill();
        panic!("{label} did not reach the failpoint slow-{point} within {within:?}");
    }
    child
}
