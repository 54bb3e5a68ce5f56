//! The planning core (`src/plan`) stays pure: no Kubernetes client, no HTTP, no
//! delta-rs, no async runtime, no file system, network, processes or
//! environment. This scans its sources line by line, comments included.

use std::path::{Path, PathBuf};

/// What no line under src/plan may mention.
const FORBIDDEN: &[&str] = &[
    "kube::",
    "reqwest::",
    "deltalake::",
    "tokio::",
    "use kube",
    "use reqwest",
    "use deltalake",
    "use tokio",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
];

/// The outer layers (see src/lib.rs), which the core must not reach into.
const OUTER_LAYERS: &[&str] = &["crate::backend", "crate::apply", "crate::cli", "crate::engine", "crate::config"];

/// `file:line: mentions `x`: <line>` for every line of `text` naming one of `needles`.
fn scan(file: &str, text: &str, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for needle in needles {
            if line.contains(needle) {
                found.push(format!("{file}:{}: mentions `{needle}`: {}", i + 1, line.trim()));
            }
        }
    }
    found
}

/// Every `.rs` file under `dir`, recursively, in name order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

fn scan_plan(needles: &[&str]) -> (Vec<PathBuf>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = rust_files(&root.join("src/plan"));
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
        let label = f.strip_prefix(root).unwrap_or(f).display().to_string();
        found.extend(scan(&label, &text, needles));
    }
    (files, found)
}

#[test]
fn the_plan_core_does_no_io() {
    let (files, found) = scan_plan(FORBIDDEN);
    assert!(
        found.is_empty(),
        "src/plan is the pure core: move I/O, clients and runtimes to backend/, apply/ or cli/\n{}",
        found.join("\n")
    );
    // the walk did look: at least the module root and a renderer
    let names: Vec<String> = files.iter().map(|f| f.display().to_string().replace('\\', "/")).collect();
    assert!(names.iter().any(|n| n.ends_with("src/plan/mod.rs")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("src/plan/render/text.rs")), "subfolders are scanned: {names:?}");
}

#[test]
fn the_plan_core_does_not_reach_into_outer_layers() {
    let (_, found) = scan_plan(OUTER_LAYERS);
    assert!(found.is_empty(), "src/plan must depend only on model (and spec), not on outer layers\n{}", found.join("\n"));
}

#[test]
fn the_scanner_finds_what_it_should() {
    let text = "\
//! pure
use std::collections::BTreeMap;
use tokio::sync::Mutex;
fn f() {
    let s = std::fs::read_to_string(\"x\");
    let clean = 1;
}
use kube_runtime as k;
// deltalake::DeltaTable in a comment counts too
let v = std::env::var(\"HOME\");
";
    let found = scan("src/plan/x.rs", text, FORBIDDEN);
    assert_eq!(
        found,
        [
            "src/plan/x.rs:3: mentions `tokio::`: use tokio::sync::Mutex;",
            "src/plan/x.rs:3: mentions `use tokio`: use tokio::sync::Mutex;",
            "src/plan/x.rs:5: mentions `std::fs`: let s = std::fs::read_to_string(\"x\");",
            "src/plan/x.rs:8: mentions `use kube`: use kube_runtime as k;",
            "src/plan/x.rs:9: mentions `deltalake::`: // deltalake::DeltaTable in a comment counts too",
            "src/plan/x.rs:10: mentions `std::env`: let v = std::env::var(\"HOME\");",
        ]
    );
    assert!(scan("clean.rs", "use std::fmt;\nuse crate::model::DataType;\n", FORBIDDEN).is_empty());
    assert_eq!(scan("a.rs", "use crate::backend::Backend;", OUTER_LAYERS), ["a.rs:1: mentions `crate::backend`: use crate::backend::Backend;"]);
}

#[test]
fn the_walk_finds_nested_files_only_ending_in_rs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    for f in ["top.rs", "a/b/deep.rs", "a/notes.md", "a/rs"] {
        std::fs::write(dir.path().join(f), "").unwrap();
    }
    let found: Vec<String> =
        rust_files(dir.path()).iter().map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string().replace('\\', "/")).collect();
    assert_eq!(found, ["a/b/deep.rs", "top.rs"]);
}
