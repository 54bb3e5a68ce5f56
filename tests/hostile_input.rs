//! A corpus of hostile manifests, each with the error it must get: names that
//! would step outside the lake or break a terminal, comments past the limit,
//! `using:` expressions that try to splice SQL, types nested past what a
//! reader can read back, oversized files. Every case runs through the real
//! binary too: an error naming the field and exit 1, never a panic or an
//! abort.

mod support;

use std::process::Command;

use delta_operator::engine::lower;
use delta_operator::spec::load::{Manifests, load_str};
use support::{SCHEMA, table};

const BIN: &str = env!("CARGO_BIN_EXE_delta-operator");

fn column(name_yaml: &str, rest: &str) -> String {
    table(
        "t",
        &format!("  columns:\n    - {{name: {name_yaml}, type: bigint{rest}}}"),
    )
}

/// A table with the column `id` and one CHECK.
fn check(expression: &str) -> String {
    table(
        "t",
        &format!(
            "  columns:\n    - {{name: id, type: bigint}}\n  constraints:\n    - check:\n        name: c\n        expression: '{}'",
            expression.replace('\'', "''")
        ),
    )
}

/// (what, the manifest text, the field path it must name, a phrase of the message)
fn corpus() -> Vec<(&'static str, String, &'static str, &'static str)> {
    let deep = |n: usize| format!("\"{}int{}\"", "struct<a:".repeat(n), ">".repeat(n));
    let deep_array = |n: usize| format!("\"{}int{}\"", "array<".repeat(n), ">".repeat(n));
    vec![
        ("a backslash in a table name", table("t", "  name: 'a\\b'\n  columns:\n    - {name: id, type: int}"), "spec.name", "contains '\\\\'"),
        ("a table named _delta_log", table("t", "  name: _delta_log\n  columns:\n    - {name: id, type: int}"), "spec.name", "_delta_log"),
        ("a table name with ..", table("t", "  name: '..'\n  columns:\n    - {name: id, type: int}"), "spec.name", "contains '.'"),
        ("a hidden table folder", table("t", "  name: .staging\n  columns:\n    - {name: id, type: int}"), "spec.name", "contains '.'"),
        ("an ESC in a table name", table("t", "  name: \"a\\e[31mred\"\n  columns:\n    - {name: id, type: int}"), "spec.name", "control character \\u{1b}"),
        ("a NUL in a column name", column("\"a\\0b\"", ""), "spec.columns[0].name", "control character \\u{0}"),
        ("a newline in a column name", column("\"a\\nb\"", ""), "spec.columns[0].name", "control character \\u{a}"),
        ("a control character in a nested field", table("t", "  columns:\n    - {name: s, type: \"struct<`a\\u0007b`:int>\"}"), "spec.columns[0].type", "control character"),
        ("a table name past the limit", table("t", &format!("  name: {}\n  columns:\n    - {{name: id, type: int}}", "x".repeat(212))), "spec.name", "the limit is 211"),
        ("a column name past 255 bytes", column(&"c".repeat(256), ""), "spec.columns[0].name", "the limit is 255"),
        ("a catalog with a slash", "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: other}\nspec: {catalog: 'a/b'}\n".to_string(), "spec.catalog", "contains '/'"),
        ("a comment past the limit", column("id", &format!(", comment: {}", "c".repeat(16 * 1024 + 1))), "spec.columns[0].comment", "the limit is 16384"),
        ("an ESC in a comment", column("id", ", comment: \"x\\e[2Jy\""), "spec.columns[0].comment", "control character"),
        ("a using: that closes its parenthesis", column("id", ", using: 'a) AS x, (b'"), "spec.columns[0].using", "more than one expression"),
        ("a using: with two expressions", column("id", ", using: 'amount, status'"), "spec.columns[0].using", "more than one expression"),
        ("a using: with an alias", column("id", ", using: 'amount AS id'"), "spec.columns[0].using", "more than one expression"),
        ("a using: with a statement", column("id", ", using: '1; DROP TABLE t'"), "spec.columns[0].using", "more than one expression"),
        ("a using: with a subquery", column("id", ", using: '(SELECT max(id) FROM other)'"), "spec.columns[0].using", "subquery"),
        ("a using: with a window", column("id", ", using: 'row_number() OVER ()'"), "spec.columns[0].using", "window function"),
        ("a using: of *", column("id", ", using: '*'"), "spec.columns[0].using", "'*'"),
        ("a using: past the limit", column("id", &format!(", using: '{}1'", "1+".repeat(3000))), "spec.columns[0].using", "the limit is 4096"),
        ("a using: nested past the parser's limit", column("id", &format!(", using: '{}1{}'", "(".repeat(1500), ")".repeat(1500))), "spec.columns[0].using", "not one SQL expression"),
        ("a CHECK that closes its parenthesis", check("id > 0) OR (1=1"), "spec.constraints[0].check.expression", "more than one expression"),
        ("a CHECK that reads the file a row came from", check("input_file_name() IS NOT NULL"), "spec.constraints[0].check.expression", "not deterministic"),
        ("a CHECK with an aggregate", check("count(*) > 0"), "spec.constraints[0].check.expression", "aggregate"),
        ("a CHECK that makes 2 GB a row", check("length(repeat('x', 2000000000)) > 0"), "spec.constraints[0].check.expression", "at most 1000000"),
        ("a CHECK with a generator", check("size(range(0, id * 100000000)) > 0"), "spec.constraints[0].check.expression", "generator"),
        ("a CHECK nested 60 deep", check(&format!("{}id > 0{}", "(".repeat(60), ")".repeat(60))), "spec.constraints[0].check.expression", "32 levels"),
        ("a using: with an aggregate", column("id", ", using: 'count(*)'"), "spec.columns[0].using", "aggregate"),
        ("a using: with a subquery in ARRAY()", column("id", ", using: 'ARRAY(SELECT 1)'"), "spec.columns[0].using", "subquery"),
        ("a zero-width space in a column name", column("\"i\\u200bd\"", ""), "spec.columns[0].name", "invisible character"),
        ("a struct nested one level too deep", table("t", &format!("  columns:\n    - {{name: s, type: {}}}", deep(31))), "spec.columns[0].type", "deeper than 30"),
        ("a struct nested 1,000 levels (14 KB)", table("t", &format!("  columns:\n    - {{name: s, type: {}}}", deep(1000))), "spec.columns[0].type", "deeper than 30"),
        ("an array nested 30,000 levels", table("t", &format!("  columns:\n    - {{name: s, type: {}}}", deep_array(30_000))), "spec.columns[0].type", "deeper than 30"),
        ("a nested notation 40 levels deep", table("t", &format!("  columns:\n    - name: s\n      type: {}{}", "{array: ".repeat(40), "int".to_string() + &"}".repeat(40))), "spec.columns[0].type", "deeper than 30"),
        ("too many columns", table("t", &format!("  columns:\n{}", (0..4097).map(|i| format!("    - {{name: c{i}, type: int}}\n")).collect::<String>())), "spec.columns", "the limit is 4096"),
        ("too many CHECK constraints", table("t", &format!("  columns:\n    - {{name: id, type: int}}\n  constraints:\n{}", (0..1001).map(|i| format!("    - check: {{name: c{i}, expression: id > {i}}}\n")).collect::<String>())), "spec.constraints", "the limit is 1000 per table"),
    ]
}

