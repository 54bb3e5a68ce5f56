//! `verify` against a Spark Connect target: what our plans assume of OSS
//! Delta on Spark (`Capabilities::spark_connect()`), each probe on its own
//! scratch table under the target's root (`<root>/<catalog>/<schema>/verify_<run>_<probe>`).
//! Where a probe checks a statement we compile, it runs the target's own
//! compilation (`sql::compile_for` with the target's `Names`), and the result
//! is read back the way plans read it: with delta-rs, through the lake backend.
//! Outcomes are the crate's `Finding`, so `verify` reports both kinds alike.

mod bench;
mod probes;

pub use bench::{CheckFuture, SparkBench, SparkProbe};
pub use probes::all;
