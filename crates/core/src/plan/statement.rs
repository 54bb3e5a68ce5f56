//! What a step runs, typed: a SQL statement (a warehouse, a Spark Connect
//! server) or a Delta operation the lake performs itself (there is no SQL
//! engine on the lake: a read, a write of Parquet files, a commit, a folder
//! moved or removed). Each reads, and serializes, as exactly the text the plan
//! shows, so the plan's JSON, a resource's status and the plan id are what
//! they were when statements were plain text.
//!
//! Read back from JSON a statement is its text, as `Sql`: nothing in the
//! operator runs a plan read from JSON (every apply plans again), and that
//! text renders and hashes as it was written.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::compile::VERSION;

/// One statement of a step, in the order it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// SQL, sent as written.
    Sql(String),
    /// A Delta operation the lake performs.
    Delta(DeltaOperation),
}

impl Statement {
    /// The SQL to send, for a SQL statement.
    pub fn as_sql(&self) -> Option<&str> {
        match self {
            Statement::Sql(s) => Some(s),
            Statement::Delta(_) => None,
        }
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Sql(s) => f.write_str(s),
            Statement::Delta(op) => op.fmt(f),
        }
    }
}

impl From<DeltaOperation> for Statement {
    fn from(op: DeltaOperation) -> Self {
        Statement::Delta(op)
    }
}

/// A statement is the text it reads as (tests, and anything written as text).
impl PartialEq<str> for Statement {
    fn eq(&self, other: &str) -> bool {
        match self {
            Statement::Sql(s) => s == other,
            Statement::Delta(op) => op.to_string() == other,
        }
    }
}

impl PartialEq<&str> for Statement {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl PartialEq<String> for Statement {
    fn eq(&self, other: &String) -> bool {
        self == other.as_str()
    }
}

impl Serialize for Statement {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Statement::Sql(text) => s.serialize_str(text),
            Statement::Delta(op) => s.collect_str(op),
        }
    }
}

impl<'de> Deserialize<'de> for Statement {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Statement::Sql)
    }
}

/// What the lake does for a step, one operation at a time. A commit names
/// exactly the operation and action kinds its entry in `_delta_log` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaOperation {
    /// `commit "<operation>" [<actions>] to <table>: <what changes>`.
    Commit(Commit),
    /// Counts the rows where a field has no value, before it becomes NOT NULL.
    CountMissing { table: String, field: String },
    /// Reads a table through DataFusion, as the SELECT says.
    Read {
        table: String,
        at: ReadAt,
        select: String,
    },
    /// Reads the latest version, every row checked as the stage checked the copy.
    ReadChecked { table: String, select: String },
    /// Writes Parquet files into a folder (`folder` as shown, trailing `/` and all).
    WriteFiles { folder: String, casts: Casts },
    /// Checks a staging copy holds as many rows as the version it was made from.
    CheckRowCount { copy: String, table: String },
    /// Writes a staging copy's rows as Parquet files into a folder.
    CopyRows { from: String, folder: String },
    /// Moves a table's folder into the trash (recoverable by moving it back).
    MoveToTrash { table: String, trash: String },
    /// Removes a folder and everything in it (`folder` as shown).
    RemoveFolder { folder: String },
    /// Removes what an earlier run left behind.
    RemoveLeftover { location: String, run: String },
    /// Deletes a path table's folder (its DROP TABLE leaves the files).
    RemovePathTable { table: String },
    /// Deletes the files removed from a table more than `retain_hours` ago,
    /// except those the versions in `keep_versions` need.
    DeleteRemovedFiles {
        table: String,
        retain_hours: u64,
        keep_versions: Vec<u64>,
    },
    /// Writes a checkpoint of a table's log at its latest version.
    WriteCheckpoint { table: String },
}

/// A commit to a table's `_delta_log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub operation: CommitOperation,
    pub actions: Vec<LogAction>,
    /// The table's folder relative to the lake root.
    pub table: String,
    /// What changes, in words.
    pub what: String,
}

/// The operation a commit records (`commitInfo.operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOperation {
    CreateTable,
    SetTableProperties,
    UpdateTableMetadata,
    AddColumn,
    AddConstraint,
    DropConstraint,
    Write,
    Optimize,
    VacuumStart,
    VacuumEnd,
}

impl CommitOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            CommitOperation::CreateTable => "CREATE TABLE",
            CommitOperation::SetTableProperties => "SET TBLPROPERTIES",
            CommitOperation::UpdateTableMetadata => "UPDATE TABLE METADATA",
            CommitOperation::AddColumn => "ADD COLUMN",
            CommitOperation::AddConstraint => "ADD CONSTRAINT",
            CommitOperation::DropConstraint => "DROP CONSTRAINT",
            CommitOperation::Write => "WRITE",
            CommitOperation::Optimize => "OPTIMIZE",
            CommitOperation::VacuumStart => "VACUUM START",
            CommitOperation::VacuumEnd => "VACUUM END",
        }
    }
}

/// A kind of action a commit holds, as the log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogAction {
    Protocol,
    MetaData,
    Add,
    Remove,
}