fn errors_of(yaml: &str) -> Vec<delta_operator::spec::SpecError> {
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    load_str(
        "hostile.yaml",
        &format!("{SCHEMA}{yaml}"),
        &mut m,
        &mut errors,
    );
    if errors.is_empty()
        && let Err(e) = lower(&m)
    {
        errors = e;
    }
    errors
}

#[test]
fn every_hostile_manifest_gets_its_error_naming_the_field() {
    let mut failed = Vec::new();
    for (what, yaml, path, phrase) in corpus() {
        let errors = errors_of(&yaml);
        let hit = errors.iter().any(|e| {
            (path.is_empty() || e.path == path)
                && (e.message.contains(phrase) || e.to_string().contains(phrase))
        });
        if !hit {
            failed.push(format!(
                "{what}: expected '{phrase}' at '{path}', got {:?}",
                errors
                    .iter()
                    .map(|e| format!("{}: {}", e.path, e.message))
                    .collect::<Vec<_>>()
            ));
        }
        for e in &errors {
            assert!(
                !e.to_string().chars().any(|c| c == '\u{1b}' || c == '\0'),
                "{what}: the message carries a raw control character"
            );
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_binary_refuses_every_hostile_manifest_with_exit_1_and_never_aborts() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, yaml, path, _)) in corpus().into_iter().enumerate() {
        let file = dir.path().join(format!("case{i}.yaml"));
        std::fs::write(&file, format!("{SCHEMA}{yaml}")).unwrap();
        let out = Command::new(BIN)
            .current_dir(dir.path())
            .args(["validate", "-f", file.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: exit {:?} (a signal means a crash): {stderr}",
            out.status
        );
        assert!(
            stderr.contains("fix:") && (path.is_empty() || stderr.contains(path)),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        // plan reads the same manifest: refused the same way, and nothing is written
        let out = Command::new(BIN)
            .current_dir(dir.path())
            .args(["plan", "-f", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: plan exit {:?}",
            out.status
        );
    }
    assert!(!dir.path().join("lake").exists());
}

#[test]
fn an_oversized_manifest_file_is_refused_with_the_limit_and_how_to_split() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.yaml");
    let mut text = String::from(SCHEMA);
    while text.len() <= 1024 * 1024 {
        text.push_str(&table(&format!("t{}", text.len()), "  columns:\n    - {name: id, type: int, comment: 'padding padding padding padding padding padding padding padding'}"));
    }
    std::fs::write(&file, &text).unwrap();
    let out = Command::new(BIN)
        .args(["validate", "-f", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("the limit is 1048576 bytes") && stderr.contains("split it"),
        "{stderr}"
    );
}

/// A user's text that looks like the plan's placeholders (`{run}`, `{version}`, which a
/// staged rewrite binds when it runs) is kept exactly as written, in the table's comment
/// and its columns': binding compiles the step again with the run's values, it never
/// edits the text.
#[tokio::test]
async fn placeholder_lookalikes_in_comments_survive_a_staged_rewrite() {
    use deltalake::arrow::array::{ArrayRef, Int64Array};
    let lake = support::Lake::new();
    let text = "kept: {run} {version} {{run}} {run";
    let m = |amount: &str| {
        support::manifests(&format!(
            "{SCHEMA}{}",
            table(
                "t",
                &format!(
                    "  comment: '{text}'\n  columns:\n    - {{name: id, type: bigint, comment: '{text}'}}\n    - {{name: amount, type: {amount}, comment: '{text}'}}\n"
                ),
            )
        ))
    };
    lake.apply(&m("bigint"), true).await.expect("created");
    let ids: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![1, 2, 3]));
    let amounts: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![10, 20, 30]));
    lake.append(&support::tref("t"), vec![("id", ids), ("amount", amounts)])
        .await;
    // bigint -> int may fail per row: a staged rewrite, whose statements hold the placeholders
    let narrowed = m("int");
    let plan = lake.plan(&narrowed).await;
    let statements: Vec<String> = plan.tables[0]
        .steps()
        .iter()
        .flat_map(|s| s.statements.iter().map(ToString::to_string))
        .collect();
    assert!(
        statements.iter().any(|s| s.contains("{run}")),
        "a step bound at run time: {statements:#?}"
    );
    lake.apply(&narrowed, true).await.expect("rewritten");
    let live = lake.read(&support::tref("t")).await.expect("the table");
    assert_eq!(live.comment.as_deref(), Some(text), "the table's comment");
    for c in &live.columns {
        assert_eq!(c.comment.as_deref(), Some(text), "{}'s comment", c.name);
    }
    assert_eq!(lake.count(&support::tref("t")).await, 3, "every row kept");
    assert!(
        !lake.plan(&narrowed).await.has_changes(),
        "converged: nothing left to change"
    );
}
