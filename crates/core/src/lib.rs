//! The pure core of delta-operator: the domain model (`model`) and the
//! planner (`plan`: diff, rules, steps, plan ids, the gate, renderers).
//!
//! Nothing here does I/O, and the crate cannot: it depends on serde,
//! serde_json, sha2 and thiserror only, so no Kubernetes client, HTTP, Delta
//! or async runtime can be named here. Everything is a function of its
//! inputs, so the controller and the CLI plan identically, and a saved
//! observed state reproduces a plan anywhere.

pub mod model;
pub mod plan;

/// Builders for tests (this crate's and other crates'), behind the `testing`
/// feature so they are not part of the operator.
#[cfg(feature = "testing")]
pub mod testing;
