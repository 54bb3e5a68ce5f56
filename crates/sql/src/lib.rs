//! The Delta SQL dialect, shared by every backend that speaks SQL (a
//! Databricks SQL warehouse, a Spark Connect server for OSS Delta): plan
//! steps compiled to statements, quoted and escaped (`quote`), with their
//! checks and undo, and a step carried out through any `SqlRunner` (`steps`).
//! Pure but for `steps`, which runs statements through the runner it is
//! given; nothing here speaks a protocol.

pub mod compile;
pub mod ddl;
pub mod partitions;
pub mod quote;
pub mod readonly;
pub mod refusal;
pub mod rewrite;
pub mod schema;
pub mod statement;
pub mod steps;
pub mod types;
pub mod undo;

pub use compile::{Binding, SqlCompiler, compile, compile_for, compile_step};
pub use ddl::{DEFAULTS_FEATURE, create_table};
pub use quote::{Names, PRIVILEGES, dotted, field_path, ident, literal, privilege, table_name};
pub use readonly::{describe_detail, history_head, history_recent, is_read_only};
pub use refusal::Refusal;
pub use rewrite::{
    CastMode, checked_query, projection, source_expr, stage_check, stage_problem, staging_table,
};
pub use schema::{compile_schema, schema_name, schema_privilege};
pub use statement::{Cancel, SqlRunner, StatementError, StatementResult};
pub use steps::{is_write_conflict, run_step};
pub use types::{cast_type, sql_type};
pub use undo::undo;

use delta_operator_core::model::privilege::SCHEMA_KNOWN;

/// Why a step has no SQL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    #[error("{0}")]
    Unsupported(String),
    #[error("'{0}' is not a table privilege Databricks knows; use one of {allowed}", allowed = PRIVILEGES.join(", "))]
    UnknownPrivilege(String),
    #[error("'{0}' is not a schema privilege Databricks knows; use one of {allowed}", allowed = SCHEMA_KNOWN.join(", "))]
    UnknownSchemaPrivilege(String),
    #[error("{0} is empty")]
    Empty(&'static str),
}

/// Refuses a statement with nothing in a list that needs at least one item.
pub(crate) fn nonempty(empty: bool, what: &'static str) -> Result<(), SqlError> {
    if empty {
        Err(SqlError::Empty(what))
    } else {
        Ok(())
    }
}
