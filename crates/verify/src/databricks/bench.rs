//! Where the Databricks probes run: the client, the scratch schema, a principal
//! for grants, the statements of the probe now running; and the ways a probe runs
//! a statement (`setup`, `must`, `refused`, `attempt`), each turning the
//! workspace's answer into the verdict it means for that probe.

use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;

use serde_json::Value;

use delta_operator_core::model::{ObservedTable, SchemaRef, TableRef};
use delta_operator_core::plan::Action;
use delta_operator_databricks::client::{ClientError, DatabricksClient};
use delta_operator_databricks::error::WorkspaceError;
use delta_operator_databricks::{DatabricksBackend, read};
use delta_operator_sql as sql;
use delta_operator_sql::StatementResult;

use crate::outcome::{Finding, Words, differed, short, unknown};

/// Where probes run: the client, the scratch schema, a principal for grants,
/// and the statements of the probe now running.
pub struct Bench {
    pub(crate) backend: DatabricksBackend,
    pub schema: SchemaRef,
    /// A principal grants are made to (it must exist in the account).
    pub principal: String,
    /// Appended to every object name, so runs never collide (and `--keep` can be rerun).
    pub run_id: String,
    pub(crate) log: StdMutex<Vec<String>>,
    pub(crate) created: StdMutex<Vec<(Kind, String)>>,
}

/// Objects a probe created, for the cleanup of a schema that existed before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Table,
    View,
    Function,
}

/// A probe's table: its reference, its quoted name and its REST full name.
#[derive(Debug, Clone)]
pub struct Tbl {
    pub r: TableRef,
    /// `` `cat`.`sch`.`name` ``
    pub q: String,
    /// `cat.sch.name` for Unity Catalog REST.
    pub full: String,
}

/// Why a statement failed.
enum Fail {
    Refused(WorkspaceError),
    Broken(String),
}

impl Bench {
    pub fn new(
        backend: DatabricksBackend,
        schema: SchemaRef,
        principal: &str,
        run_id: &str,
    ) -> Self {
        Bench {
            backend,
            schema,
            principal: principal.to_string(),
            run_id: run_id.to_string(),
            log: StdMutex::new(vec![]),
            created: StdMutex::new(vec![]),
        }
    }

    pub fn client(&self) -> &DatabricksClient {
        self.backend.client()
    }

    /// The statements sent since the last call.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn created(&self) -> Vec<(Kind, String)> {
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The scratch schema, quoted.
    pub fn schema_q(&self) -> String {
        format!(
            "{}.{}",
            sql::ident(&self.schema.catalog),
            sql::ident(&self.schema.schema)
        )
    }

    fn object(&self, stem: &str, kind: Kind) -> Tbl {
        let name = format!("{stem}_{}", self.run_id);
        let r = TableRef::new(&self.schema.catalog, &self.schema.schema, &name);
        let t = Tbl {
            q: sql::table_name(&r),
            full: format!("{}.{}.{}", r.catalog, r.schema, r.table),
            r,
        };
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((kind, t.q.clone()));
        t
    }

    /// A table name for this run (recorded for cleanup).
    pub fn table(&self, stem: &str) -> Tbl {
        self.object(stem, Kind::Table)
    }

    pub fn view(&self, stem: &str) -> Tbl {
        self.object(stem, Kind::View)
    }

    pub fn function(&self, stem: &str) -> Tbl {
        self.object(stem, Kind::Function)
    }

