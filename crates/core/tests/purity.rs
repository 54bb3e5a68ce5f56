//! The core stays pure. Which crates it may name is enforced by Cargo: it
//! depends on serde, serde_json, sha2 and thiserror only, so a Kubernetes
//! client, HTTP, delta-rs or an async runtime cannot even be imported here.
//! This checks that dependency closure with `cargo tree`, and scans the
//! sources for what Cargo cannot forbid: std's file system, network,
//! processes and environment.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The core's only direct dependencies.
const ALLOWED: &[&str] = &["serde", "serde_json", "sha2", "thiserror"];

/// Crates that must not appear anywhere in the core's dependency closure.
const NEVER: &[&str] = &[
    "kube",
    "k8s-openapi",
    "tokio",
    "reqwest",
    "hyper",
    "deltalake",
    "datafusion",
    "object_store",
    "futures",
];

/// What no line of the core may mention.
const FORBIDDEN: &[&str] = &["std::fs", "std::net", "std::process", "std::env"];

fn core_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `cargo tree` of the core's normal dependencies: one crate name per line.
fn dependency_closure() -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(core_dir())
        .args([
            "tree",
            "--offline",
            "-p",
            "delta-operator-core",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_core_depends_on_no_io_crate() {
    let closure = dependency_closure();
    assert!(
        closure.iter().any(|c| c == "delta-operator-core")
            && closure.iter().any(|c| c == "serde_json"),
        "cargo tree listed: {closure:?}"
    );
    let bad: Vec<&String> = closure
        .iter()
        .filter(|c| NEVER.contains(&c.as_str()))
        .collect();
    assert!(
        bad.is_empty(),
        "the core's dependency closure holds {bad:?}: {closure:?}"
    );
    let manifest = std::fs::read_to_string(core_dir().join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap_or_default()
        .split("\n[")
        .next()
        .unwrap_or_default();
    let direct: Vec<&str> = deps
        .lines()
        .filter_map(|l| l.split(['.', '=', ' ']).next())
        .filter(|n| !n.is_empty() && !n.starts_with('#'))
        .collect();
    assert_eq!(direct, ALLOWED, "the core's direct dependencies");
}

/// Every `.rs` file under `dir`, recursively, in name order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// `file:line: mentions `x`: <line>` for every line of `text` naming one of `needles`.
fn scan(file: &str, text: &str, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for needle in needles.iter().filter(|n| line.contains(*n)) {
            found.push(format!(
                "{file}:{}: mentions `{needle}`: {}",
                i + 1,
                line.trim()
            ));
        }
    }
    found
}

#[test]
fn the_core_does_no_io() {
    let files = rust_files(&core_dir().join("src"));
    let names: Vec<String> = files
        .iter()
        .map(|f| f.display().to_string().replace('\\', "/"))
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with("src/plan/mod.rs"))
            && names.iter().any(|n| n.ends_with("src/plan/render/text.rs")),
        "subfolders are scanned: {names:?}"
    );
    let mut found = Vec::new();
    for f in &files {
        found.extend(scan(
            &f.display().to_string(),
            &std::fs::read_to_string(f).unwrap(),
            FORBIDDEN,
        ));
    }
    assert!(
        found.is_empty(),
        "the core does no I/O: move it to a backend crate or the CLI\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scanner_finds_what_it_should() {
    let text = "use std::collections::BTreeMap;\nlet s = std::fs::read_to_string(\"x\");\n// std::env::var in a comment counts too\n";
    assert_eq!(
        scan("x.rs", text, FORBIDDEN),
        [
            "x.rs:2: mentions `std::fs`: let s = std::fs::read_to_string(\"x\");",
            "x.rs:3: mentions `std::env`: // std::env::var in a comment counts too"
        ]
    );
    assert!(scan("clean.rs", "use std::fmt;\n", FORBIDDEN).is_empty());
}
