//! delta-operator: Delta Lake tables declared as Kubernetes resources.
//!
//! This package is the binary (the CLI, the kubectl plugin and `run`) and
//! re-exports the layers it is made of, which are crates of their own, inner
//! to outer (docs/architecture.md §2):
//!
//! - `delta-operator-core`: `model` and `plan`, the pure core (no I/O crate);
//! - `delta-operator-api`: `spec` (the CRDs and manifests) and `config`;
//! - `delta-operator-backend`: the `Backend` trait, `apply` (the executor), `engine`;
//! - `delta-operator-sql`: `backend::sql`, the Delta SQL dialect the SQL backends share;
//! - `delta-operator-lake`, `delta-operator-databricks`, `delta-operator-spark`: the backends;
//! - `delta-operator-targets`: a config target opened as its backend;
//! - `delta-operator-controller`: the Kubernetes controllers.

pub use delta_operator_api::{config, spec};
pub use delta_operator_backend::apply;
pub use delta_operator_controller as controller;
pub use delta_operator_core::{model, plan};

/// One reconcile's phases: lower (the API crate), then read and plan (the backend seam).
pub mod engine {
    pub use delta_operator_api::inputs::{Inputs, lower};
    pub use delta_operator_backend::engine::{
        observe, observe_objects, observe_schemas, plan_against, plan_against_all,
        plan_with_objects, read_and_plan,
    };
}

/// The backend seam and the backends.
pub mod backend {
    pub use delta_operator_backend::*;
    pub use delta_operator_databricks as databricks;
    pub use delta_operator_lake as lake;
    pub use delta_operator_spark as spark;
    pub use delta_operator_sql as sql;
    pub use delta_operator_targets::AnyBackend;
    pub use delta_operator_targets::open;
}

pub mod cli;
