//! Assumption probes for `delta-operator verify`: each one checks, in a
//! scratch schema of a real workspace, one behaviour of Databricks that our
//! plans rely on (stevin's 24, docs/architecture.md §9, then ours, taken from
//! `Capabilities::databricks()`, the rules and the SQL we compile).
//!
//! Probes are data: a name, the documentation page, one sentence on what in
//! our plans depends on it, flags, and a check. A check says
//! - `Held` when the workspace behaved as we assume (with the evidence),
//! - `Differed` when it did not, with the workspace's own words when it
//!   refused something we expected it to accept,
//! - `Unknown` when it could not be decided (a setup statement was refused,
//!   the control case failed, a statement is not supported there).
//!
//! Every statement goes through the same client as plans and applies, and is
//! written with the SQL module's quoting (`sql::ident`, `sql::literal`,
//! `sql::table_name`); where a probe checks a statement we compile, it uses
//! `sql::compile` itself, so the probe tests what apply would send.

// A probe's verdict is `Ok(outcome)` or `Err(outcome)`, so `?` ends a probe early
// with what it found; a few hundred bytes per probe, dozens of probes a run.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex as StdMutex;

use serde::Serialize;
use serde_json::Value;

use crate::backend::databricks::client::{ClientError, DatabricksClient};
use crate::backend::databricks::error::WorkspaceError;
use crate::backend::databricks::{DatabricksBackend, read};
use crate::backend::sql::{self, StatementResult};
use crate::model::type_syntax::parse_type;
use crate::model::widening::can_widen_in_place;
use crate::model::{
    Check, DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedTable, PrimaryKey,
    SchemaRef, TableRef,
};
use crate::plan::Action;
use crate::plan::change::FieldPath;

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The workspace behaves as our plans assume.
    Held { evidence: String },
    /// It does not; `workspace` holds its words when it refused a statement.
    Differed {
        expected: String,
        observed: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        workspace: Option<Words>,
    },
    /// It could not be decided.
    Unknown {
        why: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        workspace: Option<Words>,
    },
}

impl Outcome {
    pub fn held(&self) -> bool {
        matches!(self, Outcome::Held { .. })
    }

    /// `held`, `differed` or `unknown`.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Held { .. } => "held",
            Outcome::Differed { .. } => "differed",
            Outcome::Unknown { .. } => "unknown",
        }
    }

    pub fn workspace(&self) -> Option<&Words> {
        match self {
            Outcome::Held { .. } => None,
            Outcome::Differed { workspace, .. } | Outcome::Unknown { workspace, .. } => {
                workspace.as_ref()
            }
        }
    }
}

/// A refusal as the workspace wrote it (the message verbatim).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Words {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement_id: Option<String>,
    /// The statement that was refused.
    pub statement: String,
}

