//! How an apply runs (policy, lock wait, the callbacks) and the progress
//! events it sends.

use futures::future::BoxFuture;

use std::time::Duration;

use delta_operator_core::model::TableRef;
use delta_operator_core::plan::Step;
use delta_operator_core::plan::gate::Policy;

use super::{ObjectStepReport, SchemaStepReport, StepReport};

/// Events for progress output.
pub enum Event<'a> {
    Started {
        table: &'a TableRef,
        step: &'a Step,
    },
    Progress {
        table: &'a TableRef,
        step: &'a Step,
        message: &'a str,
    },
    /// Rows the running step has written so far (a lake rewrite, about every second).
    Rows {
        table: &'a TableRef,
        step: &'a Step,
        rows: crate::RowsDone,
    },
    /// A rewrite or destructive step recorded the version it starts from.
    RestorePoint {
        table: &'a TableRef,
        version: u64,
    },
    Finished(&'a StepReport),
    /// A schema step ended (applied, skipped, failed or not run).
    SchemaFinished(&'a SchemaStepReport),
    /// An object's step ended (applied, skipped or failed).
    ObjectFinished(&'a ObjectStepReport),
}

/// How an apply runs: the policy, how long to wait for a table another apply
/// holds, and the callbacks.
pub struct Options<'a> {
    pub policy: Policy,
    /// How long to wait for a table's lock before refusing (the holder is named).
    pub lock_wait: Duration,
    pub on_event: &'a (dyn Fn(Event<'_>) + Send + Sync),
    /// Asked before every step (the controller's Lease): when it says no, nothing more runs.
    pub may_continue: &'a (dyn Fn() -> bool + Send + Sync),
    /// Asked right before every step, and unlike `may_continue` it checks the
    /// truth outside this process (the controller reads its Lease back): an
    /// error stops the apply there, the step failing with its words.
    pub fence: Option<&'a (dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync)>,
}