    async fn run(&self, statement: &str) -> Result<StatementResult, Fail> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(statement.to_string());
        let progress = |m: &str| eprintln!("      {m}");
        match self.client().execute(statement, &progress).await {
            Ok(r) => Ok(r),
            Err(ClientError::Workspace(w)) => Err(Fail::Refused(*w)),
            Err(e) => Err(Fail::Broken(e.to_string())),
        }
    }

    /// A statement outside the probes (schema setup and cleanup).
    pub async fn exec(&self, statement: &str) -> Result<StatementResult, ClientError> {
        let progress = |m: &str| eprintln!("      {m}");
        self.client().execute(statement, &progress).await
    }

    /// A statement the probe needs before it can decide anything: a refusal makes it Unknown.
    pub async fn setup(&self, statement: &str) -> Result<StatementResult, Finding> {
        match self.run(statement).await {
            Ok(r) => Ok(r),
            Err(Fail::Refused(w)) => Err(Finding::Unknown {
                why: format!(
                    "a statement the probe needs was refused: {}",
                    short(statement)
                ),
                workspace: Some(Words::of(&w, statement)),
            }),
            Err(Fail::Broken(m)) => Err(unknown(format!("{}: {m}", short(statement)))),
        }
    }

    /// A statement we assume is accepted: a refusal is the difference, in the workspace's words.
    pub async fn must(&self, statement: &str, expected: &str) -> Result<StatementResult, Finding> {
        match self.run(statement).await {
            Ok(r) => Ok(r),
            Err(Fail::Refused(w)) => Err(Finding::Differed {
                expected: expected.to_string(),
                observed: format!("refused: {}", short(statement)),
                workspace: Some(Words::of(&w, statement)),
            }),
            Err(Fail::Broken(m)) => Err(unknown(format!("{}: {m}", short(statement)))),
        }
    }

    /// A statement we assume is refused: acceptance is the difference.
    pub async fn refused(
        &self,
        statement: &str,
        expected: &str,
    ) -> Result<WorkspaceError, Finding> {
        match self.run(statement).await {
            Ok(_) => Err(differed(
                expected,
                format!("accepted: {}", short(statement)),
            )),
            Err(Fail::Refused(w)) => Ok(w),
            Err(Fail::Broken(m)) => Err(unknown(format!("{}: {m}", short(statement)))),
        }
    }

    /// Either answer is information; only a broken connection stops the probe.
    pub async fn attempt(
        &self,
        statement: &str,
    ) -> Result<Result<StatementResult, WorkspaceError>, Finding> {
        match self.run(statement).await {
            Ok(r) => Ok(Ok(r)),
            Err(Fail::Refused(w)) => Ok(Err(w)),
            Err(Fail::Broken(m)) => Err(unknown(format!("{}: {m}", short(statement)))),
        }
    }

    /// The first cell of a read (setup semantics).
    pub async fn scalar(&self, statement: &str) -> Result<Option<String>, Finding> {
        let r = self.setup(statement).await?;
        Ok(r.rows
            .first()
            .and_then(|row| row.first().cloned())
            .flatten())
    }

    /// `DESCRIBE DETAIL` as column → value.
    pub async fn detail(&self, t: &Tbl) -> Result<BTreeMap<String, Option<String>>, Finding> {
        let r = self.setup(&format!("DESCRIBE DETAIL {}", t.q)).await?;
        let row = r
            .rows
            .first()
            .ok_or_else(|| unknown("DESCRIBE DETAIL returned no row"))?;
        Ok(r.columns.iter().cloned().zip(row.iter().cloned()).collect())
    }

    /// The table as our read sees it (Unity Catalog REST `tables/{name}`, parsed by `read`).
    pub async fn observe(&self, t: &Tbl) -> Result<ObservedTable, Finding> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("GET /api/2.1/unity-catalog/tables/{}", t.full));
        let info = match self.client().get_table(&t.full).await {
            Ok(Some(info)) => info,
            Ok(None) => {
                return Err(unknown(format!(
                    "{} is not in the Unity Catalog tables API",
                    t.full
                )));
            }
            Err(ClientError::Workspace(w)) => {
                return Err(Finding::Unknown {
                    why: format!("reading {} failed", t.full),
                    workspace: Some(Words::of(&w, &format!("GET tables/{}", t.full))),
                });
            }
            Err(e) => return Err(unknown(format!("reading {}: {e}", t.full))),
        };
        read::table_from_info(&self.schema, &info)
            .map_err(|e| unknown(format!("our read cannot parse {}: {e}", t.full)))
    }

    /// The table's Delta version (as the executor records a restore point).
    pub async fn version(&self, t: &Tbl) -> Result<u64, Finding> {
        let r = self
            .setup(&sql::history_head(&sql::Names::Catalog, &t.r))
            .await?;
        read::history_version(&r.columns, &r.rows)
            .ok_or_else(|| unknown("DESCRIBE HISTORY gave no version"))
    }

    /// The statements our compiler writes for an action, each run with `must`.
    pub async fn compiled(
        &self,
        t: &Tbl,
        action: &Action,
        live: Option<&ObservedTable>,
        expected: &str,
    ) -> Result<Vec<String>, Finding> {
        let stmts = sql::compile(&t.r, action, live)
            .map_err(|e| unknown(format!("our compiler writes no SQL for this: {e}")))?;
        for s in &stmts {
            self.must(s, expected).await?;
        }
        Ok(stmts)
    }

    pub async fn count(&self, t: &Tbl) -> Result<u64, Finding> {
        let v = self
            .scalar(&format!("SELECT count(*) FROM {}", t.q))
            .await?;
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| unknown("count(*) gave no number"))
    }

    /// `SHOW GRANTS ON <kind> name`: (principal, privilege) pairs.
    pub async fn grants(&self, kind: &str, name: &str) -> Result<Vec<(String, String)>, Finding> {
        let r = self.setup(&format!("SHOW GRANTS ON {kind} {name}")).await?;
        let p = r.column("Principal").unwrap_or(0);
        let a = r.column("ActionType").unwrap_or(1);
        Ok(r.rows
            .iter()
            .map(|row| (cell(row, p), cell(row, a)))
            .collect())
    }

    /// Tags of a table or view from `information_schema.table_tags`.
    pub async fn table_tags(&self, t: &Tbl) -> Result<Vec<(String, String)>, Finding> {
        let r = self
            .setup(&format!(
                "SELECT tag_name, tag_value FROM {}.information_schema.table_tags WHERE schema_name = {} AND table_name = {}",
                sql::ident(&self.schema.catalog),
                sql::literal(&self.schema.schema),
                sql::literal(&t.r.table)
            ))
            .await?;
        Ok(r.rows
            .iter()
            .map(|row| (cell(row, 0), cell(row, 1)))
            .collect())
    }

    pub async fn column_tags(&self, t: &Tbl) -> Result<Vec<(String, String, String)>, Finding> {
        let r = self
            .setup(&format!(
                "SELECT column_name, tag_name, tag_value FROM {}.information_schema.column_tags WHERE schema_name = {} AND table_name = {}",
                sql::ident(&self.schema.catalog),
                sql::literal(&self.schema.schema),
                sql::literal(&t.r.table)
            ))
            .await?;
        Ok(r.rows
            .iter()
            .map(|row| (cell(row, 0), cell(row, 1), cell(row, 2)))
            .collect())
    }
}