impl Words {
    fn of(w: &WorkspaceError, statement: &str) -> Self {
        Words {
            message: w.message.clone(),
            error_class: w.error_class().map(str::to_string),
            error_code: w.error_code.clone(),
            sql_state: w.sql_state.clone(),
            statement_id: w.statement_id.clone(),
            statement: statement.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flags {
    /// Takes minutes (pipelines).
    pub slow: bool,
    /// Leaves a dropped table that counts against the quota until its retention ends.
    pub keeps_dropped: bool,
    /// Creates an ABAC policy (needs MANAGE on the schema).
    pub creates_policy: bool,
}

/// A check's result: `Err` is the early exit of a check (usually Unknown or Differed).
pub type Verdict = Result<Outcome, Outcome>;
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;
pub type CheckFn = fn(&Bench) -> CheckFuture<'_>;

pub struct Probe {
    pub name: &'static str,
    pub docs_url: &'static str,
    /// The assumption, as a sentence.
    pub assumes: &'static str,
    /// What in our plans depends on it.
    pub matters: &'static str,
    pub flags: Flags,
    pub check: CheckFn,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Where probes run: the client, the scratch schema, a principal for grants,
/// and the statements of the probe now running.
pub struct Bench {
    backend: DatabricksBackend,
    pub schema: SchemaRef,
    /// A principal grants are made to (it must exist in the account).
    pub principal: String,
    /// Appended to every object name, so runs never collide (and `--keep` can be rerun).
    pub run_id: String,
    log: StdMutex<Vec<String>>,
    created: StdMutex<Vec<(Kind, String)>>,
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

fn short(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 140 {
        format!("{}…", one.chars().take(140).collect::<String>())
    } else {
        one
    }
}

pub fn held(evidence: impl Into<String>) -> Verdict {
    Ok(Outcome::Held {
        evidence: evidence.into(),
    })
}

pub fn differed(expected: impl Into<String>, observed: impl Into<String>) -> Outcome {
    Outcome::Differed {
        expected: expected.into(),
        observed: observed.into(),
        workspace: None,
    }
}

pub fn unknown(why: impl Into<String>) -> Outcome {
    Outcome::Unknown {
        why: why.into(),
        workspace: None,
    }
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
    pub async fn setup(&self, statement: &str) -> Result<StatementResult, Outcome> {
        match self.run(statement).await {
            Ok(r) => Ok(r),
            Err(Fail::Refused(w)) => Err(Outcome::Unknown {
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
    pub async fn must(&self, statement: &str, expected: &str) -> Result<StatementResult, Outcome> {
        match self.run(statement).await {
            Ok(r) => Ok(r),
            Err(Fail::Refused(w)) => Err(Outcome::Differed {
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
    ) -> Result<WorkspaceError, Outcome> {
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
    ) -> Result<Result<StatementResult, WorkspaceError>, Outcome> {
        match self.run(statement).await {
            Ok(r) => Ok(Ok(r)),
            Err(Fail::Refused(w)) => Ok(Err(w)),
            Err(Fail::Broken(m)) => Err(unknown(format!("{}: {m}", short(statement)))),
        }
    }

    /// The first cell of a read (setup semantics).
    pub async fn scalar(&self, statement: &str) -> Result<Option<String>, Outcome> {
        let r = self.setup(statement).await?;
        Ok(r.rows
            .first()
            .and_then(|row| row.first().cloned())
            .flatten())
    }

    /// `DESCRIBE DETAIL` as column → value.
    pub async fn detail(&self, t: &Tbl) -> Result<BTreeMap<String, Option<String>>, Outcome> {
        let r = self.setup(&format!("DESCRIBE DETAIL {}", t.q)).await?;
        let row = r
            .rows
            .first()
            .ok_or_else(|| unknown("DESCRIBE DETAIL returned no row"))?;
        Ok(r.columns.iter().cloned().zip(row.iter().cloned()).collect())
    }

    /// The table as our read sees it (Unity Catalog REST `tables/{name}`, parsed by `read`).
    pub async fn observe(&self, t: &Tbl) -> Result<ObservedTable, Outcome> {
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
                return Err(Outcome::Unknown {
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
    pub async fn version(&self, t: &Tbl) -> Result<u64, Outcome> {
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
    ) -> Result<Vec<String>, Outcome> {
        let stmts = sql::compile(&t.r, action, live)
            .map_err(|e| unknown(format!("our compiler writes no SQL for this: {e}")))?;
        for s in &stmts {
            self.must(s, expected).await?;
        }
        Ok(stmts)
    }

    pub async fn count(&self, t: &Tbl) -> Result<u64, Outcome> {
        let v = self
            .scalar(&format!("SELECT count(*) FROM {}", t.q))
            .await?;
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| unknown("count(*) gave no number"))
    }

    /// `SHOW GRANTS ON <kind> name`: (principal, privilege) pairs.
    pub async fn grants(&self, kind: &str, name: &str) -> Result<Vec<(String, String)>, Outcome> {
        let r = self.setup(&format!("SHOW GRANTS ON {kind} {name}")).await?;
        let p = r.column("Principal").unwrap_or(0);
        let a = r.column("ActionType").unwrap_or(1);
        Ok(r.rows
            .iter()
            .map(|row| (cell(row, p), cell(row, a)))
            .collect())
    }

    /// Tags of a table or view from `information_schema.table_tags`.
    pub async fn table_tags(&self, t: &Tbl) -> Result<Vec<(String, String)>, Outcome> {
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

    pub async fn column_tags(&self, t: &Tbl) -> Result<Vec<(String, String, String)>, Outcome> {
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

fn cell(row: &[Option<String>], i: usize) -> String {
    row.get(i).cloned().flatten().unwrap_or_default()
}

fn ty(s: &str) -> DataType {
    parse_type(s).unwrap_or_else(|e| panic!("probe type '{s}': {e}"))
}

fn words_line(w: &WorkspaceError) -> String {
    w.error_class()
        .map(str::to_string)
        .unwrap_or_else(|| short(&w.message))
}

/// A JSON array cell (`["a","b"]`) as strings.
fn json_list(v: Option<&Option<String>>) -> Vec<String> {
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

macro_rules! probe {
    ($name:literal, $url:literal, $assumes:literal, $matters:literal, $flags:expr, $f:ident) => {{
        fn check(b: &Bench) -> CheckFuture<'_> {
            Box::pin($f(b))
        }
        Probe {
            name: $name,
            docs_url: $url,
            assumes: $assumes,
            matters: $matters,
            flags: $flags,
            check,
        }
    }};
}

const NONE: Flags = Flags {
    slow: false,
    keeps_dropped: false,
    creates_policy: false,
};
const SLOW: Flags = Flags {
    slow: true,
    keeps_dropped: false,
    creates_policy: false,
};
const KEEPS_DROPPED: Flags = Flags {
    slow: false,
    keeps_dropped: true,
    creates_policy: false,
};
const CREATES_POLICY: Flags = Flags {
    slow: false,
    keeps_dropped: false,
    creates_policy: true,
};

/// Every probe, in the order they run: stevin's 24 (docs/architecture.md §9), then ours.
pub fn all() -> Vec<Probe> {
    vec![
        // ---- stevin's 24, adapted to what our planner assumes
        probe!(
            "replace_reads_itself",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-table-using",
            "CREATE OR REPLACE TABLE t … AS SELECT … FROM t reads the table it replaces",
            "A rewrite that converts nothing is one write-once REPLACE from the table itself; if refused, every rewrite must stage a copy first.",
            NONE,
            replace_reads_itself
        ),
        probe!(
            "replace_keeps_tags_and_grants",
            "https://docs.databricks.com/aws/en/delta/drop-table",
            "CREATE OR REPLACE keeps table tags, same-name column tags and grants",
            "The REPLACE step of a rewrite plans no re-tagging or re-granting; if they are lost, the table silently loses its governance.",
            NONE,
            replace_keeps_tags_and_grants
        ),
        probe!(
            "restore_puts_back_replaced",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-restore",
            "RESTORE TABLE … TO VERSION AS OF v brings back a table's schema and rows after a REPLACE",
            "The undo of every rewrite and destructive step is RESTORE to the version recorded before it.",
            NONE,
            restore_puts_back_replaced
        ),
        probe!(
            "clone_outlives_rewrite",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-clone",
            "a shallow clone keeps reading its rows after the source is replaced",
            "cloneBeforeRewrite takes a shallow clone as the backup of a rewrite; it is only a backup if it survives the REPLACE.",
            NONE,
            clone_outlives_rewrite
        ),
        probe!(
            "replace_view_drops_governance",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-view",
            "CREATE OR REPLACE VIEW drops the view's tags, grants and properties",
            "Views are not managed yet; when they are, a replaced view must have its tags, grants and properties re-applied (stevin's rule).",
            NONE,
            replace_view_drops_governance
        ),
        probe!(
            "replace_function_drops_grants",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-sql-function",
            "CREATE OR REPLACE FUNCTION drops the function's grants",
            "Mask and row-filter functions are named, not managed; replacing one outside the operator removes EXECUTE, which breaks reads of masked tables.",
            NONE,
            replace_function_drops_grants
        ),
        probe!(
            "nested_not_null_alter",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "a nested field's NOT NULL is dropped and set with an ordinary ALTER COLUMN s.f",
            "Nested nullability changes are planned in place on Databricks (no rewrite).",
            NONE,
            nested_not_null_alter
        ),
        probe!(
            "identity_generated_not_addable",
            "https://docs.databricks.com/aws/en/delta/generated-columns",
            "identity and generated columns can be declared at CREATE but not added to an existing table",
            "The rule ColumnKindCannotChange refuses adding them later, and CREATE TABLE declares them inline.",
            NONE,
            identity_generated_not_addable
        ),
        probe!(
            "check_not_in_create",
            "https://docs.databricks.com/aws/en/tables/constraints",
            "a CHECK cannot be declared inside CREATE TABLE; ALTER TABLE … ADD CONSTRAINT adds it",
            "CREATE TABLE never carries CHECKs: each is its own ADD CONSTRAINT step after the create.",
            NONE,
            check_not_in_create
        ),
        probe!(
            "metadata_widenings_allowed",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "every widening our matrix calls in-place is accepted by ALTER COLUMN … TYPE with type widening on",
            "These type changes are planned as one in-place ALTER after the enable typeWidening step, without a rewrite.",
            NONE,
            metadata_widenings_allowed
        ),
        probe!(
            "nested_changes_in_place",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "map values and keys and array elements widen in place by their path (counters.value, ids.key, scores.element), a nullable field is added inside an array's structs (items.element.unit_price), and a struct field is dropped under column mapping (address.legacy_code)",
            "Nested widenings, adds and drops are planned in place, never as a rewrite of the table (a whole-map ALTER … TYPE is refused: CANNOT_UPDATE_FIELD.MAP_TYPE).",
            NONE,
            nested_changes_in_place
        ),
        probe!(
            "rewrite_widenings_refused",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "the type changes our matrix calls rewrites are refused in place (tinyint→decimal(5,0), bigint→decimal(19,0), narrowing, to string)",
            "These changes are planned as a staged rewrite; if Databricks took them in place, the rewrite would be unnecessary (not unsafe).",
            NONE,
            rewrite_widenings_refused
        ),
        probe!(
            "cluster_keys_at_most_4",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "liquid clustering takes at most 4 keys: 4 are accepted and read back, 5 are refused",
            "Validation refuses clusterBy with more than 4 columns before anything is planned.",
            NONE,
            cluster_keys_at_most_4
        ),
        probe!(
            "cluster_by_auto",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "CLUSTER BY AUTO is accepted and reads back",
            "Automatic clustering can be declared; a table with it must read back as such, or every plan would show drift.",
            NONE,
            cluster_by_auto
        ),
        probe!(
            "partition_after_cluster_none",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "a clustered table can be replaced as a partitioned one after ALTER TABLE … CLUSTER BY NONE",
            "A clustering → partitioning change is a CLUSTER BY NONE step followed by the rebuild.",
            NONE,
            partition_after_cluster_none
        ),
        probe!(
            "insert_overwrite_column_list",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-dml-insert-into",
            "INSERT OVERWRITE t (cols) SELECT … is accepted and replaces the rows",
            "A rewrite can write the converted rows back into the same table with an explicit column list.",
            NONE,
            insert_overwrite_column_list
        ),
        probe!(
            "undrop_brings_back",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-undrop-table",
            "UNDROP TABLE brings back a dropped table with its rows and properties (our owner marker)",
            "UNDROP is the undo shown for every DROP TABLE step, and the owner marker must come back with it.",
            KEEPS_DROPPED,
            undrop_brings_back
        ),
        probe!(
            "ansi_mode",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-ansi-compliance",
            "the warehouse runs in ANSI mode: a cast that cannot convert fails instead of giving NULL",
            "A rewrite's conversion relies on failing casts; without ANSI mode a bad value would become NULL (the NULL check still catches it, later).",
            NONE,
            ansi_mode
        ),
        probe!(
            "missing_catalog_is_error",
            "https://docs.databricks.com/api/workspace/tables/list",
            "listing tables of a catalog that does not exist is an error, not an empty schema",
            "Reads list a schema's tables through Unity Catalog; an empty answer for a missing catalog would plan every table as a create.",
            NONE,
            missing_catalog_is_error
        ),
        probe!(
            "schema_grant_not_table_grant",
            "https://docs.databricks.com/aws/en/sql/language-manual/information-schema/table_privileges",
            "a grant on the schema does not read as a grant on its tables (our read keeps inherited_from = 'NONE')",
            "Grants are diffed per table; an inherited grant read as a direct one would be revoked by the next plan.",
            NONE,
            schema_grant_not_table_grant
        ),
        probe!(
            "table_privileges_inherited_from",
            "https://docs.databricks.com/aws/en/sql/language-manual/information-schema/table_privileges",
            "information_schema.table_privileges marks a direct grant inherited_from = 'NONE' and names where an inherited one comes from",
            "Our read takes a table's own grants as the rows with inherited_from = 'NONE'.",
            NONE,
            table_privileges_inherited_from
        ),
        probe!(
            "mv_left_alone",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-materialized-view",
            "a materialized view is listed with table_type MATERIALIZED_VIEW, which our read skips",
            "Materialized views and streaming tables are never read, planned or reported as orphans.",
            SLOW,
            mv_left_alone
        ),
        probe!(
            "effective_policies_columns",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-aux-show-policies",
            "SHOW EFFECTIVE POLICIES ON TABLE lists a schema's ABAC policy with the documented columns",
            "A mask or row filter beside an ABAC policy of the same kind must be cautioned; the policies are read from this statement.",
            CREATES_POLICY,
            effective_policies_columns
        ),
        probe!(
            "no_policy_lists_none",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-aux-show-policies",
            "SHOW EFFECTIVE POLICIES ON TABLE for a table under no policy returns no rows, without error",
            "Reading policies must not fail (or invent policies) for the common table without any.",
            NONE,
            no_policy_lists_none
        ),
        probe!(
            "describe_policy_shape",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-aux-describe-policy",
            "DESCRIBE POLICY names the policy's function and principals",
            "The caution for a mask beside an ABAC policy names the policy's function and who it applies to.",
            CREATES_POLICY,
            describe_policy_shape
        ),
        // ---- ours: Capabilities::databricks(), the rules and the SQL we compile
        probe!(
            "widening_needs_feature",
            "https://docs.databricks.com/aws/en/tables/features/type-widening",
            "without delta.enableTypeWidening an in-place widening is refused; after our enable step it is accepted",
            "Capabilities: widening_needs_feature — every in-place widening is preceded by the [feature] enable typeWidening step.",
            NONE,
            widening_needs_feature
        ),
        probe!(
            "rename_needs_column_mapping",
            "https://docs.databricks.com/aws/en/delta/column-mapping",
            "RENAME COLUMN is refused without column mapping, and accepted (keeping the values) after our enable columnMapping step",
            "Capabilities: rename_column in place, rename_drop_need_column_mapping — a rename is planned as enable columnMapping + RENAME COLUMN.",
            NONE,
            rename_needs_column_mapping
        ),
        probe!(
            "drop_needs_column_mapping",
            "https://docs.databricks.com/aws/en/delta/column-mapping",
            "DROP COLUMN is refused without column mapping, and accepted after our enable columnMapping step",
            "Capabilities: drop_column in place after enable columnMapping.",
            NONE,
            drop_needs_column_mapping
        ),
        probe!(
            "column_mapping_irreversible",
            "https://docs.databricks.com/aws/en/delta/column-mapping",
            "once on, column mapping cannot be set back to 'none'",
            "The rule PropertyTransitionNotSupported refuses name → none; if Databricks allows it, the rule is stricter than needed.",
            NONE,
            column_mapping_irreversible
        ),
        probe!(
            "set_not_null_in_place",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "ALTER COLUMN … SET NOT NULL works in place on a column without NULLs and is refused while NULLs exist",
            "Capabilities: set_not_null in place — SET NOT NULL is one ALTER, and a column with NULLs is refused by Databricks, not rewritten.",
            NONE,
            set_not_null_in_place
        ),
        probe!(
            "drop_not_null_in_place",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "ALTER COLUMN … DROP NOT NULL works in place",
            "Relaxing nullability is a [meta] step.",
            NONE,
            drop_not_null_in_place
        ),
        probe!(
            "restore_undoes_drop_column",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-restore",
            "our undo of DROP COLUMN (RESTORE to the version before) brings the column back with its values",
            "Dropping a column is destructive but in place; the plan's undo line promises RESTORE gets it back.",
            NONE,
            restore_undoes_drop_column
        ),
        probe!(
            "check_validates_existing_rows",
            "https://docs.databricks.com/aws/en/tables/constraints",
            "ADD CONSTRAINT … CHECK is refused when existing rows break it, and is stored as delta.constraints.<name>",
            "The CHECK step warns that every row is validated; our read takes CHECKs from the delta.constraints.* properties.",
            NONE,
            check_validates_existing_rows
        ),
        probe!(
            "default_needs_feature",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column",
            "SET DEFAULT is refused until delta.feature.allowColumnDefaults = 'supported'; our compiled step enables it first",
            "A default on an existing table compiles to the feature property and then SET DEFAULT.",
            NONE,
            default_needs_feature
        ),
        probe!(
            "cluster_by_in_place",
            "https://docs.databricks.com/aws/en/delta/clustering",
            "ALTER TABLE … CLUSTER BY (…) and CLUSTER BY NONE change an unpartitioned table's keys in place",
            "Capabilities: clustering — a clusterBy change is one [meta] step, never a rewrite.",
            NONE,
            cluster_by_in_place
        ),
        probe!(
            "comments_clear",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-comment",
            "COMMENT ON TABLE … IS NULL and ALTER COLUMN … COMMENT '' clear comments",
            "A comment removed from the spec compiles to these (warehouses refuse UNSET COMMENT).",
            NONE,
            comments_clear
        ),
        probe!(
            "hostile_names_round_trip",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-identifiers",
            "column names and comments with quotes, backslashes, ${…}, newlines and unicode round-trip exactly through our quoting and our read",
            "Every identifier and literal we write goes through sql::ident and sql::literal; a mismatch would show as drift forever.",
            NONE,
            hostile_names_round_trip
        ),
        probe!(
            "primary_key_statements",
            "https://docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-alter-table-add-constraint",
            "DROP PRIMARY KEY IF EXISTS is a no-op without a key, ADD CONSTRAINT … PRIMARY KEY works on NOT NULL columns, and the name reads back lower-cased",
            "SetPrimaryKey compiles to DROP PRIMARY KEY IF EXISTS + ADD CONSTRAINT; declared key names must be lower case to match.",
            NONE,
            primary_key_statements
        ),
        probe!(
            "history_gives_version",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-describe-history",
            "DESCRIBE HISTORY … LIMIT 1 has a version column that grows by one per commit",
            "The executor records this version as the restore point before every risky step.",
            NONE,
            history_gives_version
        ),
        probe!(
            "clone_copies_owner_marker",
            "https://docs.databricks.com/aws/en/sql/language-manual/delta-clone",
            "a shallow clone copies the source's properties, our owner marker included, and unsetting it on the clone leaves the source's",
            "A backup clone looks like a table of the same resource until its marker is unset; orphan detection depends on the marker.",
            NONE,
            clone_copies_owner_marker
        ),
    ]
}

// =============================================================== stevin's 24

async fn replace_reads_itself(b: &Bench) -> Verdict {
    let t = b.table("p_self_replace");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!(
        "INSERT INTO {} VALUES (1, 'x'), (2, 'y'), (3, 'z')",
        t.q
    ))
    .await?;
    b.must(
        &format!(
            "CREATE OR REPLACE TABLE {q} USING DELTA AS SELECT a, upper(b) AS b FROM {q}",
            q = t.q
        ),
        "the REPLACE reads the table it replaces",
    )
    .await?;
    let n = b.count(&t).await?;
    let upper = b
        .scalar(&format!(
            "SELECT count(*) FROM {} WHERE b IN ('X', 'Y', 'Z')",
            t.q
        ))
        .await?;
    if n == 3 && upper.as_deref() == Some("3") {
        held("replaced from itself: 3 rows, all converted")
    } else {
        Err(differed(
            "3 rows, all converted",
            format!("{n} rows, {} converted", upper.unwrap_or_default()),
        ))
    }
}

async fn replace_keeps_tags_and_grants(b: &Bench) -> Verdict {
    let t = b.table("p_replace_gov");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!(
        "ALTER TABLE {} SET TAGS ({} = {})",
        t.q,
        sql::literal("verify_probe"),
        sql::literal("table")
    ))
    .await?;
    b.setup(&format!(
        "ALTER TABLE {} ALTER COLUMN {} SET TAGS ({} = {})",
        t.q,
        sql::ident("a"),
        sql::literal("verify_probe"),
        sql::literal("column")
    ))
    .await?;
    b.setup(&format!(
        "GRANT SELECT ON TABLE {} TO {}",
        t.q,
        sql::ident(&b.principal)
    ))
    .await?;
    b.must(
        &format!(
            "CREATE OR REPLACE TABLE {q} USING DELTA AS SELECT a, b FROM {q}",
            q = t.q
        ),
        "the REPLACE is accepted",
    )
    .await?;
    let mut lost = Vec::new();
    if !b
        .table_tags(&t)
        .await?
        .iter()
        .any(|(k, v)| k == "verify_probe" && v == "table")
    {
        lost.push("the table tag".to_string());
    }
    if !b
        .column_tags(&t)
        .await?
        .iter()
        .any(|(c, k, v)| c.eq_ignore_ascii_case("a") && k == "verify_probe" && v == "column")
    {
        lost.push("the column tag".to_string());
    }
    if !b
        .grants("TABLE", &t.q)
        .await?
        .iter()
        .any(|(p, a)| p == &b.principal && a.eq_ignore_ascii_case("SELECT"))
    {
        lost.push(format!("SELECT granted to {}", b.principal));
    }
    if lost.is_empty() {
        held("table tag, column tag and grant all kept")
    } else {
        Err(differed(
            "tags and grants kept",
            format!("lost: {}", lost.join(", ")),
        ))
    }
}

async fn restore_puts_back_replaced(b: &Bench) -> Verdict {
    let t = b.table("p_restore");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    let v = b.version(&t).await?;
    b.setup(&format!(
        "CREATE OR REPLACE TABLE {} (z BIGINT) USING DELTA",
        t.q
    ))
    .await?;
    // our undo text, as a plan prints it
    let undo = sql::undo(
        &sql::Names::Catalog,
        &t.r,
        &Action::DropColumn { name: "b".into() },
        None,
        Some(v),
    )
    .ok_or_else(|| unknown("our planner writes no undo"))?;
    b.must(&undo, "RESTORE brings back the version before the REPLACE")
        .await?;
    let live = b.observe(&t).await?;
    let names: Vec<&str> = live.columns.iter().map(|c| c.name.as_str()).collect();
    let n = b.count(&t).await?;
    if names == ["a", "b"] && n == 2 {
        held(format!("restored to version {v}: columns a, b and 2 rows"))
    } else {
        Err(differed(
            "columns a, b and 2 rows",
            format!("columns {}, {n} rows", names.join(", ")),
        ))
    }
}

async fn clone_outlives_rewrite(b: &Bench) -> Verdict {
    let t = b.table("p_clone_src");
    let c = b.table("p_clone");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1), (2), (3)", t.q))
        .await?;
    b.must(
        &format!("CREATE TABLE {} SHALLOW CLONE {}", c.q, t.q),
        "a shallow clone can be taken",
    )
    .await?;
    b.setup(&format!(
        "CREATE OR REPLACE TABLE {q} USING DELTA AS SELECT a + 100 AS a FROM {q}",
        q = t.q
    ))
    .await?;
    match b
        .attempt(&format!("SELECT count(*), sum(a) FROM {}", c.q))
        .await?
    {
        Ok(r) => {
            let row = r.rows.first().cloned().unwrap_or_default();
            let (n, s) = (cell(&row, 0), cell(&row, 1));
            if n == "3" && s == "6" {
                held("the clone still reads its 3 original rows after the REPLACE")
            } else {
                Err(differed(
                    "3 rows summing to 6",
                    format!("{n} rows summing to {s}"),
                ))
            }
        }
        Err(w) => Err(Outcome::Differed {
            expected: "the clone readable".into(),
            observed: "reading the clone failed".into(),
            workspace: Some(Words::of(&w, "SELECT … FROM clone")),
        }),
    }
}

async fn replace_view_drops_governance(b: &Bench) -> Verdict {
    let v = b.view("p_view");
    b.setup(&format!("CREATE VIEW {} AS SELECT 1 AS x", v.q))
        .await?;
    b.setup(&format!(
        "ALTER VIEW {} SET TAGS ({} = {})",
        v.q,
        sql::literal("verify_probe"),
        sql::literal("view")
    ))
    .await?;
    b.setup(&format!(
        "GRANT SELECT ON VIEW {} TO {}",
        v.q,
        sql::ident(&b.principal)
    ))
    .await?;
    b.setup(&format!(
        "ALTER VIEW {} SET TBLPROPERTIES ({} = {})",
        v.q,
        sql::literal("verify.probe"),
        sql::literal("view")
    ))
    .await?;
    b.must(
        &format!("CREATE OR REPLACE VIEW {} AS SELECT 2 AS x", v.q),
        "the view can be replaced",
    )
    .await?;
    let mut kept = Vec::new();
    if b.table_tags(&v)
        .await?
        .iter()
        .any(|(k, _)| k == "verify_probe")
    {
        kept.push("its tag");
    }
    if b.grants("VIEW", &v.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal)
    {
        kept.push("its grant");
    }
    let props = b.setup(&format!("SHOW TBLPROPERTIES {}", v.q)).await?;
    if props.rows.iter().any(|r| cell(r, 0) == "verify.probe") {
        kept.push("its property");
    }
    if kept.is_empty() {
        held("the replaced view lost its tag, grant and property")
    } else {
        Err(differed(
            "tag, grant and property dropped by the replace",
            format!("kept {}", kept.join(", ")),
        ))
    }
}

async fn replace_function_drops_grants(b: &Bench) -> Verdict {
    let f = b.function("p_func");
    b.setup(&format!(
        "CREATE FUNCTION {}(x INT) RETURNS INT RETURN x + 1",
        f.q
    ))
    .await?;
    b.setup(&format!(
        "GRANT EXECUTE ON FUNCTION {} TO {}",
        f.q,
        sql::ident(&b.principal)
    ))
    .await?;
    if !b
        .grants("FUNCTION", &f.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal)
    {
        return Err(unknown(
            "the EXECUTE grant did not show in SHOW GRANTS before the replace",
        ));
    }
    b.must(
        &format!(
            "CREATE OR REPLACE FUNCTION {}(x INT) RETURNS INT RETURN x + 2",
            f.q
        ),
        "the function can be replaced",
    )
    .await?;
    if b.grants("FUNCTION", &f.q)
        .await?
        .iter()
        .any(|(p, _)| p == &b.principal)
    {
        Err(differed(
            "the grant dropped by the replace",
            "the grant was kept",
        ))
    } else {
        held("the replaced function lost its EXECUTE grant")
    }
}

async fn nested_not_null_alter(b: &Bench) -> Verdict {
    let t = b.table("p_nested_nn");
    b.setup(&format!(
        "CREATE TABLE {} (s STRUCT<x: INT NOT NULL, y: INT>) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!(
        "INSERT INTO {} VALUES (named_struct('x', 1, 'y', 2))",
        t.q
    ))
    .await?;
    let path: FieldPath = vec!["s".to_string(), "x".to_string()].into();
    b.compiled(
        &t,
        &Action::DropNotNull { path: path.clone() },
        None,
        "DROP NOT NULL on a nested field is an ordinary ALTER",
    )
    .await?;
    let after_drop = b.observe(&t).await?;
    if !field_nullable(&after_drop, "s", "x").unwrap_or(false) {
        return Err(differed(
            "s.x nullable after DROP NOT NULL",
            "s.x still reads NOT NULL",
        ));
    }
    b.compiled(
        &t,
        &Action::SetNotNull { path },
        None,
        "SET NOT NULL on a nested field is an ordinary ALTER",
    )
    .await?;
    let after_set = b.observe(&t).await?;
    match field_nullable(&after_set, "s", "x") {
        Some(false) => held("s.x: DROP NOT NULL and SET NOT NULL both in place"),
        _ => Err(differed("s.x NOT NULL again", "s.x reads nullable")),
    }
}

fn field_nullable(t: &ObservedTable, column: &str, field: &str) -> Option<bool> {
    match &t.column(column)?.data_type {
        DataType::Struct { fields } => fields.iter().find(|f| f.name == field).map(|f| f.nullable),
        _ => None,
    }
}

async fn identity_generated_not_addable(b: &Bench) -> Verdict {
    let t = b.table("p_kinds");
    // the control: both kinds can be declared at create, so the syntax is right
    b.setup(&format!(
        "CREATE TABLE {} (a INT, g INT GENERATED ALWAYS AS (a + 1), i BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1)) USING DELTA",
        t.q
    ))
    .await?;
    let g = b
        .refused(
            &format!(
                "ALTER TABLE {} ADD COLUMN g2 INT GENERATED ALWAYS AS (a + 2)",
                t.q
            ),
            "adding a generated column is refused",
        )
        .await?;
    let i = b
        .refused(&format!("ALTER TABLE {} ADD COLUMN i2 BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1)", t.q), "adding an identity column is refused")
        .await?;
    held(format!(
        "declared at create; adding later refused ({} / {})",
        words_line(&g),
        words_line(&i)
    ))
}

async fn check_not_in_create(b: &Bench) -> Verdict {
    let t = b.table("p_check_create");
    let w = b
        .refused(
            &format!(
                "CREATE TABLE {} (a INT, CONSTRAINT c_pos CHECK (a > 0)) USING DELTA",
                t.q
            ),
            "CREATE TABLE with a CHECK is refused",
        )
        .await?;
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let check = Check {
        name: "c_pos".into(),
        expression: "a > 0".into(),
    };
    b.compiled(
        &t,
        &Action::AddCheck { check },
        None,
        "ALTER TABLE … ADD CONSTRAINT … CHECK works after the create",
    )
    .await?;
    held(format!(
        "refused inside CREATE ({}), added by ALTER",
        words_line(&w)
    ))
}

const IN_PLACE: &[(&str, &str)] = &[
    ("tinyint", "smallint"),
    ("smallint", "int"),
    ("int", "bigint"),
    ("float", "double"),
    ("tinyint", "double"),
    ("int", "double"),
    ("int", "decimal(10,0)"),
    ("bigint", "decimal(20,0)"),
    ("decimal(5,2)", "decimal(7,3)"),
    ("date", "timestamp_ntz"),
];

const NOT_IN_PLACE: &[(&str, &str)] = &[
    ("tinyint", "decimal(5,0)"),
    ("bigint", "decimal(19,0)"),
    ("bigint", "int"),
    ("double", "float"),
    ("int", "string"),
    ("decimal(10,2)", "decimal(10,3)"),
];

/// A table with one column per pair (`c0`, `c1`, …) of the `from` types, widening on.
async fn type_table(b: &Bench, stem: &str, pairs: &[(&str, &str)]) -> Result<Tbl, Outcome> {
    let t = b.table(stem);
    let cols: Vec<String> = pairs
        .iter()
        .enumerate()
        .map(|(i, (from, _))| {
            format!(
                "{} {}",
                sql::ident(&format!("c{i}")),
                sql::sql_type(&ty(from))
            )
        })
        .collect();
    b.setup(&format!(
        "CREATE TABLE {} ({}) USING DELTA",
        t.q,
        cols.join(", ")
    ))
    .await?;
    b.compiled(
        &t,
        &Action::EnableTypeWidening,
        None,
        "type widening can be enabled",
    )
    .await
    .map_err(|o| match o {
        Outcome::Differed { workspace, .. } => Outcome::Unknown {
            why: "enabling type widening was refused".into(),
            workspace,
        },
        other => other,
    })?;
    Ok(t)
}

async fn metadata_widenings_allowed(b: &Bench) -> Verdict {
    for (from, to) in IN_PLACE {
        if !can_widen_in_place(&ty(from), &ty(to)) {
            return Err(unknown(format!(
                "probe list out of date: our matrix no longer calls {from} → {to} in place"
            )));
        }
    }
    let t = type_table(b, "p_widen", IN_PLACE).await?;
    let mut refused = Vec::new();
    let mut first_words = None;
    for (i, (from, to)) in IN_PLACE.iter().enumerate() {
        let action = Action::AlterColumnType {
            path: vec![format!("c{i}")].into(),
            to: ty(to),
        };
        let stmts = sql::compile(&t.r, &action, None).map_err(|e| unknown(e.to_string()))?;
        for s in &stmts {
            if let Err(w) = b.attempt(s).await? {
                refused.push(format!("{from} → {to} ({})", words_line(&w)));
                first_words.get_or_insert_with(|| Words::of(&w, s));
            }
        }
    }
    let live = b.observe(&t).await?;
    let mut wrong = Vec::new();
    for (i, (from, to)) in IN_PLACE.iter().enumerate() {
        let got = live.column(&format!("c{i}")).map(|c| c.data_type.clone());
        if got.as_ref() != Some(&ty(to))
            && !refused
                .iter()
                .any(|r| r.starts_with(&format!("{from} → {to} ")))
        {
            wrong.push(format!(
                "{from} → {to} accepted but reads back as {}",
                got.map(|g| g.to_string())
                    .unwrap_or_else(|| "missing".into())
            ));
        }
    }
    if refused.is_empty() && wrong.is_empty() {
        held(format!(
            "all {} widenings applied in place and read back",
            IN_PLACE.len()
        ))
    } else {
        let mut observed = refused
            .iter()
            .map(|r| format!("refused {r}"))
            .collect::<Vec<_>>();
        observed.extend(wrong);
        Err(Outcome::Differed {
            expected: "every in-place widening accepted".into(),
            observed: observed.join("; "),
            workspace: first_words,
        })
    }
}

/// The table of the nested probe (Databricks and Spark Connect): one row.
pub const NESTED_TABLE: &str = "(counters MAP<STRING, INT>, ids MAP<SMALLINT, STRING>, scores ARRAY<SMALLINT>, items ARRAY<STRUCT<sku: STRING>>, address STRUCT<city: STRING, legacy_code: STRING>) USING DELTA";
pub const NESTED_ROW: &str = "(map('a', 1), map(CAST(1 AS SMALLINT), 'x'), array(CAST(2 AS SMALLINT)), array(named_struct('sku', 's1')), named_struct('city', 'c', 'legacy_code', 'l'))";

/// The steps the planner makes for the nested probe's changes
/// (`diff::contained`, pinned by plan_core's
/// `nested_widening_and_adds_inside_arrays_and_maps_are_in_place` and the
/// struct-field drop case), after type widening and column mapping are on.
pub fn nested_actions() -> Vec<Action> {
    let path =
        |p: &[&str]| -> FieldPath { p.iter().map(|s| s.to_string()).collect::<Vec<_>>().into() };
    vec![
        Action::EnableTypeWidening,
        Action::EnableColumnMapping,
        Action::DropField {
            path: path(&["address", "legacy_code"]),
        },
        Action::AlterColumnType {
            path: path(&["counters", "value"]),
            to: ty("bigint"),
        },
        Action::AlterColumnType {
            path: path(&["ids", "key"]),
            to: ty("int"),
        },
        Action::AlterColumnType {
            path: path(&["scores", "element"]),
            to: ty("int"),
        },
        Action::AddColumn {
            path: path(&["items", "element", "unit_price"]),
            field: crate::model::StructField {
                name: "unit_price".into(),
                data_type: ty("double"),
                nullable: true,
                comment: None,
            },
        },
    ]
}

/// What the nested probe's table must read back as, or what differs.
pub fn nested_read_back(live: &ObservedTable) -> Result<(), String> {
    let want = [
        ("counters", "map<string,bigint>"),
        ("ids", "map<int,string>"),
        ("scores", "array<int>"),
        ("items", "array<struct<sku:string,unit_price:double>>"),
        ("address", "struct<city:string>"),
    ];
    let wrong: Vec<String> = want
        .iter()
        .filter(|(c, t)| live.column(c).map(|c| c.data_type.clone()) != Some(ty(t)))
        .map(|(c, t)| {
            format!(
                "{c} reads {} (expected {t})",
                live.column(c)
                    .map(|c| c.data_type.to_string())
                    .unwrap_or_else(|| "nothing".into())
            )
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

async fn nested_changes_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_nested_changes");
    b.setup(&format!("CREATE TABLE {} {NESTED_TABLE}", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES {NESTED_ROW}", t.q))
        .await?;
    for action in nested_actions() {
        let live = b.observe(&t).await?;
        b.compiled(
            &t,
            &action,
            Some(&live),
            "a nested change is an ordinary ALTER",
        )
        .await?;
    }
    let live = b.observe(&t).await?;
    nested_read_back(&live).map_err(|w| differed("the nested changes read back", w))?;
    match b.count(&t).await? {
        1 => held(
            "address.legacy_code dropped, counters.value, ids.key, scores.element widened and items.element.unit_price added in place; 1 row",
        ),
        n => Err(differed("1 row", format!("{n} rows"))),
    }
}

async fn rewrite_widenings_refused(b: &Bench) -> Verdict {
    for (from, to) in NOT_IN_PLACE {
        if can_widen_in_place(&ty(from), &ty(to)) {
            return Err(unknown(format!(
                "probe list out of date: our matrix now calls {from} → {to} in place"
            )));
        }
    }
    let t = type_table(b, "p_narrow", NOT_IN_PLACE).await?;
    let mut accepted = Vec::new();
    for (i, (from, to)) in NOT_IN_PLACE.iter().enumerate() {
        let s = format!(
            "ALTER TABLE {} ALTER COLUMN {} TYPE {}",
            t.q,
            sql::ident(&format!("c{i}")),
            sql::sql_type(&ty(to))
        );
        if b.attempt(&s).await?.is_ok() {
            accepted.push(format!("{from} → {to}"));
        }
    }
    if accepted.is_empty() {
        held(format!("all {} refused in place", NOT_IN_PLACE.len()))
    } else {
        Err(differed(
            "refused in place (planned as rewrites)",
            format!("accepted in place: {}", accepted.join(", ")),
        ))
    }
}

async fn cluster_keys_at_most_4(b: &Bench) -> Verdict {
    let five = b.table("p_cluster5");
    let four = b.table("p_cluster4");
    let cols = "a INT, b INT, c INT, d INT, e INT";
    let w = b
        .refused(
            &format!(
                "CREATE TABLE {} ({cols}) USING DELTA CLUSTER BY (a, b, c, d, e)",
                five.q
            ),
            "5 clustering keys are refused",
        )
        .await?;
    b.must(
        &format!(
            "CREATE TABLE {} ({cols}) USING DELTA CLUSTER BY (a, b, c, d)",
            four.q
        ),
        "4 clustering keys are accepted",
    )
    .await?;
    let d = b.detail(&four).await?;
    let keys = json_list(d.get("clusteringColumns"));
    if keys == ["a", "b", "c", "d"] {
        held(format!("4 keys read back; 5 refused ({})", words_line(&w)))
    } else {
        Err(differed(
            "clusteringColumns a, b, c, d",
            format!("clusteringColumns {keys:?}"),
        ))
    }
}

async fn cluster_by_auto(b: &Bench) -> Verdict {
    let t = b.table("p_cluster_auto");
    b.must(
        &format!(
            "CREATE TABLE {} (a INT, b STRING) USING DELTA CLUSTER BY AUTO",
            t.q
        ),
        "CLUSTER BY AUTO is accepted",
    )
    .await?;
    let d = b.detail(&t).await?;
    let auto = d.get("clusterByAuto").cloned().flatten();
    match auto.as_deref() {
        Some("true") => held("accepted; DESCRIBE DETAIL clusterByAuto = true"),
        other => Err(differed(
            "DESCRIBE DETAIL clusterByAuto = true",
            format!("clusterByAuto = {}", other.unwrap_or("(absent)")),
        )),
    }
}

async fn partition_after_cluster_none(b: &Bench) -> Verdict {
    let t = b.table("p_cluster_part");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA CLUSTER BY (a)",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    b.compiled(
        &t,
        &Action::SetClustering { keys: vec![] },
        None,
        "CLUSTER BY NONE is accepted",
    )
    .await?;
    b.must(
        &format!(
            "CREATE OR REPLACE TABLE {q} USING DELTA PARTITIONED BY (a) AS SELECT a, b FROM {q}",
            q = t.q
        ),
        "the unclustered table can be replaced as a partitioned one",
    )
    .await?;
    let d = b.detail(&t).await?;
    let parts = json_list(d.get("partitionColumns"));
    let n = b.count(&t).await?;
    if parts == ["a"] && n == 2 {
        held("after CLUSTER BY NONE, replaced as PARTITIONED BY (a) with its 2 rows")
    } else {
        Err(differed(
            "partitionColumns [a] and 2 rows",
            format!("partitionColumns {parts:?}, {n} rows"),
        ))
    }
}

async fn insert_overwrite_column_list(b: &Bench) -> Verdict {
    let t = b.table("p_overwrite");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    b.must(
        &format!(
            "INSERT OVERWRITE {} ({}, {}) SELECT 7, 'z'",
            t.q,
            sql::ident("a"),
            sql::ident("b")
        ),
        "INSERT OVERWRITE with a column list is accepted",
    )
    .await?;
    let v = b
        .scalar(&format!(
            "SELECT concat(count(*), ':', max(a)) FROM {}",
            t.q
        ))
        .await?;
    if v.as_deref() == Some("1:7") {
        held("the rows were replaced by the one written")
    } else {
        Err(differed(
            "1 row (a = 7)",
            format!("count:max = {}", v.unwrap_or_default()),
        ))
    }
}

async fn undrop_brings_back(b: &Bench) -> Verdict {
    let t = b.table("p_undrop");
    b.setup(&format!(
        "CREATE TABLE {} (a INT) USING DELTA TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal(OWNER_PROPERTY),
        sql::literal("verify/probe")
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1), (2)", t.q))
        .await?;
    b.compiled(&t, &Action::DropTable, None, "the table can be dropped")
        .await?;
    let undo = sql::undo(&sql::Names::Catalog, &t.r, &Action::DropTable, None, None)
        .ok_or_else(|| unknown("our planner writes no undo for DROP TABLE"))?;
    b.must(&undo, "UNDROP brings the table back").await?;
    let n = b.count(&t).await?;
    let live = b.observe(&t).await?;
    let marker = live.properties.get(OWNER_PROPERTY).cloned();
    if n == 2 && marker.as_deref() == Some("verify/probe") {
        held("undropped with its 2 rows and the owner marker")
    } else {
        Err(differed(
            "2 rows and the owner marker",
            format!(
                "{n} rows, marker {}",
                marker.unwrap_or_else(|| "(absent)".into())
            ),
        ))
    }
}

async fn ansi_mode(b: &Bench) -> Verdict {
    let ok = b.scalar("SELECT CAST('12' AS INT)").await?;
    if ok.as_deref() != Some("12") {
        return Err(unknown(format!("the control cast gave {ok:?}")));
    }
    match b.attempt("SELECT CAST('abc' AS INT)").await? {
        Err(w) => held(format!("a failing cast is an error ({})", words_line(&w))),
        Ok(r) => Err(differed(
            "CAST('abc' AS INT) fails",
            format!(
                "it gave {:?}",
                r.rows.first().and_then(|r| r.first()).cloned().flatten()
            ),
        )),
    }
}

async fn missing_catalog_is_error(b: &Bench) -> Verdict {
    let cat = format!("verify_missing_{}", b.run_id);
    b.log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!(
            "GET /api/2.1/unity-catalog/tables?catalog_name={cat}&schema_name={}",
            b.schema.schema
        ));
    // the control: the scratch schema lists fine
    if let Err(e) = b
        .client()
        .list_tables(&b.schema.catalog, &b.schema.schema)
        .await
    {
        return Err(unknown(format!("listing the scratch schema failed: {e}")));
    }
    match b.client().list_tables(&cat, &b.schema.schema).await {
        Ok(tables) => Err(differed(
            "an error for a missing catalog",
            format!("an answer with {} tables", tables.len()),
        )),
        Err(ClientError::Workspace(w)) => held(format!(
            "refused: {}",
            w.error_code.clone().unwrap_or_else(|| words_line(&w))
        )),
        Err(e) => Err(unknown(e.to_string())),
    }
}

/// Our read's grants of one table (the permissions API): (principal, privilege).
async fn read_grants(b: &Bench, t: &Tbl) -> Result<Vec<(String, String)>, Outcome> {
    b.log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!(
            "GET /api/2.1/unity-catalog/permissions/table/{}",
            t.full
        ));
    let answer = b
        .client()
        .get_permissions("table", &t.full)
        .await
        .map_err(|e| unknown(format!("reading the grants of {}: {e}", t.full)))?;
    Ok(read::grants_from_permissions(&answer)
        .into_iter()
        .flat_map(|g| {
            g.privileges
                .into_iter()
                .map(move |p| (g.principal.clone(), p.as_str().to_string()))
        })
        .collect())
}

async fn schema_grant_not_table_grant(b: &Bench) -> Verdict {
    let t = b.table("p_schema_grant");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!(
        "GRANT SELECT ON SCHEMA {} TO {}",
        b.schema_q(),
        sql::ident(&b.principal)
    ))
    .await?;
    b.setup(&format!(
        "GRANT MODIFY ON TABLE {} TO {}",
        t.q,
        sql::ident(&b.principal)
    ))
    .await?;
    let grants = read_grants(b, &t).await?;
    let mine: Vec<&(String, String)> = grants.iter().filter(|(p, _)| p == &b.principal).collect();
    let _ = b
        .setup(&format!(
            "REVOKE SELECT ON SCHEMA {} FROM {}",
            b.schema_q(),
            sql::ident(&b.principal)
        ))
        .await;
    // the control: the direct grant must show, or the read cannot tell anything apart
    if !mine.iter().any(|(_, a)| a.eq_ignore_ascii_case("MODIFY")) {
        return Err(unknown(
            "our read does not show the direct MODIFY grant either, so it cannot tell a schema grant apart (see table_privileges_inherited_from)",
        ));
    }
    if mine.iter().any(|(_, a)| a.eq_ignore_ascii_case("SELECT")) {
        Err(differed(
            "only the direct MODIFY grant",
            "the schema's SELECT grant reads as a grant on the table",
        ))
    } else {
        held("our read shows the direct MODIFY grant and not the schema's SELECT")
    }
}

async fn table_privileges_inherited_from(b: &Bench) -> Verdict {
    let t = b.table("p_inherited");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!(
        "GRANT SELECT ON SCHEMA {} TO {}",
        b.schema_q(),
        sql::ident(&b.principal)
    ))
    .await?;
    b.setup(&format!(
        "GRANT MODIFY ON TABLE {} TO {}",
        t.q,
        sql::ident(&b.principal)
    ))
    .await?;
    let r = b
        .setup(&format!(
            "SELECT privilege_type, inherited_from FROM {}.information_schema.table_privileges WHERE table_schema = {} AND table_name = {} AND grantee = {}",
            sql::ident(&b.schema.catalog),
            sql::literal(&b.schema.schema),
            sql::literal(&t.r.table),
            sql::literal(&b.principal)
        ))
        .await?;
    let _ = b
        .setup(&format!(
            "REVOKE SELECT ON SCHEMA {} FROM {}",
            b.schema_q(),
            sql::ident(&b.principal)
        ))
        .await;
    let rows: Vec<(String, Option<String>)> = r
        .rows
        .iter()
        .map(|row| (cell(row, 0), row.get(1).cloned().flatten()))
        .collect();
    let show = |v: &Option<String>| {
        v.clone()
            .map(|s| format!("'{s}'"))
            .unwrap_or_else(|| "NULL".into())
    };
    let direct = rows.iter().find(|(p, _)| p.eq_ignore_ascii_case("MODIFY"));
    let inherited = rows.iter().find(|(p, _)| p.eq_ignore_ascii_case("SELECT"));
    match (direct, inherited) {
        (Some((_, Some(d))), Some((_, Some(i)))) if d == "NONE" && i != "NONE" => held(format!(
            "direct: inherited_from 'NONE'; schema grant: inherited_from '{i}'"
        )),
        (Some((_, d)), Some((_, i))) => Err(differed(
            "direct 'NONE', inherited naming the schema",
            format!("direct {}, inherited {}", show(d), show(i)),
        )),
        (Some((_, d)), None) => Err(differed(
            "both grants listed",
            format!(
                "only the direct grant (inherited_from {}); the schema's grant is not listed",
                show(d)
            ),
        )),
        (None, _) => Err(differed(
            "the direct grant listed",
            format!("rows: {rows:?}"),
        )),
    }
}

async fn mv_left_alone(b: &Bench) -> Verdict {
    let mv = b.view("p_mv");
    b.setup(&format!(
        "CREATE MATERIALIZED VIEW {} AS SELECT 1 AS x",
        mv.q
    ))
    .await?;
    let listed = b
        .client()
        .list_tables(&b.schema.catalog, &b.schema.schema)
        .await
        .map_err(|e| unknown(format!("listing the schema: {e}")))?;
    let Some(info) = listed
        .iter()
        .find(|i| read::listed_name(i).as_deref() == Some(mv.r.table.as_str()))
    else {
        return Err(unknown(
            "the materialized view is not in the tables listing",
        ));
    };
    let kind = info
        .get("table_type")
        .and_then(Value::as_str)
        .unwrap_or("(none)")
        .to_string();
    if kind == "MATERIALIZED_VIEW" && !read::is_delta_table(info) {
        held("listed as MATERIALIZED_VIEW, which our read skips")
    } else {
        Err(differed(
            "table_type MATERIALIZED_VIEW, skipped by our read",
            format!(
                "table_type {kind}, read as a Delta table: {}",
                read::is_delta_table(info)
            ),
        ))
    }
}

const POLICY_COLUMNS: &[&str] = &[
    "Policy Name",
    "Policy Type",
    "Catalog",
    "Schema",
    "Table",
    "Comment",
];

fn documented_columns(r: &StatementResult) -> Result<(), String> {
    let got: Vec<String> = r
        .columns
        .iter()
        .map(|c| c.to_lowercase().replace('_', " "))
        .collect();
    let missing: Vec<&str> = POLICY_COLUMNS
        .iter()
        .copied()
        .filter(|c| !got.contains(&c.to_lowercase()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "columns {:?} (missing {})",
            r.columns,
            missing.join(", ")
        ))
    }
}

/// A row filter function and an ABAC policy on the scratch schema using it.
async fn make_policy(b: &Bench, stem: &str) -> Result<(Tbl, String), Outcome> {
    let f = b.function(&format!("{stem}_fn"));
    b.setup(&format!(
        "CREATE FUNCTION {}() RETURNS BOOLEAN RETURN true",
        f.q
    ))
    .await?;
    let name = format!("{stem}_{}", b.run_id);
    b.setup(&format!(
        "CREATE POLICY {} ON SCHEMA {} COMMENT {} ROW FILTER {} TO {} FOR TABLES",
        sql::ident(&name),
        b.schema_q(),
        sql::literal("delta-operator verify"),
        f.q,
        sql::ident(&b.principal)
    ))
    .await?;
    Ok((f, name))
}

async fn drop_policy(b: &Bench, name: &str) {
    let _ = b
        .attempt(&format!(
            "DROP POLICY {} ON SCHEMA {}",
            sql::ident(name),
            b.schema_q()
        ))
        .await;
}

async fn effective_policies_columns(b: &Bench) -> Verdict {
    let t = b.table("p_policy_tbl");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let (_, name) = make_policy(b, "p_policy_show").await?;
    let r = b
        .must(
            &format!("SHOW EFFECTIVE POLICIES ON TABLE {}", t.q),
            "SHOW EFFECTIVE POLICIES is accepted",
        )
        .await;
    drop_policy(b, &name).await;
    let r = r?;
    documented_columns(&r).map_err(|e| {
        differed(
            format!("the documented columns {}", POLICY_COLUMNS.join(", ")),
            e,
        )
    })?;
    if r.rows
        .iter()
        .any(|row| row.iter().flatten().any(|c| c == &name))
    {
        held("the schema's policy is listed with the documented columns")
    } else {
        Err(differed(
            "the schema's policy listed",
            format!("{} rows, none naming {name}", r.rows.len()),
        ))
    }
}

async fn no_policy_lists_none(b: &Bench) -> Verdict {
    let t = b.table("p_no_policy");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let r = b
        .must(
            &format!("SHOW EFFECTIVE POLICIES ON TABLE {}", t.q),
            "SHOW EFFECTIVE POLICIES succeeds on a table under no policy",
        )
        .await?;
    documented_columns(&r).map_err(|e| {
        differed(
            format!("the documented columns {}", POLICY_COLUMNS.join(", ")),
            e,
        )
    })?;
    if r.rows.is_empty() {
        held("no rows, documented columns")
    } else {
        Err(differed("no rows", format!("{} rows", r.rows.len())))
    }
}

async fn describe_policy_shape(b: &Bench) -> Verdict {
    let (f, name) = make_policy(b, "p_policy_describe").await?;
    let r = b
        .must(
            &format!(
                "DESCRIBE POLICY {} ON SCHEMA {}",
                sql::ident(&name),
                b.schema_q()
            ),
            "DESCRIBE POLICY is accepted",
        )
        .await;
    drop_policy(b, &name).await;
    let r = r?;
    let text = r
        .rows
        .iter()
        .flatten()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" | ");
    let names_fn = text.to_lowercase().contains(&f.r.table.to_lowercase());
    let names_principal = text.contains(&b.principal);
    if names_fn && names_principal {
        held("DESCRIBE POLICY names the function and the principal")
    } else {
        Err(differed(
            "the function and the principal named",
            format!(
                "function named: {names_fn}, principal named: {names_principal} (columns {:?})",
                r.columns
            ),
        ))
    }
}

// =============================================================== ours

async fn widening_needs_feature(b: &Bench) -> Verdict {
    let t = b.table("p_widen_feature");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1)", t.q)).await?;
    let props = b.detail(&t).await?;
    if props
        .get("properties")
        .cloned()
        .flatten()
        .is_some_and(|p| p.contains("delta.enableTypeWidening"))
    {
        return Err(unknown(
            "new tables already have delta.enableTypeWidening set here (a workspace default)",
        ));
    }
    let alter = Action::AlterColumnType {
        path: vec!["a".into()].into(),
        to: DataType::Long,
    };
    let stmt = sql::compile(&t.r, &alter, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "int → bigint refused without type widening")
        .await?;
    b.compiled(
        &t,
        &Action::EnableTypeWidening,
        None,
        "type widening can be enabled",
    )
    .await?;
    b.must(&stmt, "int → bigint accepted after the enable step")
        .await?;
    held(format!(
        "refused before ({}), accepted after the enable step",
        words_line(&w)
    ))
}

async fn rename_needs_column_mapping(b: &Bench) -> Verdict {
    let t = b.table("p_rename");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x')", t.q))
        .await?;
    let rename = Action::RenameColumn {
        from: "b".into(),
        to: "b2".into(),
    };
    let stmt = sql::compile(&t.r, &rename, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "RENAME COLUMN refused without column mapping")
        .await?;
    b.compiled(
        &t,
        &Action::EnableColumnMapping,
        None,
        "column mapping enabled by our step (the mode alone)",
    )
    .await?;
    b.must(&stmt, "RENAME COLUMN accepted after column mapping")
        .await?;
    let v = b
        .scalar(&format!("SELECT {} FROM {}", sql::ident("b2"), t.q))
        .await?;
    if v.as_deref() == Some("x") {
        held(format!(
            "refused before ({}); renamed after, values kept",
            words_line(&w)
        ))
    } else {
        Err(differed("b2 = 'x'", format!("b2 = {v:?}")))
    }
}

async fn drop_needs_column_mapping(b: &Bench) -> Verdict {
    let t = b.table("p_dropcol");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    let drop = Action::DropColumn { name: "b".into() };
    let stmt = sql::compile(&t.r, &drop, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "DROP COLUMN refused without column mapping")
        .await?;
    b.compiled(
        &t,
        &Action::EnableColumnMapping,
        None,
        "column mapping enabled by our step",
    )
    .await?;
    b.must(&stmt, "DROP COLUMN accepted after column mapping")
        .await?;
    let live = b.observe(&t).await?;
    if live.column("b").is_none() {
        held(format!(
            "refused before ({}); dropped after",
            words_line(&w)
        ))
    } else {
        Err(differed("b gone", "b still reads back"))
    }
}

async fn column_mapping_irreversible(b: &Bench) -> Verdict {
    let t = b.table("p_mapping_off");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.compiled(
        &t,
        &Action::EnableColumnMapping,
        None,
        "column mapping can be enabled",
    )
    .await
    .map_err(|o| match o {
        Outcome::Differed { workspace, .. } => Outcome::Unknown {
            why: "enabling column mapping was refused".into(),
            workspace,
        },
        other => other,
    })?;
    let off = format!(
        "ALTER TABLE {} SET TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal("delta.columnMapping.mode"),
        sql::literal("none")
    );
    let w = b
        .refused(
            &off,
            "setting delta.columnMapping.mode back to 'none' is refused",
        )
        .await?;
    held(format!("refused ({})", words_line(&w)))
}

async fn set_not_null_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_set_nn");
    b.setup(&format!("CREATE TABLE {} (a INT, b INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, NULL), (2, 3)", t.q))
        .await?;
    b.compiled(
        &t,
        &Action::SetNotNull {
            path: vec!["a".into()].into(),
        },
        None,
        "SET NOT NULL accepted on a column without NULLs",
    )
    .await?;
    let live = b.observe(&t).await?;
    if live.column("a").is_none_or(|c| c.nullable) {
        return Err(differed("a NOT NULL", "a still reads nullable"));
    }
    let stmt = sql::compile(
        &t.r,
        &Action::SetNotNull {
            path: vec!["b".into()].into(),
        },
        None,
    )
    .map_err(|e| unknown(e.to_string()))?
    .remove(0);
    let w = b
        .refused(&stmt, "SET NOT NULL refused while the column holds NULLs")
        .await?;
    held(format!(
        "in place without NULLs; refused with NULLs ({})",
        words_line(&w)
    ))
}

async fn drop_not_null_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_drop_nn");
    b.setup(&format!(
        "CREATE TABLE {} (a INT NOT NULL) USING DELTA",
        t.q
    ))
    .await?;
    b.compiled(
        &t,
        &Action::DropNotNull {
            path: vec!["a".into()].into(),
        },
        None,
        "DROP NOT NULL accepted",
    )
    .await?;
    let live = b.observe(&t).await?;
    if live.column("a").is_some_and(|c| c.nullable) {
        held("a reads nullable")
    } else {
        Err(differed("a nullable", "a still reads NOT NULL"))
    }
}

async fn restore_undoes_drop_column(b: &Bench) -> Verdict {
    let t = b.table("p_restore_drop");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal("delta.columnMapping.mode"),
        sql::literal("name")
    ))
    .await?;
    b.setup(&format!("INSERT INTO {} VALUES (1, 'x'), (2, 'y')", t.q))
        .await?;
    let v = b.version(&t).await?;
    let drop = Action::DropColumn { name: "b".into() };
    b.compiled(&t, &drop, None, "DROP COLUMN accepted")
        .await
        .map_err(|o| match o {
            Outcome::Differed { workspace, .. } => Outcome::Unknown {
                why: "the DROP COLUMN to undo was refused".into(),
                workspace,
            },
            other => other,
        })?;
    let undo = sql::undo(&sql::Names::Catalog, &t.r, &drop, None, Some(v))
        .ok_or_else(|| unknown("our planner writes no undo for DROP COLUMN"))?;
    b.must(&undo, "RESTORE to the version before the drop is accepted")
        .await?;
    let vals = b
        .scalar(&format!(
            "SELECT concat_ws(',', sort_array(collect_list({}))) FROM {}",
            sql::ident("b"),
            t.q
        ))
        .await?;
    if vals.as_deref() == Some("x,y") {
        held(format!(
            "RESTORE to version {v} brought b back with its values"
        ))
    } else {
        Err(differed("b = x, y", format!("b = {vals:?}")))
    }
}

async fn check_validates_existing_rows(b: &Bench) -> Verdict {
    let t = b.table("p_check_rows");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    b.setup(&format!("INSERT INTO {} VALUES (-1), (5)", t.q))
        .await?;
    let bad = Action::AddCheck {
        check: Check {
            name: "c_nonneg".into(),
            expression: "a >= 0".into(),
        },
    };
    let stmt = sql::compile(&t.r, &bad, None)
        .map_err(|e| unknown(e.to_string()))?
        .remove(0);
    let w = b
        .refused(&stmt, "a CHECK that existing rows break is refused")
        .await?;
    let good = Action::AddCheck {
        check: Check {
            name: "c_floor".into(),
            expression: "a >= -5".into(),
        },
    };
    b.compiled(&t, &good, None, "a CHECK that every row meets is accepted")
        .await?;
    let d = b.detail(&t).await?;
    let props = d.get("properties").cloned().flatten().unwrap_or_default();
    if props.contains("delta.constraints.c_floor") {
        held(format!(
            "refused for breaking rows ({}); stored as delta.constraints.c_floor",
            words_line(&w)
        ))
    } else {
        Err(differed(
            "the property delta.constraints.c_floor",
            format!("properties {props}"),
        ))
    }
}

async fn default_needs_feature(b: &Bench) -> Verdict {
    let t = b.table("p_default");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    let action = Action::SetDefault {
        column: "b".into(),
        expression: "'n/a'".into(),
    };
    let stmts = sql::compile(&t.r, &action, None).map_err(|e| unknown(e.to_string()))?;
    let Some(set_default) = stmts.last().cloned() else {
        return Err(unknown("no SQL"));
    };
    let w = b
        .refused(
            &set_default,
            "SET DEFAULT refused before the feature is enabled",
        )
        .await?;
    for s in &stmts {
        b.must(
            s,
            "our compiled step (feature, then SET DEFAULT) is accepted",
        )
        .await?;
    }
    b.setup(&format!(
        "INSERT INTO {} ({}) VALUES (1)",
        t.q,
        sql::ident("a")
    ))
    .await?;
    let v = b
        .scalar(&format!("SELECT {} FROM {}", sql::ident("b"), t.q))
        .await?;
    if v.as_deref() == Some("n/a") {
        held(format!(
            "refused alone ({}); our two statements work and the default fills inserts",
            words_line(&w)
        ))
    } else {
        Err(differed(
            "an insert without b gets 'n/a'",
            format!("b = {v:?}"),
        ))
    }
}

async fn cluster_by_in_place(b: &Bench) -> Verdict {
    let t = b.table("p_cluster_alter");
    b.setup(&format!(
        "CREATE TABLE {} (a INT, b STRING) USING DELTA",
        t.q
    ))
    .await?;
    b.compiled(
        &t,
        &Action::SetClustering {
            keys: vec!["a".into()],
        },
        None,
        "ALTER TABLE … CLUSTER BY (a) on an unclustered table",
    )
    .await?;
    let keys = json_list(b.detail(&t).await?.get("clusteringColumns"));
    if keys != ["a"] {
        return Err(differed(
            "clusteringColumns [a]",
            format!("clusteringColumns {keys:?}"),
        ));
    }
    b.compiled(
        &t,
        &Action::SetClustering { keys: vec![] },
        None,
        "CLUSTER BY NONE",
    )
    .await?;
    let keys = json_list(b.detail(&t).await?.get("clusteringColumns"));
    if keys.is_empty() {
        held("keys set and cleared in place")
    } else {
        Err(differed(
            "no clustering columns",
            format!("clusteringColumns {keys:?}"),
        ))
    }
}

async fn comments_clear(b: &Bench) -> Verdict {
    let t = b.table("p_comments");
    b.setup(&format!(
        "CREATE TABLE {} (a INT COMMENT 'col') USING DELTA COMMENT 'tbl'",
        t.q
    ))
    .await?;
    b.compiled(
        &t,
        &Action::SetTableComment {
            comment: String::new(),
        },
        None,
        "COMMENT ON TABLE … IS NULL accepted",
    )
    .await?;
    b.compiled(
        &t,
        &Action::SetColumnComment {
            path: vec!["a".into()].into(),
            comment: String::new(),
        },
        None,
        "ALTER COLUMN … COMMENT '' accepted",
    )
    .await?;
    let live = b.observe(&t).await?;
    let table = live.comment.clone().unwrap_or_default();
    let column = live
        .column("a")
        .and_then(|c| c.comment.clone())
        .unwrap_or_default();
    if table.is_empty() && column.is_empty() {
        held("both comments read back empty")
    } else {
        Err(differed(
            "no comments",
            format!("table comment {table:?}, column comment {column:?}"),
        ))
    }
}

/// Names and texts that quoting must carry exactly (the sql.rs tests' hostile list).
const HOSTILE_COLUMNS: &[&str] = &[
    "it's",
    "back\\slash",
    "${x}",
    "ünïcødé ✓ 表",
    "semi;colon",
    "two words",
];
const HOSTILE_COMMENTS: &[&str] = &[
    "O'Reilly",
    "back\\slash",
    "${x} and ${env:HOME}",
    "line1\nline2",
    "ünïcødé ✓ 表",
    "'; DROP TABLE x; --",
    "\\'",
];

async fn hostile_names_round_trip(b: &Bench) -> Verdict {
    let t = b.table("p_hostile");
    let mut d = DesiredTable::new(t.r.clone(), "verify/hostile", vec![]);
    for (i, name) in HOSTILE_COLUMNS.iter().enumerate() {
        let mut c = DesiredColumn::new(name, DataType::String, true);
        c.comment = Some(HOSTILE_COMMENTS[i % HOSTILE_COMMENTS.len()].to_string());
        d.columns.push(c);
    }
    d.comment = Some(HOSTILE_COMMENTS.join(" | "));
    b.must(
        &sql::create_table(&sql::Names::Catalog, &d),
        "CREATE TABLE with hostile names and comments is accepted",
    )
    .await?;
    let live = b.observe(&t).await?;
    let mut wrong = Vec::new();
    for c in &d.columns {
        match live.columns.iter().find(|l| l.name == c.name) {
            None => wrong.push(format!(
                "column {:?} missing (live: {:?})",
                c.name,
                live.columns.iter().map(|l| &l.name).collect::<Vec<_>>()
            )),
            Some(l) if l.comment != c.comment => wrong.push(format!(
                "comment of {:?}: {:?} read back as {:?}",
                c.name, c.comment, l.comment
            )),
            _ => {}
        }
    }
    if live.comment != d.comment {
        wrong.push(format!(
            "table comment {:?} read back as {:?}",
            d.comment, live.comment
        ));
    }
    // a value written through a literal reads back too
    let value = HOSTILE_COMMENTS.join("|");
    b.setup(&format!(
        "INSERT INTO {} ({}) VALUES ({})",
        t.q,
        sql::ident(HOSTILE_COLUMNS[0]),
        sql::literal(&value)
    ))
    .await?;
    let got = b
        .scalar(&format!(
            "SELECT {} FROM {}",
            sql::ident(HOSTILE_COLUMNS[0]),
            t.q
        ))
        .await?;
    if got.as_deref() != Some(value.as_str()) {
        wrong.push(format!("value {value:?} read back as {got:?}"));
    }
    if wrong.is_empty() {
        held(format!(
            "{} column names, their comments, the table comment and a value round-trip exactly",
            HOSTILE_COLUMNS.len()
        ))
    } else {
        Err(differed(
            "every name and text read back exactly",
            wrong.join("; "),
        ))
    }
}

async fn primary_key_statements(b: &Bench) -> Verdict {
    let t = b.table("p_pk");
    b.setup(&format!(
        "CREATE TABLE {} (id INT NOT NULL, v STRING) USING DELTA",
        t.q
    ))
    .await?;
    let key = PrimaryKey {
        name: Some("PK_Mixed_Case".into()),
        columns: vec!["id".into()],
    };
    // live unknown: our compiler sends DROP PRIMARY KEY IF EXISTS first
    b.compiled(
        &t,
        &Action::SetPrimaryKey {
            key,
            replaces: None,
        },
        None,
        "DROP PRIMARY KEY IF EXISTS + ADD CONSTRAINT … PRIMARY KEY are accepted",
    )
    .await?;
    let r = b
        .setup(&format!(
            "SELECT constraint_name FROM {}.information_schema.table_constraints WHERE table_schema = {} AND table_name = {} AND constraint_type = 'PRIMARY KEY'",
            sql::ident(&b.schema.catalog),
            sql::literal(&b.schema.schema),
            sql::literal(&t.r.table)
        ))
        .await?;
    let names: Vec<String> = r.rows.iter().map(|row| cell(row, 0)).collect();
    if names == ["pk_mixed_case"] {
        held("the key was added and its name reads back lower-cased")
    } else {
        Err(differed(
            "one key named pk_mixed_case",
            format!("keys {names:?}"),
        ))
    }
}

async fn history_gives_version(b: &Bench) -> Verdict {
    let t = b.table("p_history");
    b.setup(&format!("CREATE TABLE {} (a INT) USING DELTA", t.q))
        .await?;
    let v0 = b.version(&t).await?;
    b.setup(&format!("INSERT INTO {} VALUES (1)", t.q)).await?;
    let v1 = b.version(&t).await?;
    if v1 == v0 + 1 {
        held(format!("version {v0} → {v1} after one commit"))
    } else {
        Err(differed(
            format!("version {}", v0 + 1),
            format!("version {v1}"),
        ))
    }
}

async fn clone_copies_owner_marker(b: &Bench) -> Verdict {
    let t = b.table("p_marker_src");
    let c = b.table("p_marker_clone");
    b.setup(&format!(
        "CREATE TABLE {} (a INT) USING DELTA TBLPROPERTIES ({} = {})",
        t.q,
        sql::literal(OWNER_PROPERTY),
        sql::literal("verify/probe")
    ))
    .await?;
    b.setup(&format!("CREATE TABLE {} SHALLOW CLONE {}", c.q, t.q))
        .await?;
    let cloned = b.observe(&c).await?;
    if cloned.properties.get(OWNER_PROPERTY).map(String::as_str) != Some("verify/probe") {
        return Err(differed(
            "the clone carries the owner marker",
            format!("clone marker {:?}", cloned.properties.get(OWNER_PROPERTY)),
        ));
    }
    b.compiled(
        &c,
        &Action::UnsetProperties {
            keys: vec![OWNER_PROPERTY.into()],
        },
        None,
        "the clone's marker can be unset",
    )
    .await?;
    let cloned = b.observe(&c).await?;
    let source = b.observe(&t).await?;
    match (
        cloned.properties.get(OWNER_PROPERTY),
        source.properties.get(OWNER_PROPERTY).map(String::as_str),
    ) {
        (None, Some("verify/probe")) => {
            held("copied to the clone; unset there, kept on the source")
        }
        (cm, sm) => Err(differed(
            "clone unmarked, source marked",
            format!("clone {cm:?}, source {sm:?}"),
        )),
    }
}
