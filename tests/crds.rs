//! The committed CRDs (`crds/delta-operator.yaml`) are exactly what the binary
//! prints, and carry what kubectl and the API server rely on.

use std::path::Path;

use delta_operator::cli::crds_yaml;
use serde_json::Value;

const COMMITTED: &str = "crds/delta-operator.yaml";
const REGENERATE: &str = "cargo run -- crds > crds/delta-operator.yaml";

fn committed() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; run `{REGENERATE}`", path.display()))
}

/// The CRD documents of a YAML stream.
fn parse(text: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .unwrap_or_else(|e| panic!("the CRDs are not valid YAML: {e}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// The CRD whose `spec.names.kind` is `kind`.
fn crd<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind))
        .unwrap_or_else(|| panic!("no CRD for kind {kind}"))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer}"))
}

/// Where two texts first differ, for the failure message.
fn first_difference(expected: &str, actual: &str) -> String {
    let (mut e, mut a) = (expected.lines(), actual.lines());
    for n in 1.. {
        match (e.next(), a.next()) {
            (None, None) => {
                return "the texts differ only in line endings or a final newline".to_string();
            }
            (x, y) if x == y => continue,
            (x, y) => {
                return format!(
                    "first difference at line {n}:\n  generated: {x:?}\n  committed: {y:?}"
                );
            }
        }
    }
    unreachable!()
}

#[test]
fn committed_crds_are_current() {
    let generated = crds_yaml();
    let committed = committed();
    assert!(
        generated == committed,
        "{COMMITTED} is stale: the CRDs changed. Run `{REGENERATE}` (or `make crds`) and commit the result.\n{}",
        first_difference(&generated, &committed)
    );
}

#[test]
fn the_staleness_check_reports_where() {
    let text = "a: 1\nb: 2\n";
    let msg = first_difference(text, "a: 1\nb: 3\n");
    assert!(
        msg.contains("line 2") && msg.contains("b: 2") && msg.contains("b: 3"),
        "{msg}"
    );
    assert!(first_difference(text, "a: 1\nb: 2").contains("final newline"));
}

#[test]
fn every_crd_is_in_the_group_at_v1alpha1() {
    let docs = parse(&crds_yaml());
    assert_eq!(docs.len(), 5, "one CRD per kind");
    for (kind, plural) in [
        ("DeltaSchema", "deltaschemas"),
        ("DeltaTable", "deltatables"),
        ("DeltaView", "deltaviews"),
        ("DeltaFunction", "deltafunctions"),
        ("DeltaVolume", "deltavolumes"),
    ] {
        let c = crd(&docs, kind);
        assert_eq!(str_at(c, "/apiVersion"), "apiextensions.k8s.io/v1");
        assert_eq!(str_at(c, "/kind"), "CustomResourceDefinition");
        assert_eq!(
            str_at(c, "/metadata/name"),
            format!("{plural}.delta-operator.io")
        );
        assert_eq!(str_at(c, "/spec/group"), "delta-operator.io");
        assert_eq!(str_at(c, "/spec/scope"), "Namespaced");
        let versions = c
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .expect("versions");
        assert_eq!(versions.len(), 1, "{kind}: one version");
        assert_eq!(str_at(&versions[0], "/name"), "v1alpha1");
        assert_eq!(versions[0]["served"], Value::Bool(true), "{kind}: served");
        assert_eq!(versions[0]["storage"], Value::Bool(true), "{kind}: stored");
        assert!(
            versions[0].pointer("/subresources/status").is_some(),
            "{kind}: a status subresource"
        );
    }
}

#[test]
fn short_names() {
    let docs = parse(&crds_yaml());
    assert_eq!(
        crd(&docs, "DeltaTable")["spec"]["names"]["shortNames"],
        serde_json::json!(["dt"])
    );
    assert_eq!(
        crd(&docs, "DeltaSchema")["spec"]["names"]["shortNames"],
        serde_json::json!(["ds"])
    );
    for (kind, short) in [
        ("DeltaView", "dv"),
        ("DeltaFunction", "dfn"),
        ("DeltaVolume", "dvol"),
    ] {
        assert_eq!(
            crd(&docs, kind)["spec"]["names"]["shortNames"],
            serde_json::json!([short]),
            "{kind}"
        );
    }
}

#[test]
fn printer_columns() {
    let docs = parse(&crds_yaml());
    let names = |kind: &str| -> Vec<String> {
        crd(&docs, kind)
            .pointer("/spec/versions/0/additionalPrinterColumns")
            .and_then(Value::as_array)
            .expect("printer columns")
            .iter()
            .map(|c| str_at(c, "/name").to_string())
            .collect()
    };
    assert_eq!(
        names("DeltaTable"),
        ["TABLE", "READY", "PLAN", "RISK", "SCOPE", "APPLYING", "AGE"]
    );
    assert_eq!(names("DeltaSchema"), ["SCHEMA", "READY", "MODE", "AGE"]);
    for kind in ["DeltaView", "DeltaFunction", "DeltaVolume"] {
        assert_eq!(
            names(kind),
            ["OBJECT", "READY", "PLAN", "RISK", "AGE"],
            "{kind}"
        );
    }
    // the scope only with -o wide (priority 1), from the spec the API server defaults
    let scope = &crd(&docs, "DeltaTable")["spec"]["versions"][0]["additionalPrinterColumns"][4];
    assert_eq!(
        (str_at(scope, "/jsonPath"), scope["priority"].as_i64()),
        (".spec.scope", Some(1))
    );
    let applying = &crd(&docs, "DeltaTable")["spec"]["versions"][0]["additionalPrinterColumns"][5];
    assert_eq!(str_at(applying, "/jsonPath"), ".status.apply.current");
    let age = &crd(&docs, "DeltaTable")["spec"]["versions"][0]["additionalPrinterColumns"][6];
    assert_eq!(
        (str_at(age, "/type"), str_at(age, "/jsonPath")),
        ("date", ".metadata.creationTimestamp")
    );
}

#[test]
fn a_column_type_accepts_a_string_or_a_nested_object() {
    let docs = parse(&crds_yaml());
    let columns = crd(&docs, "DeltaTable")
        .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/columns")
        .expect("spec.columns in the schema");
    assert_eq!(columns["type"], "array");
    let ty = columns
        .pointer("/items/properties/type")
        .expect("spec.columns.items.properties.type");
    assert_eq!(
        ty["x-kubernetes-preserve-unknown-fields"],
        Value::Bool(true),
        "{ty}"
    );
    assert!(
        ty.get("type").is_none(),
        "no fixed type, so a string and a mapping both pass the API server: {ty}"
    );
    let required = columns
        .pointer("/items/required")
        .and_then(Value::as_array)
        .expect("required");
    // a type is required at scope Full only (validation says so): a narrow-scope spec
    // annotates a column without stating its shape
    assert!(
        required.contains(&Value::from("name")) && !required.contains(&Value::from("type")),
        "{required:?}"
    );
}

#[test]
fn the_yaml_round_trips() {
    let text = crds_yaml();
    let docs = parse(&text);
    let expected: Vec<Value> = delta_operator::spec::crd::all()
        .iter()
        .map(|c| serde_json::to_value(c).expect("a CRD serializes"))
        .collect();
    assert_eq!(
        docs, expected,
        "the YAML reads back as the CRDs it was written from"
    );
    // and writing what was read gives the same text
    let rewritten: String = docs
        .iter()
        .map(|d| format!("---\n{}", serde_saphyr::to_string(d).expect("serializes")))
        .collect();
    assert!(rewritten == text, "{}", first_difference(&rewritten, &text));
}