pub(crate) fn cell(row: &[Option<String>], i: usize) -> String {
    row.get(i).cloned().flatten().unwrap_or_default()
}

pub(crate) fn words_line(w: &WorkspaceError) -> String {
    w.error_class()
        .map(str::to_string)
        .unwrap_or_else(|| short(&w.message))
}

/// A JSON array cell (`["a","b"]`) as strings.
pub(crate) fn json_list(v: Option<&Option<String>>) -> Vec<String> {
    v.and_then(|v| v.as_deref())
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|v| {
            v.as_array().map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_array_cell_reads_as_strings_and_anything_else_as_none() {
        let cell = |s: &str| Some(s.to_string());
        assert_eq!(json_list(Some(&cell(r#"["a","b"]"#))), ["a", "b"]);
        assert_eq!(json_list(Some(&cell(r#"["a",1]"#))), ["a"]);
        assert!(json_list(Some(&cell("not json"))).is_empty());
        assert!(json_list(Some(&cell(r#"{"a":1}"#))).is_empty());
        assert!(json_list(Some(&None)).is_empty());
        assert!(json_list(None).is_empty());
    }

    #[test]
    fn a_missing_or_null_cell_is_empty() {
        let row = vec![Some("x".to_string()), None];
        assert_eq!(cell(&row, 0), "x");
        assert_eq!(cell(&row, 1), "");
        assert_eq!(cell(&row, 2), "");
    }

    #[test]
    fn a_refusal_is_named_by_its_class_else_by_its_message() {
        let mut e = WorkspaceError {
            http_status: None,
            error_code: None,
            sql_state: None,
            message: "[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] too many".into(),
            request_id: None,
            statement_id: None,
        };
        assert_eq!(words_line(&e), "DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS");
        e.message = "no class\nhere".into();
        assert_eq!(words_line(&e), "no class here");
    }
}
