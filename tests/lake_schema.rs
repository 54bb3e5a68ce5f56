//! A DeltaSchema on the embedded lake: a schema there is a folder. An absent
//! one is created (a visible CREATE SCHEMA step, before its tables); its
//! comment, properties, owner, grants and managed location have nowhere to go,
//! so each is a named rule failure (the spec field and the fix), and nothing
//! of the plan is applied.

use std::path::Path;
use std::process::{Command, Output};

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_delta-operator"))
        .args(args)
        .current_dir(dir)
        .env_remove("DELTA_OPERATOR_CONFIG")
        .output()
        .expect("run the binary")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const TABLE: &str = "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: orders}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: id, type: bigint}\n";

fn write(dir: &Path, schema_spec: &str) {
    let schema = format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec:\n  catalog: main\n{schema_spec}"
    );
    std::fs::write(dir.join("m.yaml"), schema + TABLE).unwrap();
}

#[test]
fn what_a_folder_cannot_hold_is_refused_by_name_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "  comment: Sales\n  properties: {team: revenue, gone: null}\n  owner: data-eng\n  grants:\n    - {principal: analysts, privileges: [USE SCHEMA]}\n",
    );
    let plan = run(dir.path(), &["plan", "-f", "m.yaml"]);
    let out = text(&plan);
    assert_eq!(plan.status.code(), Some(1), "{out}");
    for field in ["comment", "properties", "owner", "grants"] {
        assert!(
            out.contains(&format!(
                "✗ NotSupportedByBackend (spec.{field}): the lake backend cannot keep a schema's"
            )),
            "spec.{field} is not refused by name:\n{out}"
        );
        assert!(
            out.contains(&format!("fix: remove spec.{field} from the DeltaSchema")),
            "no fix for spec.{field}:\n{out}"
        );
    }
    let json = run(dir.path(), &["plan", "-f", "m.yaml", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["schemas"][0]["outcome"], "rejected", "{v}");
    assert_eq!(
        v["schemas"][0]["failures"][0]["rule"],
        "NotSupportedByBackend"
    );

    let apply = run(dir.path(), &["apply", "-f", "m.yaml"]);
    assert_eq!(apply.status.code(), Some(1), "{}", text(&apply));
    assert!(
        !dir.path().join("lake/main/sales/orders").exists(),
        "a refused plan applies nothing, not even the schema's tables"
    );

    // without the metadata the same manifests apply (a null property only removes: nothing to hold)
    write(dir.path(), "  properties: {gone: null}\n");
    let apply = run(dir.path(), &["apply", "-f", "m.yaml"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    assert!(
        dir.path()
            .join("lake/main/sales/orders/_delta_log")
            .exists()
    );
}

#[test]
fn an_absent_schema_is_created_as_its_folder_before_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "");
    let plan = run(dir.path(), &["plan", "-f", "m.yaml"]);
    let out = text(&plan);
    assert_eq!(plan.status.code(), Some(2), "{out}");
    assert!(out.contains("main.sales   + schema create"), "{out}");
    assert!(out.contains("1. CREATE SCHEMA"), "{out}");
    assert!(
        out.contains("> create the folder main/sales/ (kept as it is when it exists)"),
        "{out}"
    );
    assert!(out.contains("never drops a schema"), "{out}");
    assert!(
        out.contains("Plan: 2 to add, 0 to change, 0 to destroy"),
        "{out}"
    );
    // the schema's block comes before its tables'
    let schema_at = out.find("+ schema create").unwrap();
    let table_at = out.find("main.sales.orders").unwrap();
    assert!(schema_at < table_at, "{out}");
    assert!(!dir.path().join("lake").exists(), "plan writes nothing");

    let apply = run(dir.path(), &["apply", "-f", "m.yaml"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    assert!(dir.path().join("lake/main/sales").is_dir());
    assert!(
        dir.path()
            .join("lake/main/sales/orders/_delta_log")
            .exists()
    );
    let again = run(dir.path(), &["plan", "-f", "m.yaml"]);
    let out = text(&again);
    assert_eq!(again.status.code(), Some(0), "{out}");
    assert!(
        out.contains("Plan: 0 to add, 0 to change, 0 to destroy"),
        "{out}"
    );
    assert!(!out.contains("CREATE SCHEMA"), "{out}");

    // an empty schema folder is a schema: created once, never again
    std::fs::remove_dir_all(dir.path().join("lake/main/sales/orders")).unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: sales}\nspec:\n  catalog: main\n",
    )
    .unwrap();
    let only_schema = run(dir.path(), &["plan", "-f", "s.yaml"]);
    assert_eq!(only_schema.status.code(), Some(0), "{}", text(&only_schema));
}

#[test]
fn a_managed_location_is_refused_on_the_lake_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "  managedLocation: s3://bucket/sales\n");
    let plan = run(dir.path(), &["plan", "-f", "m.yaml"]);
    let out = text(&plan);
    assert_eq!(plan.status.code(), Some(1), "{out}");
    assert!(
        out.contains("✗ NotSupportedByBackend (spec.managedLocation)"),
        "{out}"
    );
    assert!(
        out.contains("fix: remove spec.managedLocation from the DeltaSchema"),
        "{out}"
    );
    let apply = run(dir.path(), &["apply", "-f", "m.yaml"]);
    assert_eq!(apply.status.code(), Some(1), "{}", text(&apply));
    assert!(
        !dir.path().join("lake/main/sales").exists(),
        "nothing applied"
    );
}

#[test]
fn a_schema_that_cannot_be_created_leaves_its_tables_unrun() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "");
    // the catalog's place holds a file: the schema's folder cannot be made there
    std::fs::create_dir(dir.path().join("lake")).unwrap();
    std::fs::write(dir.path().join("lake/main"), b"not a folder").unwrap();
    let apply = run(dir.path(), &["apply", "-f", "m.yaml"]);
    let out = text(&apply);
    assert_eq!(apply.status.code(), Some(1), "{out}");
    assert!(
        out.contains("its schema main.sales was not created"),
        "{out}"
    );
    assert!(
        dir.path().join("lake/main").is_file(),
        "nothing replaced it"
    );
}
