//! The Databricks probes: each checks, in a scratch schema of a real
//! workspace, one behaviour of Databricks that our plans rely on (the 24 of
//! docs/architecture.md §9, then ours, taken from `Capabilities::databricks()`,
//! the rules and the SQL we compile).
//!
//! Probes are data ([`registry::all`]): a name, the documentation page, one
//! sentence on what in our plans depends on it, flags, and a check. A check says
//! - `Held` when the workspace behaved as we assume (with the evidence),
//! - `Differed` when it did not, with the workspace's own words when it
//!   refused something we expected it to accept,
//! - `Unknown` when it could not be decided (a setup statement was refused,
//!   the control case failed, a statement is not supported there).
//!
//! Every statement goes through the same client as plans and applies, and is
//! written with the SQL module's quoting (`sql::ident`, `sql::literal`,
//! `sql::table_name`); where a probe checks a statement we compile, it uses
//! `sql::compile` itself, so the probe tests what apply would send.
//!
//! The checks live by family: `replace` (rewrites, clones, views and functions
//! replaced), `objects` (views, functions and masks as their plans assume), `columns` (nested fields, identity, CHECK, type changes), `layout`
//! (clustering, partitioning, overwrite, undrop, session behaviour), `grants`,
//! `policies` (materialized views and ABAC), `features` (table features and
//! in-place changes our plans make), `statements` (quoting, keys, history, clones).

use std::future::Future;
use std::pin::Pin;

use crate::outcome::{Flags, Verdict};

mod bench;
mod columns;
mod features;
mod grants;
mod layout;
mod objects;
mod policies;
mod registry;
mod replace;
mod statements;

pub use bench::{Bench, Kind, Tbl};
pub use registry::all;

pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;
pub type CheckFn = fn(&Bench) -> CheckFuture<'_>;

pub struct Probe {
    pub name: &'static str,
    pub docs_url: &'static str,
    /// The assumption, as a sentence.
    pub assumes: &'static str,
    /// What in our plans depends on it.
    pub matters: &'static str,
    pub flags: Flags,
    pub check: CheckFn,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
