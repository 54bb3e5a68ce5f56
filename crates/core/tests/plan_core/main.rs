//! Table-driven tests of the pure planning core (`delta_operator_core::plan`),
//! built from `DesiredTable` / `ObservedTable` values directly: every change
//! kind, every rule and law, both backends where their strategies differ,
//! step order and numbering, prerequisites, the typed undo, ownership, orphans,
//! foreign-key ordering, the gate, `holds`, and the plan id.
//!
//! The widening matrix itself is tested next to `model::widening`.

use std::collections::{BTreeMap, BTreeSet};

use delta_operator_core::model::Privilege;
use delta_operator_core::model::{
    CONSTRAINTS_PROPERTY, Check, DataType, DesiredTable, ForeignKey, Grant, Identity, Mask,
    OWNER_PROPERTY, ObservedTable, PrimaryKey, SchemaMode, SchemaRef, Scope, StructField, TableRef,
};
use delta_operator_core::plan::change::DropReason;
use delta_operator_core::plan::gate::{Decision, Policy, gate};
use delta_operator_core::plan::holds::holds;
use delta_operator_core::plan::steps::{Action, Rewrite, RewritePhase, Source, Step};
use delta_operator_core::plan::undo::{Undo, of_step};
use delta_operator_core::plan::{
    self, Capabilities, Change, Outcome, Plan, RiskClass, SchemaScope, Strategy, TableAction,
    TablePlan, plan_delete, plan_orphan, plan_table,
};

mod support;
use support::*;

mod changes;
mod gate;
mod hand_off;
mod holds;
mod id;
mod maintenance;
mod order;
mod plans;
mod regressions;
mod rewrite;
mod rules;
mod scope;
mod undo;
mod unmanaged;