impl LogAction {
    pub fn as_str(self) -> &'static str {
        match self {
            LogAction::Protocol => "protocol",
            LogAction::MetaData => "metaData",
            LogAction::Add => "add",
            LogAction::Remove => "remove",
        }
    }
}

/// The version a read is made at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// The latest version, when the read starts.
    Latest,
    /// The version the step starts from; `None` shows the placeholder.
    Version(Option<u64>),
}

/// How a rewrite's casts treat a value that does not convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Casts {
    /// It fails the write (and the table's CHECKs are evaluated on every batch).
    Strict,
    /// It becomes NULL, for the staged check to find.
    Safe,
}

/// A version as shown: the number, or the placeholder the run binds.
fn version(v: Option<u64>) -> String {
    v.map_or_else(|| VERSION.to_string(), |v| v.to_string())
}

impl fmt::Display for CommitOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for LogAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Commit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let actions: Vec<&str> = self.actions.iter().map(|a| a.as_str()).collect();
        write!(
            f,
            "commit \"{}\" [{}] to {}: {}",
            self.operation,
            actions.join(", "),
            self.table,
            self.what
        )
    }
}

impl fmt::Display for DeltaOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DeltaOperation as D;
        match self {
            D::Commit(c) => c.fmt(f),
            D::CountMissing { table, field } => write!(
                f,
                "count the rows of {table} where {field} has no value, at the version read"
            ),
            D::Read {
                table,
                at: ReadAt::Latest,
                select,
            } => write!(
                f,
                "read {table} at its latest version through DataFusion: {select}"
            ),
            D::Read {
                table,
                at: ReadAt::Version(v),
                select,
            } => write!(
                f,
                "read {table} at version {} through DataFusion: {select}",
                version(*v)
            ),
            D::ReadChecked { table, select } => write!(
                f,
                "read {table} through DataFusion: {select}, every row checked"
            ),
            D::WriteFiles {
                folder,
                casts: Casts::Strict,
            } => write!(
                f,
                "write Parquet files into {folder} (strict casts; the table's CHECK constraints evaluated on every batch)"
            ),
            D::WriteFiles {
                folder,
                casts: Casts::Safe,
            } => write!(
                f,
                "write Parquet files into {folder} (safe casts: a value that does not convert becomes NULL, for the check to find)"
            ),
            D::CheckRowCount { copy, table } => write!(
                f,
                "check that {copy} holds as many rows as {table} at the version it was made from"
            ),
            D::CopyRows { from, folder } => write!(
                f,
                "read {from} and write its rows as Parquet files into {folder}"
            ),
            D::MoveToTrash { table, trash } => write!(
                f,
                "move the folder {table} to {trash}/<UTC time of the drop>"
            ),
            D::RemoveFolder { folder } => write!(f, "remove the folder {folder}"),
            D::RemoveLeftover { location, run } => {
                write!(f, "remove {location} (left by run {run})")
            }
            D::RemovePathTable { table } => write!(
                f,
                "delete the folder of {table} (a path table's DROP TABLE leaves its files)"
            ),
            D::DeleteRemovedFiles {
                table,
                retain_hours,
                keep_versions,
            } => {
                write!(
                    f,
                    "delete the files removed from {table} more than {retain_hours} hours ago"
                )?;
                match keep_versions.as_slice() {
                    [] => Ok(()),
                    v => write!(
                        f,
                        ", except those versions {} need",
                        v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
                    ),
                }
            }
            D::WriteCheckpoint { table } => write!(
                f,
                "write a checkpoint of {table}'s log at its latest version (_delta_log/_last_checkpoint)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_reads_and_serializes_as_its_text() {
        let commit = Statement::Delta(DeltaOperation::Commit(Commit {
            operation: CommitOperation::AddConstraint,
            actions: vec![LogAction::MetaData, LogAction::Protocol],
            table: "main/sales/orders".into(),
            what: "set 'delta.constraints.c' = 'a > 0'".into(),
        }));
        let text = "commit \"ADD CONSTRAINT\" [metaData, protocol] to main/sales/orders: set 'delta.constraints.c' = 'a > 0'";
        assert_eq!(commit.to_string(), text);
        assert_eq!(commit, text);
        assert_eq!(
            serde_json::to_string(&commit).unwrap(),
            serde_json::to_string(text).unwrap()
        );
        let sql = Statement::Sql("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')".into());
        assert_eq!(
            sql.as_sql(),
            Some("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')")
        );
        assert_eq!(commit.as_sql(), None);
        // read back from JSON: the text, as SQL
        let back: Statement = serde_json::from_str(&serde_json::to_string(&sql).unwrap()).unwrap();
        assert_eq!(back, sql);
    }

    #[test]
    fn a_read_shows_its_version_or_the_placeholder() {
        let read = |v| DeltaOperation::Read {
            table: "a/b/c".into(),
            at: ReadAt::Version(v),
            select: "SELECT x AS x FROM a/b/c".into(),
        };
        assert_eq!(
            read(None).to_string(),
            "read a/b/c at version {version} through DataFusion: SELECT x AS x FROM a/b/c"
        );
        assert_eq!(
            read(Some(7)).to_string(),
            "read a/b/c at version 7 through DataFusion: SELECT x AS x FROM a/b/c"
        );
    }
}
