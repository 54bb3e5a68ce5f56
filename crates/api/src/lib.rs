//! What users write: the CustomResourceDefinitions (`spec::crd`), manifests
//! loaded, validated and lowered into the core's model (`spec`, `inputs`),
//! and the operator config naming the targets (`config`). Depends on the core
//! and on kube's derive types, not on a Kubernetes client.

pub mod config;
pub mod inputs;
pub mod reason;
pub mod spec;
