//! Where the Spark Connect probes run: the backend, the scratch schema's folder,
//! this run's tables (removed afterwards) and the statements sent; and the ways a
//! probe runs a statement or reads a table back as plans read it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use delta_operator_backend::{Backend, Extras};
use delta_operator_core::model::{ObservedTable, SchemaRef, TableRef};
use delta_operator_core::plan::Action;
use delta_operator_core::plan::steps::{bound_clone_name, clone_name};
use delta_operator_spark::SparkConnectBackend;
use delta_operator_sql as sql;
use delta_operator_sql::{StatementError, StatementResult};

use crate::outcome::{Finding, Verdict, Words, held, unknown};

pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

pub struct SparkProbe {
    pub name: &'static str,
    pub docs_url: &'static str,
    pub assumes: &'static str,
    pub matters: &'static str,
    pub check: for<'a> fn(&'a SparkBench<'a>) -> CheckFuture<'a>,
}

/// Where the probes run, and what they sent.
pub struct SparkBench<'a> {
    pub(super) backend: &'a SparkConnectBackend,
    pub(super) schema: SchemaRef,
    pub(super) run: String,
    pub(super) log: Mutex<Vec<String>>,
    pub(super) made: Mutex<Vec<TableRef>>,
}

pub(super) fn words(e: &StatementError, statement: &str) -> Words {
    let (message, error_class, sql_state, statement_id) = match e {
        StatementError::Refused(w) => (
            w.message.clone(),
            w.error_code.clone(),
            w.sql_state.clone(),
            w.statement_id.clone(),
        ),
        other => (other.to_string(), None, None, None),
    };
    Words {
        message,
        error_class,
        error_code: None,
        sql_state,
        statement_id,
        statement: statement.to_string(),
    }
}

impl<'a> SparkBench<'a> {
    pub fn new(backend: &'a SparkConnectBackend, schema: SchemaRef, run: &str) -> Self {
        SparkBench {
            backend,
            schema,
            run: run.to_string(),
            log: Mutex::new(Vec::new()),
            made: Mutex::new(Vec::new()),
        }
    }

    /// This probe's scratch table (remembered, to drop afterwards).
    pub(super) fn table(&self, probe: &str) -> TableRef {
        let t = TableRef::new(
            &self.schema.catalog,
            &self.schema.schema,
            &format!("verify_{}_{probe}", self.run),
        );
        self.made
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(t.clone());
        t
    }

    pub(super) fn name(&self, t: &TableRef) -> String {
        self.backend.names().table(t)
    }

    /// The statements sent since the last call.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The scratch tables the probes made.
    pub fn made(&self) -> Vec<TableRef> {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) async fn try_exec(
        &self,
        statement: &str,
    ) -> Result<StatementResult, StatementError> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(statement.to_string());
        self.backend
            .client()
            .execute(statement, &|_: &str| {})
            .await
    }

    /// A setup statement: refused → the probe cannot decide.
    pub(super) async fn exec(&self, statement: &str) -> Result<StatementResult, Finding> {
        self.try_exec(statement)
            .await
            .map_err(|e| Finding::Unknown {
                why: "a setup statement was refused".into(),
                workspace: Some(words(&e, statement)),
            })
    }

    /// A statement we compile, sent: refused → our assumption differed.
    pub(super) async fn ours(
        &self,
        t: &TableRef,
        action: &Action,
        live: Option<&ObservedTable>,
    ) -> Verdict {
        let statements = sql::compile_for(self.backend.names(), t, action, live, &self.run)
            .map_err(|e| unknown(format!("{}: {e}", action.title())))?;
        for s in &statements {
            if let Err(e) = self.try_exec(s).await {
                return Err(Finding::Differed {
                    expected: format!("{} to be accepted", action.title()),
                    observed: "refused".into(),
                    workspace: Some(words(&e, s)),
                });
            }
        }
        held(statements.join("; "))
    }

    /// The table as plans read it (delta-rs).
    pub(super) async fn read(&self, t: &TableRef) -> Result<ObservedTable, Finding> {
        match self
            .backend
            .read(std::slice::from_ref(t), &Extras::none())
            .await
        {
            Ok(mut v) => v
                .pop()
                .flatten()
                .ok_or_else(|| unknown(format!("{t} is not there after its CREATE"))),
            Err(e) => Err(unknown(format!("reading {t} with delta-rs: {e}"))),
        }
    }

    pub(super) async fn count(&self, t: &TableRef) -> Result<i64, Finding> {
        let r = self
            .exec(&format!("SELECT count(*) FROM {}", self.name(t)))
            .await?;
        r.rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| unknown("count(*) returned no number"))
    }

    /// A two-column table with three rows.
    pub(super) async fn seeded(&self, probe: &str) -> Result<TableRef, Finding> {
        let t = self.table(probe);
        let n = self.name(&t);
        self.exec(&format!("CREATE TABLE {n} (a INT, b STRING) USING DELTA"))
            .await?;
        self.exec(&format!(
            "INSERT INTO {n} VALUES (1, 'x'), (2, 'y'), (3, NULL)"
        ))
        .await?;
        Ok(t)
    }

    /// Removes the scratch tables (folders under the root), through the lake.
    pub async fn clean_up(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for t in self.made() {
            for name in [
                t.table.clone(),
                bound_clone_name(&clone_name(&t.table), Some(1)),
            ] {
                let dir = TableRef::new(&t.catalog, &t.schema, &name);
                if let Err(e) = self.backend.lake().remove_table_folder(&dir).await {
                    notes.push(format!("could not remove {dir}: {e}"));
                }
            }
        }
        notes
    }
}

pub(super) fn columns(t: &ObservedTable) -> String {
    t.columns
        .iter()
        .map(|c| format!("{} {}", c.name, c.data_type))
        .collect::<Vec<_>>()
        .join(", ")
}
