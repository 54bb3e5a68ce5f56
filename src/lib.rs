//! delta-operator: Delta Lake tables declared as Kubernetes resources.
//!
//! Layers, inner to outer: `model` (the domain) ← `spec` (what users declare)
//! ← `plan` (the pure core: diff, steps, rules, renderers) ← `backend`
//! (delta-rs lake, Databricks) ← `apply` (the executor) ← `cli` / `controller`.

pub mod model;
pub mod plan;
pub mod spec;
pub mod apply;
pub mod backend;
pub mod cli;
pub mod config;
pub mod engine;
pub mod controller;
