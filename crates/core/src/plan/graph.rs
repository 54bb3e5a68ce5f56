//! The dependency graph of a plan: tables, views and functions, and what
//! each reads or calls. It orders the apply (dependencies first) and blocks
//! what depends on something refused.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::{ObjectRef, TableRef};

/// A node of the graph: a table or a view, function or volume.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    Table(TableRef),
    Object(ObjectRef),
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Table(t) => t.fmt(f),
            Node::Object(o) => o.fmt(f),
        }
    }
}
