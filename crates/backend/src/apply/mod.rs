//! The executor, shared by the CLI and the controller: re-reads and re-plans,
//! refuses a stale or unapproved plan, then runs each table's steps in order,
//! skipping what already holds and recording a restore point before every
//! rewrite or destructive step.

pub mod bind;
pub mod objects;

mod error;
mod gated;
mod guard;
mod options;
mod report;
mod run;
mod schemas;
mod tables;

pub use error::ApplyError;
pub use gated::{apply, apply_planned};
pub use objects::ObjectStepReport;
pub use options::{Event, Options};
pub use report::{
    ApplyReport, LockedTable, SchemaStepReport, StepReport, StepStatus, TableReport, TableStatus,
    planned_tables,
};
pub use run::run_plan;
