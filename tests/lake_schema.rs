//! A DeltaSchema's comment, properties, owner and grants on the embedded lake: a
//! schema there is a folder, which holds none of them, so each is a named rule
//! failure (the spec field and the fix), and nothing of the plan is applied.

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
