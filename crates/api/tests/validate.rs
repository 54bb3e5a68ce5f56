//! Offline validation through the public API: manifests as YAML text (and a few
//! real files and folders), loaded, validated and lowered as the CLI does. Each
//! rule gets a case that pins the error's file, path, message and fix: most are
//! rows of the table (`cases()`, run by `the_table_of_cases`, a failing row
//! named in the panic); the tests that read files, loop over many values or
//! look at more than the errors stay tests of their own.

use std::fs;
use std::path::{Path, PathBuf};

use delta_operator_api::inputs as engine;
use delta_operator_api::spec::load::{load_paths, load_str};
use delta_operator_api::spec::validate::validate;
use delta_operator_api::spec::{Manifests, SpecError};
use delta_operator_core::model::names::printable;

// ---------------------------------------------------------------------------
// Helpers

const SCHEMA: &str = "\
apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata:
  name: sales
spec:
  catalog: main
";

/// A DeltaTable named `name` in schema `sales`; `spec` is the rest of the spec,
/// written without indentation (it is indented under `spec:` here).
fn table(name: &str, spec: &str) -> String {
    let body: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata:\n  name: {name}\nspec:\n  schemaRef: sales\n{body}"
    )
}

/// `docs` joined into one multi-document YAML stream.
fn stream(docs: &[&str]) -> String {
    docs.iter().map(|d| format!("---\n{d}")).collect()
}

fn load(files: &[(&str, &str)]) -> (Manifests, Vec<SpecError>) {
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    for (file, text) in files {
        load_str(file, text, &mut m, &mut errors);
    }
    (m, errors)
}

/// Every error the CLI would report for these files: the load errors when there
/// are any, else what validation and lowering find.
fn errors(files: &[(&str, &str)]) -> Vec<SpecError> {
    let (m, load_errors) = load(files);
    if !load_errors.is_empty() {
        return load_errors;
    }
    let validated = validate(&m);
    match engine::lower(&m) {
        Ok(inputs) => {
            // what lower accepts despite validate is a foreign-key verdict, carried on the
            // table it refuses (the plan refuses that table alone)
            let mut carried: Vec<(String, String)> = inputs
                .tables
                .iter()
                .flat_map(|t| t.refusals.iter())
                .map(|r| (r.path.clone(), r.message.clone()))
                .collect();
            let mut expected: Vec<(String, String)> = validated
                .iter()
                .map(|e| (e.path.clone(), e.message.clone()))
                .collect();
            carried.sort();
            expected.sort();
            assert_eq!(
                carried, expected,
                "lower accepted what validate refused, and not as a table's refusal"
            );
            validated
        }
        Err(lowered) => {
            if !validated.is_empty() {
                assert_eq!(
                    lowered, validated,
                    "lower must report exactly validate's errors"
                );
            }
            lowered
        }
    }
}

/// The schema `sales` in `schema.yaml` plus `doc` in `table.yaml`.
fn errors_with_schema(doc: &str) -> Vec<SpecError> {
    errors(&[("schema.yaml", SCHEMA), ("table.yaml", doc)])
}

fn show(errs: &[SpecError]) -> String {
    errs.iter().map(|e| format!("{e}\n")).collect()
}

/// The one error in `errs`.
fn only(errs: Vec<SpecError>) -> SpecError {
    assert_eq!(
        errs.len(),
        1,
        "expected exactly one error, got:\n{}",
        show(&errs)
    );
    errs.into_iter().next().unwrap()
}

/// The error at `path` (there must be exactly one there).
fn at<'a>(errs: &'a [SpecError], path: &str) -> &'a SpecError {
    let here: Vec<&SpecError> = errs.iter().filter(|e| e.path == path).collect();
    assert_eq!(
        here.len(),
        1,
        "expected one error at {path}, got:\n{}",
        show(errs)
    );
    here[0]
}

/// Asserts where the error is and that its message and fix say what they should
/// (each needle is looked for case-insensitively).
#[track_caller]
fn check(e: &SpecError, file: &str, path: &str, message: &[&str], fix: &[&str]) {
    assert_eq!(e.file, file, "file of: {e}");
    assert_eq!(e.path, path, "path of: {e}");
    for m in message {
        assert!(
            e.message.to_lowercase().contains(&m.to_lowercase()),
            "message should mention {m:?}: {e}"
        );
    }
    assert!(!e.fix.trim().is_empty(), "fix is empty: {e}");
    for f in fix {
        assert!(
            e.fix.to_lowercase().contains(&f.to_lowercase()),
            "fix should mention {f:?}: {e}"
        );
    }
}

/// One case of the table: manifests (file name and text) and every error they
/// must give, each pinned as `check` pins it; none for a case that shows what
/// stays valid.
struct Case {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    expect: Vec<Expect>,
}

/// One error a case must give: where, and what its message and fix say.
struct Expect {
    file: &'static str,
    path: &'static str,
    message: &'static [&'static str],
    fix: &'static [&'static str],
    /// The resource the error names, where the case pins it.
    resource: Option<&'static str>,
}

/// The schema `sales` in `schema.yaml` plus `doc` in `table.yaml`.
fn with_schema(doc: impl ToString) -> Vec<(&'static str, String)> {
    vec![
        ("schema.yaml", SCHEMA.to_string()),
        ("table.yaml", doc.to_string()),
    ]
}

impl Case {
    /// Panics (through `check`, `only` and `at`) when the errors differ.
    fn verify(&self) {
        let files: Vec<(&str, &str)> = self.files.iter().map(|(f, t)| (*f, t.as_str())).collect();
        let errs = errors(&files);
        match self.expect.as_slice() {
            [] => assert!(errs.is_empty(), "{}", show(&errs)),
            [x] => x.check(&only(errs)),
            many => {
                assert_eq!(errs.len(), many.len(), "{}", show(&errs));
                for x in many {
                    x.check(at(&errs, x.path));
                }
            }
        }
    }
}

/// An error a case must give: at `path` of `file`, its message and fix
/// mentioning each needle (see `check`).
fn error(
    file: &'static str,
    path: &'static str,
    message: &'static [&'static str],
    fix: &'static [&'static str],
) -> Expect {
    Expect {
        file,
        path,
        message,
        fix,
        resource: None,
    }
}

impl Expect {
    /// The error must name this resource too.
    fn naming(self, resource: &'static str) -> Self {
        Expect {
            resource: Some(resource),
            ..self
        }
    }

    fn check(&self, e: &SpecError) {
        check(e, self.file, self.path, self.message, self.fix);
        if let Some(resource) = self.resource {
            assert_eq!(e.resource.as_deref(), Some(resource), "resource of: {e}");
        }
    }
}

/// Every case of `cases()`, each run on its own: a failing case is reported
/// by its name with its panic message, after all the others ran.
#[test]
fn the_table_of_cases() {
    let cases = cases();
    let mut failed = Vec::new();
    for case in &cases {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case.verify()));
        if let Err(panic) = outcome {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_default();
            failed.push(format!("case '{}': {why}", case.name));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

#[test]
fn case_names_are_unique() {
    let cases = cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "two cases share a name");
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

const ORDERS: &str = "\
columns:
  - name: id
    type: bigint
    nullable: false
  - name: amount
    type: int
  - name: order_date
    type: date";

// ---------------------------------------------------------------------------
// The baseline: the fixtures themselves are valid, so every error below comes
// from the one thing each test breaks.

#[test]
fn examples_validate_clean() {
    let (m, errs) = load_paths(&[examples_dir()]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!(
        (m.schemas.len(), m.tables.len()),
        (1, 2),
        "examples/ holds one DeltaSchema and two DeltaTables"
    );
    let errs = validate(&m);
    assert!(errs.is_empty(), "{}", show(&errs));
    let inputs = engine::lower(&m).unwrap_or_else(|e| panic!("{}", show(&e)));
    let mut names: Vec<String> = inputs.tables.iter().map(|t| t.table.to_string()).collect();
    names.sort();
    assert_eq!(names, ["main.sales.customers", "main.sales.orders"]);
}

/// examples-databricks/ (a view, a function and a volume over examples/'
/// schema, kept apart so `apply -f examples/` works on the lake) validates
/// with examples/, and the view reads what its query names.
#[test]
fn databricks_examples_validate_clean() {
    let dbx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples-databricks");
    let (m, errs) = load_paths(&[examples_dir(), dbx]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!(
        (m.views.len(), m.functions.len(), m.volumes.len()),
        (1, 1, 1)
    );
    let errs = validate(&m);
    assert!(errs.is_empty(), "{}", show(&errs));
    let inputs = engine::lower(&m).unwrap_or_else(|e| panic!("{}", show(&e)));
    let view = inputs
        .objects
        .iter()
        .find(|o| o.object.to_string() == "main.sales.recent_orders")
        .expect("the view");
    let relations: Vec<String> = view.reads.relations.iter().map(|r| r.to_string()).collect();
    assert_eq!(relations, ["main.sales.customers", "main.sales.orders"]);
    let functions: Vec<String> = view.reads.functions.iter().map(|r| r.to_string()).collect();
    assert_eq!(functions, ["main.sales.mask_email"]);
    assert!(
        view.reads.reads_column(
            &delta_operator_core::model::TableRef::new("main", "sales", "customers"),
            "email"
        ),
        "{:?}",
        view.reads
    );
}

// ---------------------------------------------------------------------------
// Constraints

const CUSTOMERS: &str = "\
columns:
  - name: id
    type: bigint
    nullable: false
  - name: region
    type: string
constraints:
  - primaryKey: {columns: [id]}";

#[test]
fn foreign_key_cycle_across_two_tables() {
    let fk = |to: &str| {
        format!(
            "columns:\n  - {{name: id, type: bigint, nullable: false}}\n  - {{name: other_id, type: bigint}}\nconstraints:\n  - primaryKey: {{columns: [id]}}\n  - foreignKey: {{columns: [other_id], references: {to}, referencedColumns: [id]}}"
        )
    };
    let a = table("alpha", &fk("beta"));
    let b = table("beta", &fk("alpha"));
    let errs = errors(&[
        ("schema.yaml", SCHEMA),
        ("alpha.yaml", &a),
        ("beta.yaml", &b),
    ]);
    // each table of the cycle is refused (neither can be created first)
    assert_eq!(errs.len(), 2, "{}", show(&errs));
    for (e, file) in errs.iter().zip(["alpha.yaml", "beta.yaml"]) {
        check(
            e,
            file,
            "spec.constraints",
            &["cycle", "main.sales.alpha", "main.sales.beta"],
            &["break the cycle"],
        );
    }
    // one direction only is fine
    let b = table(
        "beta",
        "columns:\n  - {name: id, type: bigint, nullable: false}\nconstraints:\n  - primaryKey: {columns: [id]}",
    );
    assert!(
        errors(&[
            ("schema.yaml", SCHEMA),
            ("alpha.yaml", &a),
            ("beta.yaml", &b)
        ])
        .is_empty()
    );
}

#[test]
fn foreign_key_to_a_column_that_is_not_the_parents_key_or_spelled_or_typed_otherwise() {
    let customers = "columns:\n  - {name: id, type: bigint, nullable: false}\n  - {name: Region, type: string}\nconstraints:\n  - primaryKey: {columns: [id]}";
    let orders = |fk: &str| {
        table(
            "orders",
            &format!(
                "columns:\n  - {{name: id, type: bigint}}\n  - {{name: customer_id, type: int}}\n  - {{name: region, type: string}}\nconstraints:\n  - foreignKey: {fk}"
            ),
        )
    };
    let run = |fk: &str| {
        errors(&[
            ("schema.yaml", SCHEMA),
            ("orders.yaml", &orders(fk)),
            ("customers.yaml", &table("customers", customers)),
        ])
    };
    // not the parent's key
    let e = only(run(
        "{columns: [region], references: customers, referencedColumns: [Region]}",
    ));
    check(
        &e,
        "orders.yaml",
        "spec.constraints[0].foreignKey.referencedColumns",
        &[
            "(Region) is not the primary key of main.sales.customers",
            "(id)",
        ],
        &["primary key"],
    );
    // another spelling than the parent's
    let e = only(run(
        "{columns: [region], references: customers, referencedColumns: [REGION]}",
    ));
    check(
        &e,
        "orders.yaml",
        "spec.constraints[0].foreignKey.referencedColumns[0]",
        &["'REGION' is spelled 'Region'"],
        &["spell the referenced column"],
    );
    // another type than the parent's key
    let e = only(run(
        "{columns: [customer_id], references: customers, referencedColumns: [id]}",
    ));
    check(
        &e,
        "orders.yaml",
        "spec.constraints[0].foreignKey.columns[0]",
        &["'customer_id' is int", "main.sales.customers.id is bigint"],
        &["type of the column it references"],
    );
}

// ---------------------------------------------------------------------------
// Properties and names

#[test]
fn reserved_properties() {
    let doc = table(
        "orders",
        &format!(
            "{ORDERS}\nproperties:\n  delta-operator.io/owner: someone/else\n  delta.minReaderVersion: \"3\"\n  delta.appendOnly: \"true\""
        ),
    );
    let errs = errors_with_schema(&doc);
    assert_eq!(errs.len(), 2, "{}", show(&errs));
    for key in ["delta-operator.io/owner", "delta.minReaderVersion"] {
        let path = format!("spec.properties.{key}");
        check(
            at(&errs, &path),
            "table.yaml",
            &path,
            &["managed by Delta or by the operator"],
            &["remove it"],
        );
    }
    let schema = SCHEMA.replace(
        "catalog: main",
        "catalog: main\n  properties:\n    delta.minWriterVersion: \"7\"",
    );
    let e = only(errors(&[("schema.yaml", &schema)]));
    check(
        &e,
        "schema.yaml",
        "spec.properties.delta.minWriterVersion",
        &["managed by Delta"],
        &["remove it"],
    );
}

#[test]
fn metadata_name_must_be_a_kubernetes_name() {
    let fix = "use a lowercase name like 'order-items' and set spec.name to the table's name";
    let e = only(errors_with_schema(&table("Order_Items", ORDERS)));
    check(
        &e,
        "table.yaml",
        "metadata.name",
        &["'Order_Items'", "not a valid Kubernetes name"],
        &[fix],
    );
    // spec.name does not make a bad metadata.name acceptable
    let e = only(errors_with_schema(&table(
        "Order_Items",
        &format!("name: Order_Items\n{ORDERS}"),
    )));
    check(
        &e,
        "table.yaml",
        "metadata.name",
        &["not a valid Kubernetes name"],
        &[fix],
    );
    for bad in ["-orders", "orders-", "orders..v2", "orders.-v2", "ord ers"] {
        let doc = table(&format!("\"{bad}\""), &format!("name: orders\n{ORDERS}"));
        let e = only(errors_with_schema(&doc));
        check(
            &e,
            "table.yaml",
            "metadata.name",
            &[&format!("'{bad}'"), "not a valid Kubernetes name"],
            &[fix],
        );
    }
    let long = "a".repeat(254);
    let e = only(errors_with_schema(&table(
        &long,
        &format!("name: orders\n{ORDERS}"),
    )));
    check(&e, "table.yaml", "metadata.name", &["at most 253"], &[fix]);
    // what the fix says to do is valid
    for good in ["order-items", "orders.v2", "o", "2024-orders"] {
        let errs = errors_with_schema(&table(good, &format!("name: order_items\n{ORDERS}")));
        assert!(errs.is_empty(), "{good}: {}", show(&errs));
    }
    assert!(
        errors_with_schema(&table(&"a".repeat(253), &format!("name: orders\n{ORDERS}"))).is_empty()
    );
}

// ---------------------------------------------------------------------------
// Across manifests

#[test]
fn manifests_without_a_namespace_are_in_default() {
    // the schema names no namespace, the table says `default`: same namespace
    let doc = table("orders", ORDERS).replace("name: orders", "name: orders\n  namespace: default");
    let (m, errs) = load(&[("schema.yaml", SCHEMA), ("table.yaml", &doc)]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!(m.schemas[0].namespace(), "default");
    assert_eq!(m.schemas[0].label(), "DeltaSchema default/sales");
    assert!(validate(&m).is_empty(), "{}", show(&validate(&m)));
    // and the other way round
    let schema = SCHEMA.replace("name: sales", "name: sales\n  namespace: default");
    let errs = errors(&[
        ("schema.yaml", &schema),
        ("table.yaml", &table("orders", ORDERS)),
    ]);
    assert!(errs.is_empty(), "{}", show(&errs));
    // a table in another namespace does not see it
    let doc = table("orders", ORDERS).replace("name: orders", "name: orders\n  namespace: prod");
    let e = only(errors(&[("schema.yaml", SCHEMA), ("table.yaml", &doc)]));
    check(
        &e,
        "table.yaml",
        "spec.schemaRef",
        &["no DeltaSchema 'sales'"],
        &["namespace 'default'"],
    );
}

#[test]
fn duplicate_schemas() {
    let e = only(errors(&[("a.yaml", SCHEMA), ("b.yaml", SCHEMA)]));
    assert_eq!(e.path, "metadata.name");
    assert!(
        e.message.contains("2 DeltaSchemas named default/sales"),
        "{e}"
    );
    assert!(!e.fix.is_empty());
}

// ---------------------------------------------------------------------------
// Files and documents

#[test]
fn documents_of_other_api_groups_are_skipped() {
    let text = stream(&[
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [orders.yaml]\n",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sales\n",
        // our kind in someone else's group is not ours either
        "apiVersion: example.com/v1\nkind: DeltaTable\nmetadata:\n  name: elsewhere\nspec:\n  nonsense: true\n",
        SCHEMA,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  unknown: keys\n",
        &table("orders", ORDERS),
    ]);
    let (m, errs) = load(&[("all.yaml", &text)]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!((m.schemas.len(), m.tables.len()), (1, 1));
    assert_eq!(m.tables[0].name(), "orders");
    assert!(validate(&m).is_empty());
}

#[test]
fn a_multi_document_file() {
    let bad = table("customers", "columns:\n  - name: id\n    type: bigit");
    let text = stream(&[SCHEMA, &table("orders", ORDERS), &bad, ""]);
    let (m, errs) = load(&[("sales.yaml", &text)]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!((m.schemas.len(), m.tables.len()), (1, 2));
    assert!(m.tables.iter().all(|t| t.file == "sales.yaml"));
    let e = only(errors(&[("sales.yaml", &text)]));
    check(
        &e,
        "sales.yaml",
        "spec.columns[0].type",
        &["unknown type 'bigit'"],
        &["did you mean 'bigint'?"],
    );
    assert_eq!(
        e.resource.as_deref(),
        Some("DeltaTable default/customers"),
        "the error names the document it is in"
    );
}

#[test]
fn a_document_with_load_errors_is_left_out_and_the_others_kept() {
    let bad = table("customers", &format!("{CUSTOMERS}\npolicy: Sometimes"));
    let text = stream(&[SCHEMA, &bad, &table("orders", ORDERS)]);
    let (m, errs) = load(&[("sales.yaml", &text)]);
    let e = only(errs);
    check(&e, "sales.yaml", "spec.policy", &["'Sometimes'"], &["Auto"]);
    assert_eq!(e.resource.as_deref(), Some("DeltaTable default/customers"));
    assert_eq!((m.schemas.len(), m.tables.len()), (1, 1));
    assert_eq!(m.tables[0].name(), "orders");
}

#[test]
fn files_and_folders_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("tables")).unwrap();
    fs::write(root.join("schema.yaml"), SCHEMA).unwrap();
    fs::write(root.join("tables/orders.yml"), table("orders", ORDERS)).unwrap();
    let bad = table(
        "customers",
        "columns:\n  - name: id\n    type: bigint\n    nulable: false",
    );
    fs::write(root.join("tables/customers.yaml"), &bad).unwrap();
    // not a manifest: ignored when its folder is given
    fs::write(root.join("tables/notes.txt"), "kind: [not yaml").unwrap();

    let (m, errs) = load_paths(&[root.to_path_buf()]);
    let e = only(errs);
    let file = root.join("tables/customers.yaml").display().to_string();
    check(
        &e,
        &file,
        "spec.columns[0].nulable",
        &["unknown key 'nulable'"],
        &["did you mean 'nullable'?"],
    );
    assert_eq!((m.schemas.len(), m.tables.len()), (1, 1));
    assert_eq!(
        m.tables[0].file,
        root.join("tables/orders.yml").display().to_string()
    );

    // validation errors carry the file the table came from, too
    fs::write(
        root.join("tables/customers.yaml"),
        table(
            "customers",
            "columns:\n  - name: id\n    type: int\n    identity: {}",
        ),
    )
    .unwrap();
    let (m, errs) = load_paths(&[root.to_path_buf()]);
    assert!(errs.is_empty(), "{}", show(&errs));
    let e = only(engine::lower(&m).unwrap_err());
    check(
        &e,
        &file,
        "spec.columns[0].identity",
        &["must be bigint"],
        &["bigint"],
    );

    // a file named directly is read whatever its extension
    let odd = root.join("manifest.txt");
    fs::write(&odd, SCHEMA).unwrap();
    let (m, errs) = load_paths(&[odd]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!(m.schemas.len(), 1);
}

#[test]
fn a_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let (_, errs) = load_paths(std::slice::from_ref(&missing));
    let e = only(errs);
    assert_eq!(e.file, missing.display().to_string());
    assert!(e.message.contains("no such file"), "{e}");
    assert!(!e.fix.is_empty());
}

// ---------------------------------------------------------------------------
// Fixes made after review

#[test]
fn a_misspelt_spec_is_reported_with_a_suggestion() {
    let doc = "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: t}\nsepc:\n  schemaRef: sales\n  columns: [{name: a, type: int}]\n";
    let errs = errors_with_schema(doc);
    check(
        at(&errs, "sepc"),
        "table.yaml",
        "sepc",
        &["unknown key 'sepc'"],
        &["did you mean 'spec'"],
    );
    check(
        at(&errs, "spec"),
        "table.yaml",
        "spec",
        &["required"],
        &["spec"],
    );
}

// ---------------------------------------------------------------------------
// Expressions (issue 26): a CHECK is parsed exactly as a `using:` is.

/// ORDERS with one more column, `paid boolean`, and the CHECK `expr`.
fn orders_with_check(expr: &str) -> String {
    let quoted = expr.replace('\'', "''");
    table(
        "orders",
        &format!(
            "{ORDERS}\n  - name: paid\n    type: boolean\n  - name: note\n    type: string\nconstraints:\n  - check:\n      name: c\n      expression: '{quoted}'"
        ),
    )
}

#[test]
fn a_check_is_one_deterministic_bounded_condition_over_declared_columns() {
    for (expr, says) in [
        // closes CHECK ( … ) and opens another: was spliced, stored truncated
        ("id > 0) OR (1=1", "more than one expression"),
        ("id > 0; DROP TABLE x", "more than one expression"),
        // delta-rs fails every append on these
        ("input_file_name() IS NOT NULL", "not deterministic"),
        ("rand() < 2", "not deterministic"),
        ("current_timestamp() > order_date", "not deterministic"),
        // left a created table without its CHECK
        ("count(*) > 0", "aggregate"),
        ("max(amount) > 0", "aggregate"),
        ("row_number() OVER () > 0", "window"),
        ("id IN (SELECT 1)", "subquery"),
        ("size(array(explode(array(1)))) > 0", "generator"),
        // gigabytes of memory on a ten-row table
        ("size(range(0, id * 100000000)) > 0", "generator"),
        ("length(repeat('x', 2000000000)) > 0", "at most 1000000"),
        ("length(repeat('x', amount)) > 0", "literal number"),
        ("my_function(amount) > 0", "not among the functions"),
        // not a condition
        ("amount", "not a condition"),
        ("amount + 1", "not a condition"),
        ("'yes'", "not a condition"),
    ] {
        let errs = errors_with_schema(&orders_with_check(expr));
        let e = only(errs);
        check(
            &e,
            "table.yaml",
            "spec.constraints[0].check.expression",
            &[says],
            &[],
        );
    }
    // nesting 60 deep is refused on the parse tree, not left to the engine
    let deep = format!("{}id > 0{}", "(".repeat(60), ")".repeat(60));
    let e = only(errors_with_schema(&orders_with_check(&deep)));
    check(
        &e,
        "table.yaml",
        "spec.constraints[0].check.expression",
        &["32 levels"],
        &[],
    );
}

#[test]
fn a_check_is_lowered_as_its_printed_parse_tree() {
    for (written, printed) in [
        ("amount>=0 and id>0", "amount >= 0 AND id > 0"),
        ("paid", "paid"),
        ("(paid) or note is not null", "(paid) OR note IS NOT NULL"),
        ("upper(note) IN ('A','B')", "upper(note) IN ('A', 'B')"),
    ] {
        let doc = orders_with_check(written);
        assert!(errors_with_schema(&doc).is_empty(), "{written}");
        let (m, _) = load(&[("schema.yaml", SCHEMA), ("table.yaml", &doc)]);
        let inputs = engine::lower(&m).unwrap();
        assert_eq!(inputs.tables[0].checks[0].expression, printed);
    }
}

#[test]
fn using_refuses_aggregates_subqueries_and_unbounded_sizes() {
    for (using, says) in [
        ("count(*)", "aggregate"),
        ("ARRAY(SELECT 1)", "subquery"),
        ("uuid()", "not deterministic"),
        ("repeat('x', 2000000000)", "at most 1000000"),
        ("sequence(0, id * 100000000)", "generator"),
    ] {
        let doc = table(
            "orders",
            &format!(
                "columns:\n  - name: id\n    type: bigint\n  - name: x\n    type: string\n    using: '{}'",
                using.replace('\'', "''")
            ),
        );
        let e = only(errors_with_schema(&doc));
        check(&e, "table.yaml", "spec.columns[1].using", &[says], &[]);
    }
}

#[test]
fn a_file_over_the_yaml_budget_says_so_and_names_the_limit() {
    // under the 1 MiB file limit, over the reader's 250,000 nodes
    let many = format!("items: [{}]\n", "1,".repeat(260_000));
    assert!(many.len() < 1024 * 1024);
    let e = only(errors(&[("many.yaml", &many)]));
    check(
        &e,
        "many.yaml",
        "",
        &["over the YAML reader's budget", "250000 nodes"],
        &["split the file"],
    );
    assert!(!e.fix.contains("syntax"), "{e}");
    let deep = format!("a: {}1{}\n", "[".repeat(80), "]".repeat(80));
    let e = only(errors(&[("deep.yaml", &deep)]));
    check(
        &e,
        "deep.yaml",
        "",
        &["over the YAML reader's budget", "64 levels"],
        &["flatten"],
    );
}

// ---------------------------------------------------------------------------
// Names (issue 26): one name to a reader, different strings to an engine.

#[test]
fn columns_that_differ_only_by_normalisation_or_lookalike_letters_are_refused() {
    for (a, b, says) in [
        // NFC é, then NFD e + combining acute
        ("caf\u{e9}", "cafe\u{301}", "normalisation"),
        // Latin o, then Cyrillic о
        ("orders", "\u{43e}rders", "look the same"),
        // Latin a, then Cyrillic а in the middle
        ("payment", "p\u{430}yment", "look the same"),
        // ASCII, then full-width letters (NFKC makes them ASCII)
        (
            "amount",
            "\u{ff41}\u{ff4d}\u{ff4f}\u{ff55}\u{ff4e}\u{ff54}",
            "normalisation",
        ),
    ] {
        let doc = table(
            "orders",
            &format!(
                "columns:\n  - name: id\n    type: bigint\n  - name: \"{a}\"\n    type: int\n  - name: \"{b}\"\n    type: int"
            ),
        );
        let e = only(errors_with_schema(&doc));
        check(
            &e,
            "table.yaml",
            "spec.columns[2].name",
            &[says, "spec.columns[1].name"],
            &["rename one"],
        );
        assert!(e.message.contains(&format!("'{a}'")), "{e}");
    }
    // struct fields at one level
    let doc = table(
        "orders",
        "columns:\n  - name: id\n    type: bigint\n  - name: address\n    type: \"struct<city:string,`\u{441}ity`:string>\"",
    );
    let e = only(errors_with_schema(&doc));
    check(
        &e,
        "table.yaml",
        "spec.columns[1].type",
        &["struct fields", "'city'", "look the same"],
        &["rename one"],
    );
}

/// A DeltaSchema `resource` declaring schema `name` of catalog `catalog`.
fn schema_doc(resource: &str, name: &str, catalog: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata:\n  name: {resource}\nspec:\n  name: \"{name}\"\n  catalog: \"{catalog}\"\n"
    )
}

#[test]
fn schemas_of_one_catalog_that_look_the_same_are_refused_naming_both() {
    for (a, b, says) in [
        // Latin a, then Cyrillic а
        ("sales", "s\u{430}les", "look the same"),
        // NFC é, then NFD e + combining acute
        ("caf\u{e9}", "cafe\u{301}", "normalisation"),
        // ASCII, then full-width letters
        (
            "sales",
            "\u{ff53}\u{ff41}\u{ff4c}\u{ff45}\u{ff53}",
            "normalisation",
        ),
    ] {
        let e = only(errors(&[
            ("a.yaml", &schema_doc("first", a, "main")),
            ("b.yaml", &schema_doc("second", b, "main")),
        ]));
        check(
            &e,
            "b.yaml",
            "spec.name",
            &[
                &format!("schema '{}' and schema '{a}'", printable(b)),
                "DeltaSchema default/first",
                "a.yaml",
                "same catalog",
                says,
            ],
            &["rename one"],
        );
        assert_eq!(e.resource.as_deref(), Some("DeltaSchema default/second"));
        // in another catalog the same pair is fine
        assert!(
            errors(&[
                ("a.yaml", &schema_doc("first", a, "main")),
                ("b.yaml", &schema_doc("second", b, "other")),
            ])
            .is_empty()
        );
    }
    // catalogs of one target: Cyrillic а in "main"
    let e = only(errors(&[
        ("a.yaml", &schema_doc("first", "sales", "main")),
        ("b.yaml", &schema_doc("second", "sales", "m\u{430}in")),
    ]));
    check(
        &e,
        "b.yaml",
        "spec.catalog",
        &[
            "catalog 'm\u{430}in' and catalog 'main'",
            "a.yaml",
            "look the same",
        ],
        &["rename one"],
    );
    // an invisible character (a zero-width joiner): refused in the name itself, and as
    // one name with the other to a reader
    let errs = errors(&[
        ("a.yaml", &schema_doc("first", "sales", "main")),
        ("b.yaml", &schema_doc("second", "sa\u{200d}les", "main")),
    ]);
    assert_eq!(errs.len(), 2, "{}", show(&errs));
    check(
        &errs[0],
        "b.yaml",
        "spec.name",
        &["invisible character"],
        &["remove it"],
    );
    check(
        &errs[1],
        "b.yaml",
        "spec.name",
        &[
            "schema 'sa\\u{200d}les' and schema 'sales'",
            "a.yaml",
            "differ only by invisible characters: \\u{200d}",
        ],
        &["rename one"],
    );
}

#[test]
fn invisible_characters_in_a_name_are_refused() {
    for c in ['\u{200b}', '\u{200c}', '\u{200d}', '\u{feff}', '\u{ad}'] {
        let doc = table(
            "orders",
            &format!("columns:\n  - name: \"i{c}d\"\n    type: bigint"),
        );
        let e = only(errors_with_schema(&doc));
        check(
            &e,
            "table.yaml",
            "spec.columns[0].name",
            &["invisible character"],
            &["remove it"],
        );
        let doc = table(
            "orders",
            &format!("name: \"ord{c}ers\"\ncolumns:\n  - name: id\n    type: bigint"),
        );
        let e = only(errors_with_schema(&doc));
        check(
            &e,
            "table.yaml",
            "spec.name",
            &["invisible character"],
            &["remove it"],
        );
    }
}

#[test]
fn a_name_that_needs_column_mapping_in_a_table_that_turns_it_off_is_refused() {
    let spec = |props: &str| {
        table(
            "orders",
            &format!(
                "{props}columns:\n  - name: id\n    type: bigint\n  - name: unit price\n    type: int\n  - name: address\n    type: \"struct<city:string,`zip code`:string>\""
            ),
        )
    };
    let errs = errors_with_schema(&spec("properties:\n  delta.columnMapping.mode: none\n"));
    check(
        at(&errs, "spec.columns[1].name"),
        "table.yaml",
        "spec.columns[1].name",
        &[
            "'unit price'",
            "column mapping",
            "delta.columnMapping.mode: none",
        ],
        &["rename it", "delta.columnMapping.mode: name"],
    );
    check(
        at(&errs, "spec.columns[2].name"),
        "table.yaml",
        "spec.columns[2].name",
        &["'address.zip code'", "column mapping"],
        &["rename it"],
    );
    assert_eq!(errs.len(), 2, "{}", show(&errs));
    // mapping on, or left to the backend (Databricks turns it on; the lake's plan refuses)
    assert!(
        errors_with_schema(&spec("properties:\n  delta.columnMapping.mode: name\n")).is_empty()
    );
    assert!(errors_with_schema(&spec("")).is_empty());
}

#[test]
fn a_name_that_needs_column_mapping_is_refused_for_a_lake_target_as_plan_refuses_it() {
    use delta_operator_api::spec::validate::names_needing_column_mapping;
    let doc = |props: &str| {
        table(
            "orders",
            &format!(
                "{props}columns:\n  - name: id\n    type: bigint\n  - name: \"unit=price\"\n    type: int"
            ),
        )
    };
    let (m, _) = load(&[("schema.yaml", SCHEMA), ("table.yaml", &doc(""))]);
    assert!(validate(&m).is_empty());
    // the schema names no target: the default one, here a lake
    let e = only(names_needing_column_mapping(&m, |t| t.is_none()));
    check(
        &e,
        "table.yaml",
        "spec.columns[1].name",
        &["'unit=price'", "'='", "column mapping", "the lake"],
        &["rename it", "delta.columnMapping.mode: name"],
    );
    // a backend that turns mapping on itself, or mapping on in the spec: nothing to refuse
    assert!(names_needing_column_mapping(&m, |_| false).is_empty());
    let (m, _) = load(&[
        ("schema.yaml", SCHEMA),
        (
            "table.yaml",
            &doc("properties:\n  delta.columnMapping.mode: name\n"),
        ),
    ]);
    assert!(names_needing_column_mapping(&m, |_| true).is_empty());
}

// ---------------------------------------------------------------------------
// The table: each case is manifests and the errors they must give (none for a
// case that shows what stays valid).

fn cases() -> Vec<Case> {
    [
        cases_the_baseline(),
        cases_against_the_crd_schema(),
        cases_types(),
        cases_columns_and_layout(),
        cases_constraints(),
        cases_properties_and_names(),
        cases_across_manifests(),
        cases_every_error_at_once(),
        cases_fixes_made_after_review(),
        cases_expressions_issue_26(),
        cases_names_issue_26(),
        cases_scopes_issue_30(),
        cases_hand_off_issue_30(),
        cases_maintenance_issue_34(),
        cases_objects_issue_33(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The baseline: the fixtures themselves are valid, so every error in the other
/// cases comes from the one thing each case breaks.
fn cases_the_baseline() -> Vec<Case> {
    Vec::from([Case {
        name: "the_fixtures_are_valid",
        files: with_schema(table("orders", ORDERS)),
        expect: vec![],
    }])
}

/// Against the CRD schema (at load time)
fn cases_against_the_crd_schema() -> Vec<Case> {
    Vec::from([
        Case {
            name: "unknown_key_at_top_level: `labels` belongs under metadata",
            files: with_schema(format!(
                "{}labels:\n  team: sales\n",
                table("orders", ORDERS)
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "labels",
                    &["unknown key 'labels'"],
                    &["remove it", "spec"],
                )
                .naming("DeltaTable default/orders"),
            ],
        },
        Case {
            name: "unknown_key_in_spec_suggests_the_nearest",
            files: with_schema(table(
                "orders",
                &format!("{ORDERS}\npartitionBy: [order_date]"),
            )),
            expect: vec![error(
                "table.yaml",
                "spec.partitionBy",
                &["unknown key 'partitionBy'"],
                &["did you mean 'partitionedBy'?"],
            )],
        },
        Case {
            name: "unknown_key_in_a_column_suggests_the_nearest",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: id\n    type: bigint\n  - name: amount\n    type: int\n    nulable: false",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[1].nulable",
                &["unknown key 'nulable'"],
                &["did you mean 'nullable'?"],
            )],
        },
        Case {
            name: "unknown_key_far_from_any_lists_the_known_keys",
            files: with_schema(table("orders", &format!("{ORDERS}\nretention: 30d"))),
            expect: vec![error(
                "table.yaml",
                "spec.retention",
                &["unknown key 'retention'"],
                &["remove it", "partitionedBy", "columns"],
            )],
        },
        Case {
            name: "wrong_value_type_a_list_where_a_string_is_expected",
            files: with_schema(
                table("orders", &format!("{ORDERS}\ncomment: [one, two]"))
                    .replace("schemaRef: sales", "schemaRef: [sales]"),
            ),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.schemaRef",
                    &["expected string", "found a list"],
                    &[],
                ),
                error(
                    "table.yaml",
                    "spec.comment",
                    &["expected string", "found a list"],
                    &[],
                ),
            ],
        },
        Case {
            name: "wrong_value_type_scalars",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: id\n    type: bigint\n    nullable: maybe\n    comment: 42",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.columns[0].nullable",
                    &["expected boolean", "found a string"],
                    &["boolean"],
                ),
                error(
                    "table.yaml",
                    "spec.columns[0].comment",
                    &["expected string", "found a number"],
                    &["quote"],
                ),
            ],
        },
        Case {
            name: "wrong_value_type_a_mapping_where_a_list_is_expected",
            files: with_schema(table("orders", "columns:\n  name: id\n  type: bigint")),
            expect: vec![error(
                "table.yaml",
                "spec.columns",
                &["expected array", "found a mapping"],
                &["array"],
            )],
        },
        Case {
            name: "bad_enum_value",
            files: with_schema(table("orders", &format!("{ORDERS}\npolicy: Automatic"))),
            expect: vec![error(
                "table.yaml",
                "spec.policy",
                &["'Automatic'", "Auto", "Manual", "Observe"],
                &["Auto"],
            )],
        },
        Case {
            name: "bad_drift_policy",
            files: with_schema(table("orders", &format!("{ORDERS}\ndriftPolicy: Alert"))),
            expect: vec![error(
                "table.yaml",
                "spec.driftPolicy",
                &["'Alert'", "Report", "Fail"],
                &["Report"],
            )],
        },
        Case {
            name: "bad_enum_value_in_the_wrong_case_suggests_the_right_one",
            files: with_schema(table(
                "orders",
                &format!("{ORDERS}\ndeletionPolicy: delete"),
            )),
            expect: vec![error(
                "table.yaml",
                "spec.deletionPolicy",
                &["'delete'", "Retain", "Delete"],
                &["did you mean 'Delete'?"],
            )],
        },
        Case {
            name: "bad_enum_value_in_the_wrong_case_suggests_the_right_one (case 2)",
            files: vec![(
                "schema.yaml",
                SCHEMA
                    .replace("catalog: main", "catalog: main\n  mode: Strict")
                    .to_string(),
            )],
            expect: vec![error(
                "schema.yaml",
                "spec.mode",
                &["'Strict'", "additive", "strict"],
                &["did you mean 'strict'?"],
            )],
        },
        Case {
            name: "missing_required_fields",
            files: with_schema(
                table("orders", "comment: no columns").replace("  schemaRef: sales\n", ""),
            ),
            // columns may be left out at a narrow scope: validation asks for them at Full
            // (a_full_scope_table_needs_columns)
            expect: vec![error(
                "table.yaml",
                "spec.schemaRef",
                &["required"],
                &["schemaRef"],
            )],
        },
        Case {
            name: "unknown_kind_and_version",
            files: with_schema(
                table("orders", ORDERS).replace("kind: DeltaTable", "kind: DeltaTabel"),
            ),
            expect: vec![error(
                "table.yaml",
                "kind",
                &["unknown kind 'DeltaTabel'"],
                &["did you mean 'DeltaTable'?"],
            )],
        },
        Case {
            name: "unknown_kind_and_version (case 2)",
            files: with_schema(table("orders", ORDERS).replace("v1alpha1", "v1beta1")),
            expect: vec![error(
                "table.yaml",
                "apiVersion",
                &["unsupported version", "v1beta1"],
                &["delta-operator.io/v1alpha1"],
            )],
        },
        Case {
            name: "invalid_yaml_names_the_file",
            files: vec![(
                "broken.yaml",
                "apiVersion: delta-operator.io/v1alpha1\nkind: [DeltaTable\n".to_string(),
            )],
            expect: vec![error(
                "broken.yaml",
                "",
                &["not valid YAML"],
                &["YAML syntax"],
            )],
        },
    ])
}

/// Types
fn cases_types() -> Vec<Case> {
    Vec::from([
        Case {
            name: "misspelt_type_suggests_the_nearest",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: id\n    type: bigint\n  - name: name\n    type: strng",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[1].type",
                &["unknown type 'strng'"],
                &["did you mean 'string'?"],
            )],
        },
        Case {
            name: "misspelt_type_inside_a_nested_type_string",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: items\n    type: array<struct<sku:strng,qty:int>>",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[0].type",
                &["unknown type 'strng'"],
                &["did you mean 'string'?"],
            )],
        },
        Case {
            name: "misspelt_type_inside_the_nested_notation",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: items\n    type:\n      array:\n        struct:\n          - {name: sku, type: strng}\n          - {name: qty, type: int}",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[0].type",
                &["unknown type 'strng'", "field 'sku'"],
                &["did you mean 'string'?"],
            )],
        },
        Case {
            name: "unknown_type_with_nothing_near",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: place\n    type: geography",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[0].type",
                &["unknown type 'geography'"],
                &["type reference", "bigint"],
            )],
        },
        Case {
            name: "not_null_inside_an_array_or_a_map",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: items\n    type: array<struct<a:int not null>>\n  - name: attrs\n    type: map<string,struct<b:int not null>>",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.columns[0].type",
                    &["field 'a'", "NOT NULL inside an array or map"],
                    &["not null"],
                ),
                error(
                    "table.yaml",
                    "spec.columns[1].type",
                    &["field 'b'", "NOT NULL inside an array or map"],
                    &["not null"],
                ),
            ],
        },
        Case {
            name: "not_null_inside_an_array_or_a_map: NOT NULL on a field of a plain struct is fine",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: address\n    type: struct<street:string not null,city:string>",
            )),
            expect: vec![],
        },
        Case {
            name: "duplicate_struct_fields",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: id\n    type: bigint\n  - name: address\n    type: struct<city:string,City:string>",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[1].type",
                &["duplicate struct field 'City'"],
                &["rename or remove"],
            )],
        },
    ])
}

/// Columns and layout
fn cases_columns_and_layout() -> Vec<Case> {
    Vec::from([
        Case {
            name: "duplicate_columns_compare_case_insensitively",
            files: with_schema(table(
        "orders",
        "columns:\n  - name: id\n    type: bigint\n  - name: ID\n    type: string",
    )),
            expect: vec![error("table.yaml", "spec.columns[1].name", &["duplicate column 'ID'", "spec.columns[0]"], &["rename or remove"])],
        },
        Case {
            name: "partitioned_by_a_missing_column",
            files: with_schema(table("orders", &format!("{ORDERS}\npartitionedBy: [order_dat]"))),
            expect: vec![error("table.yaml", "spec.partitionedBy[0]", &["'order_dat'", "not a declared column"], &["did you mean 'order_date'?"])],
        },
        Case {
            name: "clustered_by_a_missing_column",
            files: with_schema(table("orders", &format!("{ORDERS}\nclusterBy: [amount, region]"))),
            expect: vec![error("table.yaml", "spec.clusterBy[1]", &["'region'", "not a declared column"], &["id", "amount", "order_date"])],
        },
        Case {
            name: "more_than_four_cluster_keys",
            files: with_schema(table(
        "orders",
        "columns:\n  - {name: a, type: int}\n  - {name: b, type: int}\n  - {name: c, type: int}\n  - {name: d, type: int}\n  - {name: e, type: int}\nclusterBy: [a, b, c, d, e]",
    )),
            expect: vec![error("table.yaml", "spec.clusterBy", &["5 keys", "at most 4"], &["4"])],
        },
        Case {
            name: "more_than_four_cluster_keys (case 2)",
            files: with_schema((table(
        "orders",
        "columns:\n  - {name: a, type: int}\n  - {name: b, type: int}\n  - {name: c, type: int}\n  - {name: d, type: int}\n  - {name: e, type: int}\nclusterBy: [a, b, c, d, e]",
    )).replace("[a, b, c, d, e]", "[a, b, c, d]")),
            expect: vec![],
        },
        Case {
            name: "partitioned_and_clustered",
            files: with_schema(table(
        "orders",
        &format!("{ORDERS}\npartitionedBy: [order_date]\nclusterBy: [id]"),
    )),
            expect: vec![error("table.yaml", "spec.clusterBy", &["partitioned or clustered, not both"], &["remove partitionedBy or clusterBy"])],
        },
        Case {
            name: "partitioned_and_clustered: `[]` on either side says \"none\", so it does not conflict",
            files: with_schema(table(
        "orders",
        &format!("{ORDERS}\npartitionedBy: []\nclusterBy: [id]"),
    )),
            expect: vec![],
        },
        Case {
            name: "identity_must_be_bigint",
            files: with_schema(table(
        "orders",
        "columns:\n  - name: id\n    type: int\n    identity: {generated: Always}",
    )),
            expect: vec![error("table.yaml", "spec.columns[0].identity", &["must be bigint", "not int"], &["bigint"])],
        },
        Case {
            name: "identity_must_be_bigint (case 2)",
            files: with_schema((table(
        "orders",
        "columns:\n  - name: id\n    type: int\n    identity: {generated: Always}",
    )).replace("type: int", "type: bigint")),
            expect: vec![],
        },
    ])
}

/// Constraints
fn cases_constraints() -> Vec<Case> {
    Vec::from([
        Case {
            name: "primary_key_naming_a_missing_column",
            files: with_schema(table(
        "orders",
        &format!("{ORDERS}\nconstraints:\n  - primaryKey: {{columns: [idd]}}"),
    )),
            expect: vec![error("table.yaml", "spec.constraints[0].primaryKey.columns[0]", &["'idd'", "not a declared column"], &["did you mean 'id'?"])],
        },
        Case {
            name: "primary_key_column_must_not_be_nullable",
            files: with_schema(table(
        "orders",
        &format!(
            "{ORDERS}\nconstraints:\n  - primaryKey: {{name: orders_pk, columns: [id, amount]}}"
        ),
    )),
            expect: vec![error("table.yaml", "spec.columns[1].nullable", &["'amount'", "primary key", "cannot be nullable"], &["nullable: false"])],
        },
        Case {
            name: "check_naming_a_missing_column",
            files: with_schema(table(
        "orders",
        &format!(
            "{ORDERS}\nconstraints:\n  - check: {{name: positive, expression: \"amout >= 0 AND id > 0\"}}"
        ),
    )),
            expect: vec![error("table.yaml", "spec.constraints[0].check.expression", &["'amout'", "not a declared column"], &["did you mean 'amount'?"])],
        },
        Case {
            name: "a_constraint_item_with_two_kinds",
            files: with_schema(table(
        "orders",
        &format!(
            "{ORDERS}\nconstraints:\n  - check: {{name: positive, expression: amount >= 0}}\n    primaryKey: {{columns: [id]}}"
        ),
    )),
            expect: vec![error("table.yaml", "spec.constraints[0]", &["has 2 of check, primaryKey, foreignKey"], &["exactly one"])],
        },
        Case {
            name: "foreign_key_naming_a_missing_column",
            files: vec![("schema.yaml", SCHEMA.to_string()), ("orders.yaml", table(
        "orders",
        &format!(
            "{ORDERS}\nconstraints:\n  - foreignKey: {{columns: [customer], references: customers, referencedColumns: [id]}}"
        ),
    ).to_string()), ("customers.yaml", table("customers", CUSTOMERS).to_string())],
            expect: vec![error("orders.yaml", "spec.constraints[0].foreignKey.columns[0]", &["'customer'", "not a declared column"], &["id", "amount"])],
        },
        Case {
            name: "foreign_key_naming_a_missing_referenced_column",
            files: vec![("schema.yaml", SCHEMA.to_string()), ("orders.yaml", table(
        "orders",
        "columns:\n  - {name: id, type: bigint}\n  - {name: customer_id, type: bigint}\nconstraints:\n  - foreignKey: {columns: [customer_id], references: sales.customers, referencedColumns: [customer_id]}",
    ).to_string()), ("customers.yaml", table("customers", CUSTOMERS).to_string())],
            expect: vec![error("orders.yaml", "spec.constraints[0].foreignKey.referencedColumns[0]", &["'customer_id'", "not a column of main.sales.customers"], &["referenced table"])],
        },
        Case {
            name: "foreign_key_to_an_undeclared_table",
            files: vec![("schema.yaml", SCHEMA.to_string()), ("orders.yaml", table(
        "orders",
        "columns:\n  - {name: id, type: bigint}\n  - {name: customer_id, type: bigint}\nconstraints:\n  - foreignKey: {columns: [customer_id], references: main.crm.customers, referencedColumns: [id]}",
    ).to_string())],
            expect: vec![error("orders.yaml", "spec.constraints[0].foreignKey.references", &["main.crm.customers", "not declared"], &["declare the referenced table"])],
        },
        Case {
            name: "a_self_reference_is_not_a_cycle",
            files: with_schema(table(
        "employees",
        "columns:\n  - {name: id, type: bigint, nullable: false}\n  - {name: manager_id, type: bigint}\nconstraints:\n  - primaryKey: {columns: [id]}\n  - foreignKey: {columns: [manager_id], references: employees, referencedColumns: [id]}",
    )),
            expect: vec![],
        },
    ])
}

/// Properties and names
fn cases_properties_and_names() -> Vec<Case> {
    Vec::from([
        Case {
            name: "invalid_table_names",
            files: with_schema(table("orders", &format!("name: orders.v2\n{ORDERS}"))),
            expect: vec![error(
                "table.yaml",
                "spec.name",
                &["'orders.v2'", "'.'"],
                &["without '.'"],
            )],
        },
        Case {
            name: "invalid_table_names (case 2)",
            files: with_schema(table("orders", &format!("name: orders/v2\n{ORDERS}"))),
            expect: vec![error(
                "table.yaml",
                "spec.name",
                &["'orders/v2'", "'/'"],
                &["without '.'", "'/'"],
            )],
        },
        Case {
            name: "invalid_table_names: the table name defaults to metadata.name, which is then checked in its place",
            files: with_schema(table("orders.v2", ORDERS)),
            expect: vec![error(
                "table.yaml",
                "metadata.name",
                &["'orders.v2'", "'.'"],
                &["without '.'"],
            )],
        },
        Case {
            name: "invalid_catalog_and_schema_names",
            files: vec![(
                "schema.yaml",
                SCHEMA
                    .replace("catalog: main", "catalog: main/prod\n  name: sales.eu")
                    .to_string(),
            )],
            expect: vec![
                error(
                    "schema.yaml",
                    "spec.catalog",
                    &["'main/prod'", "'/'"],
                    &["without"],
                ),
                error(
                    "schema.yaml",
                    "spec.name",
                    &["'sales.eu'", "'.'"],
                    &["without"],
                ),
            ],
        },
    ])
}

/// Across manifests
fn cases_across_manifests() -> Vec<Case> {
    Vec::from([
        Case {
            name: "two_manifests_for_one_table",
            files: vec![
                ("schema.yaml", SCHEMA.to_string()),
                ("a.yaml", table("orders", ORDERS).to_string()),
                ("b.yaml", table("orders", ORDERS).to_string()),
            ],
            expect: vec![error(
                "b.yaml",
                "spec.name",
                &[
                    "main.sales.orders",
                    "also declared by DeltaTable default/orders in a.yaml",
                ],
                &["exactly one manifest"],
            )],
        },
        Case {
            name: "spec_name_colliding_with_another_metadata_name",
            files: vec![
                ("schema.yaml", SCHEMA.to_string()),
                ("a.yaml", table("orders", ORDERS).to_string()),
                (
                    "b.yaml",
                    table("orders-v2", &format!("name: Orders\n{ORDERS}")).to_string(),
                ),
            ],
            expect: vec![
                error(
                    "b.yaml",
                    "spec.name",
                    &["main.sales.orders", "DeltaTable default/orders", "a.yaml"],
                    &["exactly one manifest"],
                )
                .naming("DeltaTable default/orders-v2"),
            ],
        },
        Case {
            name: "the_same_table_name_in_two_schemas_is_fine",
            files: vec![
                ("schema.yaml", SCHEMA.to_string()),
                (
                    "eu.yaml",
                    SCHEMA
                        .replace("name: sales", "name: sales-eu")
                        .replace("catalog: main", "catalog: main\n  name: sales_eu")
                        .to_string(),
                ),
                ("a.yaml", table("orders", ORDERS).to_string()),
                (
                    "b.yaml",
                    table("orders-eu", &format!("name: orders\n{ORDERS}"))
                        .replace("schemaRef: sales", "schemaRef: sales-eu")
                        .to_string(),
                ),
            ],
            expect: vec![],
        },
        Case {
            name: "schema_ref_naming_no_schema",
            files: with_schema(
                table("orders", ORDERS).replace("schemaRef: sales", "schemaRef: sale"),
            ),
            expect: vec![error(
                "table.yaml",
                "spec.schemaRef",
                &["no DeltaSchema 'sale'"],
                &["add a DeltaSchema named 'sale' in namespace 'default'"],
            )],
        },
        Case {
            name: "schema_ref_to_a_schema_in_another_namespace",
            files: vec![
                (
                    "schema.yaml",
                    SCHEMA
                        .replace("name: sales", "name: sales\n  namespace: analytics")
                        .to_string(),
                ),
                (
                    "table.yaml",
                    table("orders", ORDERS)
                        .replace("name: orders", "name: orders\n  namespace: shop")
                        .to_string(),
                ),
            ],
            expect: vec![
                error(
                    "table.yaml",
                    "spec.schemaRef",
                    &["no DeltaSchema 'sales'"],
                    &["namespace 'analytics'", "its schema's namespace"],
                )
                .naming("DeltaTable shop/orders"),
            ],
        },
    ])
}

/// Every error at once
fn cases_every_error_at_once() -> Vec<Case> {
    Vec::from([
        Case {
            name: "all_validation_errors_are_reported_together",
            files: with_schema(table(
                "orders",
                "columns:\n  - name: id\n    type: int\n    identity: {}\n  - name: amount\n    type: int\npartitionedBy: [region]\nproperties:\n  delta.minReaderVersion: \"2\"",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.columns[0].identity",
                    &["bigint"],
                    &["bigint"],
                ),
                error(
                    "table.yaml",
                    "spec.partitionedBy[0]",
                    &["'region'"],
                    &["id"],
                ),
                error(
                    "table.yaml",
                    "spec.properties.delta.minReaderVersion",
                    &["managed"],
                    &["remove"],
                ),
            ],
        },
        Case {
            name: "all_load_errors_are_reported_together",
            files: with_schema(
                table(
                    "orders",
                    &format!("{ORDERS}\npolicy: Automatic\ncomment: [a]"),
                )
                .replace("    nullable: false", "    nulable: false"),
            ),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.columns[0].nulable",
                    &["unknown key"],
                    &["nullable"],
                ),
                error("table.yaml", "spec.policy", &["'Automatic'"], &["Auto"]),
                error("table.yaml", "spec.comment", &["found a list"], &[]),
            ],
        },
        Case {
            name: "errors_in_several_files_are_reported_together",
            files: vec![
                ("schema.yaml", SCHEMA.to_string()),
                (
                    "a.yaml",
                    table("orders", "columns:\n  - name: id\n    type: strng").to_string(),
                ),
                (
                    "b.yaml",
                    table("customers", &format!("{CUSTOMERS}\nclusterBy: [regon]")).to_string(),
                ),
            ],
            expect: vec![
                error("a.yaml", "spec.columns[0].type", &["strng"], &["string"]),
                error(
                    "b.yaml",
                    "spec.clusterBy[0]",
                    &["regon"],
                    &["did you mean 'region'?"],
                ),
            ],
        },
    ])
}

/// Fixes made after review
fn cases_fixes_made_after_review() -> Vec<Case> {
    Vec::from([
        Case {
            name: "a_list_where_a_string_belongs_asks_for_one_string",
            files: with_schema("apiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: t}\nspec:\n  schemaRef: [sales]\n  columns: [{name: a, type: int}]\n"),
            expect: vec![error("table.yaml", "spec.schemaRef", &["expected string", "list"], &["single string"])],
        },
        Case {
            name: "a_column_listed_twice_in_partitioned_by_is_an_error",
            files: with_schema(table(
        "t",
        "columns:\n  - {name: a, type: int}\n  - {name: d, type: date}\npartitionedBy: [d, D]",
    )),
            expect: vec![error("table.yaml", "spec.partitionedBy[1]", &["listed twice"], &["once"])],
        },
        Case {
            name: "a_delta_schema_name_must_be_a_kubernetes_name",
            files: vec![("schema.yaml", "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: Sales_EU}\nspec: {catalog: main, name: sales_eu}\n".to_string())],
            expect: vec![error("schema.yaml", "metadata.name", &["Sales_EU"], &["lowercase"])],
        },
        Case {
            name: "two_delta_schemas_with_one_name_name_their_files",
            files: vec![("a.yaml", SCHEMA.to_string()), ("b.yaml", SCHEMA.to_string())],
            expect: vec![error("a.yaml", "metadata.name", &["2 DeltaSchemas", "a.yaml", "b.yaml"], &["keep one"])],
        },
        Case {
            name: "a_privilege_grant_cannot_write_is_refused_with_the_nearest",
            files: with_schema(table(
        "orders",
        "columns:\n- name: id\n  type: bigint\ngrants:\n- principal: analysts\n  privileges: [select, APPLY_TAG, SELCT, 'SELECT; DROP TABLE x']",
    )),
            expect: vec![error("table.yaml", "spec.grants[0].privileges[2]", &["'SELCT' is not a table privilege"], &["did you mean 'SELECT'"]), error("table.yaml", "spec.grants[0].privileges[3]", &["not a table privilege"], &["use one of SELECT, MODIFY"])],
        },
        Case {
            name: "a_schema_privilege_grant_cannot_write_is_refused_with_the_nearest",
            files: vec![("schema.yaml", "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata:\n  name: sales\nspec:\n  catalog: main\n  grants:\n  - principal: analysts\n    privileges: [use_schema, CREATE TABLE, USE SCHEM, 'SELECT; DROP SCHEMA x']\n".to_string())],
            expect: vec![error("schema.yaml", "spec.grants[0].privileges[2]", &["'USE SCHEM' is not a schema privilege"], &["did you mean 'USE SCHEMA'"]), error("schema.yaml", "spec.grants[0].privileges[3]", &["not a schema privilege"], &["use one of ALL PRIVILEGES"])],
        },
        Case {
            name: "a_managed_location_that_is_not_a_storage_url_is_refused",
            files: vec![("schema.yaml", "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata:\n  name: sales\nspec:\n  catalog: main\n  managedLocation: 's3:/bucket/sales'\n".to_string())],
            expect: vec![error("schema.yaml", "spec.managedLocation", &["'s3:/bucket/sales' is not a storage URL (scheme://…)"], &["s3://bucket/sales", "remove spec.managedLocation"])],
        },
        Case {
            name: "a_managed_location_that_is_a_bare_path_is_refused",
            files: vec![("schema.yaml", "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata:\n  name: sales\nspec:\n  catalog: main\n  managedLocation: '/mnt/sales'\n".to_string())],
            expect: vec![error("schema.yaml", "spec.managedLocation", &["not a storage URL"], &["abfss://"])],
        },
        Case {
            name: "a_managed_location_url_is_accepted",
            files: vec![("schema.yaml", "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata:\n  name: sales\nspec:\n  catalog: main\n  managedLocation: 'abfss://lake@acct.dfs.core.windows.net/sales'\n".to_string())],
            expect: vec![],
        },
    ])
}

/// Expressions (issue 26): a CHECK is parsed exactly as a `using:` is.
fn cases_expressions_issue_26() -> Vec<Case> {
    Vec::from([Case {
        name: "a_check_names_an_unknown_column_and_the_nearest",
        files: with_schema(orders_with_check(
            "coalesce(amout, 0) >= 0 AND 'amout' <> note",
        )),
        expect: vec![error(
            "table.yaml",
            "spec.constraints[0].check.expression",
            &["'amout'", "not a declared column"],
            &["did you mean 'amount'?"],
        )],
    }])
}

/// Names (issue 26): one name to a reader, different strings to an engine.
fn cases_names_issue_26() -> Vec<Case> {
    Vec::from([
        Case {
            name: "tables_of_one_schema_that_look_the_same_are_refused_naming_both",
            files: vec![
                ("schema.yaml", SCHEMA.to_string()),
                (
                    "a.yaml",
                    table("orders", "columns:\n  - name: id\n    type: bigint").to_string(),
                ),
                (
                    "b.yaml",
                    table(
                        "orders-2",
                        "name: \"\u{43e}rders\"\ncolumns:\n  - name: id\n    type: bigint",
                    )
                    .to_string(),
                ),
            ],
            expect: vec![error(
                "b.yaml",
                "spec.name",
                &[
                    "'orders'",
                    "DeltaTable default/orders",
                    "a.yaml",
                    "look the same",
                ],
                &["rename one"],
            )],
        },
        Case {
            name: "tables_of_one_schema_that_look_the_same_are_refused_naming_both: in another schema the same pair is fine",
            files: vec![
                ("schema.yaml", SCHEMA.to_string()),
                (
                    "other.yaml",
                    SCHEMA.replace("name: sales", "name: other").to_string(),
                ),
                (
                    "a.yaml",
                    table("orders", "columns:\n  - name: id\n    type: bigint").to_string(),
                ),
                (
                    "b.yaml",
                    (table(
                        "orders-2",
                        "name: \"\u{43e}rders\"\ncolumns:\n  - name: id\n    type: bigint",
                    ))
                    .replace("schemaRef: sales", "schemaRef: other")
                    .to_string(),
                ),
            ],
            expect: vec![],
        },
    ])
}

#[test]
fn a_default_and_a_generation_expression_are_one_expression_without_a_comment() {
    for (field, value, says) in [
        ("default", "'EU' COMMENT 'x'", "more than one expression"),
        ("default", "0 -- ) , x", "comment"),
        ("default", "region", "reads the column region"),
        ("default", "rand()", "not deterministic"),
        (
            "generated",
            "CAST(ts AS DATE)) , evil INT GENERATED ALWAYS AS (1",
            "more than one expression",
        ),
        ("generated", "current_timestamp()", "not deterministic"),
        ("generated", "ts /* ) */", "comment"),
    ] {
        let doc = table(
            "orders",
            &format!(
                "columns:\n  - name: ts\n    type: timestamp\n  - name: x\n    type: string\n    {field}: '{}'",
                value.replace('\'', "''")
            ),
        );
        let path = format!("spec.columns[1].{field}");
        let e = only(errors_with_schema(&doc));
        assert_eq!(e.path, path, "{value:?}: {e}");
        assert!(e.message.contains(says), "{value:?}: {e}");
    }
    // what a default and a generation expression are for is accepted, and kept as written
    for (field, value) in [
        ("default", "'EU'"),
        ("default", "current_timestamp()"),
        ("generated", "CAST(ts AS DATE)"),
    ] {
        let doc = table(
            "orders",
            &format!(
                "columns:\n  - name: ts\n    type: timestamp\n  - name: x\n    type: string\n    {field}: '{}'",
                value.replace('\'', "''")
            ),
        );
        assert!(errors_with_schema(&doc).is_empty(), "{value:?} refused");
    }
}

/// Scopes (issue 30): below Full, columns list only what the spec annotates
/// (type and nullability may be left out), and nothing that only a table's
/// maker does may be declared.
fn cases_scopes_issue_30() -> Vec<Case> {
    Vec::from([
        Case {
            name: "a_narrow_scope_annotates_columns_without_their_type",
            files: with_schema(table(
                "events",
                "scope: Annotations\ncomment: from the pipeline\ntags: {domain: sales}\ncolumns:\n- name: user_id\n  comment: the user\n  tags: {pii: \"true\"}\ngrants:\n- principal: analysts\n  privileges: [SELECT]",
            )),
            expect: vec![],
        },
        Case {
            name: "a_tags_scope_spec_needs_no_columns",
            files: with_schema(table("events", "scope: Tags\ntags: {domain: sales}")),
            expect: vec![],
        },
        Case {
            name: "a_full_scope_column_needs_its_type",
            files: with_schema(table(
                "events",
                "columns:\n- name: id\n  type: bigint\n- name: user_id",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.columns[1].type",
                &["needs a type at scope Full"],
                &[
                    "declare its type",
                    "spec.scope: Metadata, Annotations or Tags",
                ],
            )],
        },
        Case {
            name: "a_full_scope_table_needs_columns",
            files: with_schema(table("events", "tags: {domain: sales}")),
            expect: vec![error(
                "table.yaml",
                "spec.columns",
                &["at least one column"],
                &["declare its columns"],
            )],
        },
        Case {
            name: "a_narrow_scope_refuses_what_only_the_tables_maker_does",
            files: with_schema(table(
                "events",
                "scope: Metadata\ndeletionPolicy: Delete\npartitionedBy: [day]\ncolumns:\n- name: day\n  type: date\n- name: user_id\n  renamedFrom: uid\n  using: CAST(uid AS STRING)",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.columns[1].renamedFrom",
                    &["a rename changes the table's shape", "scope Metadata"],
                    &["remove it", "spec.scope: Full"],
                ),
                error(
                    "table.yaml",
                    "spec.columns[1].using",
                    &["a conversion"],
                    &["spec.scope: Full"],
                ),
                error(
                    "table.yaml",
                    "spec.partitionedBy",
                    &["partitioning"],
                    &["spec.scope: Full"],
                ),
                error(
                    "table.yaml",
                    "spec.deletionPolicy",
                    &["never drops a table the operator did not take whole"],
                    &["deletionPolicy: Retain"],
                ),
            ],
        },
        Case {
            name: "an_unknown_scope_is_refused_by_the_crd_schema",
            files: with_schema(table("events", "scope: Columns\ntags: {domain: sales}")),
            expect: vec![error(
                "table.yaml",
                "spec.scope",
                &["Columns"],
                &["Full", "Annotations"],
            )],
        },
    ])
}

/// Hand-offs (issue 30): a table spec declaring a part its own or its schema's handOff gives
/// to another tool is refused at that field, naming the hand-off and who owns the part.
fn cases_hand_off_issue_30() -> Vec<Case> {
    let schema_handing = |h: &str| {
        SCHEMA.replace(
            "  catalog: main\n",
            &format!("  catalog: main\n  handOff: {h}\n"),
        )
    };
    Vec::from([
        Case {
            name: "a_schemas_hand_off_refuses_the_tables_that_declare_it",
            files: vec![
                (
                    "schema.yaml",
                    schema_handing("{to: dbt, aspects: [Tags, Checks], properties: [dbt.]}"),
                ),
                (
                    "table.yaml",
                    table(
                        "events",
                        "tags: {domain: sales}\nproperties: {dbt.materialized: table, delta.appendOnly: \"false\"}\ncolumns:\n- name: id\n  type: bigint\n  tags: {pii: \"false\"}\nconstraints:\n- check: {name: positive, expression: id > 0}",
                    ),
                ),
            ],
            expect: vec![
                error(
                    "table.yaml",
                    "spec.tags",
                    &["this table's tags: handed off to dbt by the DeltaSchema 'sales'"],
                    &["remove it", "removing Tags from that handOff"],
                ),
                error(
                    "table.yaml",
                    "spec.columns[0].tags",
                    &["handed off to dbt"],
                    &["Tags"],
                ),
                error(
                    "table.yaml",
                    "spec.constraints[0].check",
                    &["this table's CHECK constraints: handed off to dbt"],
                    &["Checks"],
                ),
                error(
                    "table.yaml",
                    "spec.properties.dbt.materialized",
                    &["properties 'dbt.*'"],
                    &["the prefix 'dbt.'"],
                ),
            ],
        },
        Case {
            name: "a_tables_own_hand_off_refuses_what_it_also_declares",
            files: with_schema(table(
                "events",
                "handOff: {aspects: [Grants, Owner, Comments, Masks]}\nowner: data-eng\ncomment: mine\ncolumns:\n- name: id\n  type: bigint",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.owner",
                    &["this table's owner: handed off to another tool by this table's spec"],
                    &["Owner"],
                ),
                error("table.yaml", "spec.comment", &["comments"], &["Comments"]),
            ],
        },
        Case {
            name: "a_hand_off_with_an_empty_prefix_or_an_unknown_aspect_is_refused",
            files: with_schema(table(
                "events",
                "handOff: {properties: [\"\"]}\ncolumns:\n- name: id\n  type: bigint",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.handOff.properties[0]",
                &["an empty prefix would hand off every property"],
                &["pipelines."],
            )],
        },
        Case {
            name: "a_hand_off_names_known_aspects_only",
            files: with_schema(table(
                "events",
                "handOff: {aspects: [Columns]}\ncolumns:\n- name: id\n  type: bigint",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.handOff.aspects[0]",
                &["Columns"],
                &["Tags"],
            )],
        },
    ])
}

/// `spec.maintenance` (issue 34): sizes, durations, short retention and
/// Z-order columns, each error at its field.
fn cases_maintenance_issue_34() -> Vec<Case> {
    let with = |m: &str| with_schema(table("orders", &format!("{ORDERS}\nmaintenance: {m}")));
    Vec::from([
        Case {
            name: "maintenance_with_every_field_is_valid",
            files: with(
                "{compaction: {whenSmallFiles: 50, targetFileSize: 256Mi, zOrderBy: [amount], every: 12h}, vacuum: {retainHours: 200, keepRestorePointsDays: 3, every: 7d}, checkpoint: {everyVersions: 10}}",
            ),
            expect: vec![],
        },
        Case {
            name: "maintenance_short_retention_needs_allowing",
            files: with("{vacuum: {retainHours: 24}}"),
            expect: vec![error(
                "table.yaml",
                "spec.maintenance.vacuum.retainHours",
                &["24 hours", "168-hour safety check"],
                &["allowShortRetention: true"],
            )],
        },
        Case {
            name: "maintenance_short_retention_allowed",
            files: with("{vacuum: {retainHours: 24, allowShortRetention: true}}"),
            expect: vec![],
        },
        Case {
            name: "maintenance_bad_size_and_duration_are_named",
            files: with("{compaction: {targetFileSize: 12 MB, every: 3w}}"),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.maintenance.compaction.targetFileSize",
                    &["'12 MB'"],
                    &["128Mi"],
                ),
                error(
                    "table.yaml",
                    "spec.maintenance.compaction.every",
                    &["'3w' is not a duration"],
                    &["24h"],
                ),
            ],
        },
        Case {
            name: "maintenance_z_order_names_declared_data_columns",
            files: with_schema(table(
                "orders",
                &format!(
                    "{ORDERS}\npartitionedBy: [order_date]\nmaintenance: {{compaction: {{zOrderBy: [amout, order_date]}}}}"
                ),
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.maintenance.compaction.zOrderBy[0]",
                    &["'amout', which is not a declared column"],
                    &["did you mean 'amount'"],
                ),
                error(
                    "table.yaml",
                    "spec.maintenance.compaction.zOrderBy[1]",
                    &["partition column"],
                    &["data columns"],
                ),
            ],
        },
        Case {
            name: "maintenance_z_order_on_a_schema_is_refused",
            files: vec![
                (
                    "schema.yaml",
                    SCHEMA.replace(
                        "  catalog: main\n",
                        "  catalog: main\n  maintenance: {compaction: {zOrderBy: [id]}}\n",
                    ),
                ),
                ("table.yaml", table("orders", ORDERS)),
            ],
            expect: vec![error(
                "schema.yaml",
                "spec.maintenance.compaction.zOrderBy",
                &["one table's columns"],
                &["DeltaTable"],
            )],
        },
    ])
}

/// `driftPolicy`: a table's own, else its DeltaSchema's, else Report.
#[test]
fn a_tables_drift_policy_defaults_to_its_schemas_then_report() {
    use delta_operator_api::spec::crd::DriftPolicy;
    let schema = SCHEMA.replace("catalog: main", "catalog: main\n  driftPolicy: Fail");
    let (m, errs) = load(&[
        ("schema.yaml", &schema),
        ("orders.yaml", &table("orders", ORDERS)),
        (
            "customers.yaml",
            &table("customers", &format!("{CUSTOMERS}\ndriftPolicy: Report")),
        ),
    ]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert!(validate(&m).is_empty());
    let from_schema = m.schemas[0].resource.spec.drift_policy;
    assert_eq!(from_schema, Some(DriftPolicy::Fail));
    let of = |name: &str| {
        let t = m
            .tables
            .iter()
            .find(|t| t.resource.metadata.name.as_deref() == Some(name))
            .unwrap();
        DriftPolicy::resolve(t.resource.spec.drift_policy, from_schema)
    };
    assert_eq!(of("orders"), DriftPolicy::Fail);
    assert_eq!(of("customers"), DriftPolicy::Report);
    assert_eq!(DriftPolicy::resolve(None, None), DriftPolicy::Report);
}

// ---------------------------------------------------------------------------
// Views, functions and volumes

const OBJECTS: &str = "\
apiVersion: delta-operator.io/v1alpha1
kind: DeltaView
metadata:
  name: recent-orders
spec:
  schemaRef: sales
  name: recent_orders
  query: SELECT id, amount FROM orders WHERE ts > now() - INTERVAL 7 DAYS
  columnComments:
    id: the order
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaFunction
metadata:
  name: mask-email
spec:
  schemaRef: sales
  name: mask_email
  parameters:
  - name: email
    type: string
  returns: string
  body: CASE WHEN is_account_group_member('admins') THEN email ELSE '***' END
  deterministic: true
---
apiVersion: delta-operator.io/v1alpha1
kind: DeltaVolume
metadata:
  name: landing
spec:
  schemaRef: sales
  comment: raw files
  tags:
    team: sales
";

#[test]
fn a_file_holds_views_functions_and_volumes() {
    let (m, errs) = load(&[("schema.yaml", SCHEMA), ("objects.yaml", OBJECTS)]);
    assert!(errs.is_empty(), "{}", show(&errs));
    assert_eq!(
        (m.views.len(), m.functions.len(), m.volumes.len()),
        (1, 1, 1)
    );
    let f = &m.functions[0].resource.spec;
    assert_eq!(f.parameters[0].data_type, "string");
    assert_eq!(f.deterministic, Some(true));
}

#[test]
fn an_unknown_field_of_a_view_is_named() {
    let text = "\
apiVersion: delta-operator.io/v1alpha1
kind: DeltaView
metadata:
  name: v
spec:
  schemaRef: sales
  querry: SELECT 1
";
    let (_, errs) = load(&[("view.yaml", text)]);
    assert!(
        errs.iter().any(|e| e.path.contains("querry")),
        "{}",
        show(&errs)
    );
}

/// A DeltaView named `name` in schema `sales`; `spec` is the rest of its spec.
fn view(name: &str, spec: &str) -> String {
    object("DeltaView", name, spec)
}

fn function(name: &str, spec: &str) -> String {
    object("DeltaFunction", name, spec)
}

fn volume(name: &str, spec: &str) -> String {
    object("DeltaVolume", name, spec)
}

fn object(kind: &str, name: &str, spec: &str) -> String {
    let body: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}\nspec:\n  schemaRef: sales\n{body}"
    )
}

const MASK: &str = "\
parameters:
- name: email
  type: string
returns: string
body: CASE WHEN is_account_group_member('admins') THEN email ELSE '***' END";

/// Views, functions and volumes (issue 33)
fn cases_objects_issue_33() -> Vec<Case> {
    Vec::from([
        Case {
            name: "objects_the_fixtures_are_valid",
            files: with_schema(stream(&[
                &table("orders", ORDERS),
                &view(
                    "recent",
                    "query: SELECT id, sales.mask(amount) FROM orders\ncolumnComments:\n  id: the order\ngrants:\n- principal: analysts\n  privileges: [SELECT]",
                ),
                &function(
                    "mask",
                    &format!("{MASK}\ngrants:\n- principal: analysts\n  privileges: [EXECUTE]"),
                ),
                &volume(
                    "landing",
                    "grants:\n- principal: loaders\n  privileges: [READ VOLUME, write_volume]",
                ),
            ])),
            expect: vec![],
        },
        Case {
            name: "a_query_that_is_not_one_query",
            files: with_schema(view("v", "query: SELECT 1; DROP TABLE orders")),
            expect: vec![error(
                "table.yaml",
                "spec.query",
                &["';'"],
                &["one query", "without ';'"],
            )],
        },
        Case {
            name: "a_query_that_changes_data",
            files: with_schema(view(
                "v",
                "query: WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.query",
                &["changes data"],
                &["SELECT"],
            )],
        },
        Case {
            name: "a_query_naming_four_parts",
            files: with_schema(view("v", "query: SELECT * FROM a.b.c.d")),
            expect: vec![error(
                "table.yaml",
                "spec.query",
                &["at most three"],
                &["three parts"],
            )],
        },
        Case {
            name: "a_view_named_like_a_declared_table",
            files: with_schema(stream(&[
                &table("orders", ORDERS),
                &view("orders", "query: SELECT 1"),
            ])),
            expect: vec![
                error(
                    "table.yaml",
                    "metadata.name",
                    &["table DeltaTable default/orders"],
                    &["rename"],
                )
                .naming("DeltaView default/orders"),
            ],
        },
        Case {
            name: "a_view_named_like_a_table_to_a_reader",
            files: with_schema(stream(&[
                &table("orders", ORDERS),
                &view("orders-view", "name: \"\u{43e}rders\"\nquery: SELECT 1"),
            ])),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.name",
                    &["one name to a reader", "DeltaTable default/orders"],
                    &["rename"],
                )
                .naming("DeltaView default/orders-view"),
            ],
        },
        Case {
            name: "one_view_declared_twice",
            files: with_schema(stream(&[
                &view("a", "name: v\nquery: SELECT 1"),
                &view("b", "name: V\nquery: SELECT 2"),
            ])),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.name",
                    &["main.sales.v", "DeltaView default/a"],
                    &["exactly one"],
                )
                .naming("DeltaView default/b"),
            ],
        },
        Case {
            name: "an_object_without_its_schema",
            files: vec![("v.yaml", view("v", "query: SELECT 1"))],
            expect: vec![error(
                "v.yaml",
                "spec.schemaRef",
                &["no DeltaSchema 'sales'"],
                &["add a DeltaSchema"],
            )],
        },
        Case {
            name: "a_function_privilege_on_a_view",
            files: with_schema(view(
                "v",
                "query: SELECT 1\ngrants:\n- principal: a\n  privileges: [EXECUTE]",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.grants[0].privileges[0]",
                    &["'EXECUTE' is not a view privilege"],
                    &["SELECT"],
                )
                .naming("DeltaView default/v"),
            ],
        },
        Case {
            name: "a_table_privilege_on_a_function",
            files: with_schema(function(
                "f",
                &format!("{MASK}\ngrants:\n- principal: a\n  privileges: [SELECT]"),
            )),
            expect: vec![error(
                "table.yaml",
                "spec.grants[0].privileges[0]",
                &["'SELECT' is not a function privilege"],
                &["EXECUTE"],
            )],
        },
        Case {
            name: "a_misspelt_volume_privilege",
            files: with_schema(volume(
                "vol",
                "grants:\n- principal: a\n  privileges: [READ_VOLUMES]",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.grants[0].privileges[0]",
                &["not a volume privilege"],
                &["READ VOLUME"],
            )],
        },
        Case {
            name: "function_parameters_twice_and_bad_types",
            files: with_schema(function(
                "f",
                "parameters:\n- name: x\n  type: int\n- name: X\n  type: strin\nreturns: bigint\nbody: x + 1",
            )),
            expect: vec![
                error(
                    "table.yaml",
                    "spec.parameters[1].name",
                    &["spec.parameters[0]"],
                    &["own name"],
                ),
                error(
                    "table.yaml",
                    "spec.parameters[1].type",
                    &["strin"],
                    &["string"],
                ),
            ],
        },
        Case {
            name: "a_function_return_type_and_body",
            files: with_schema(function("f", "returns: integr\nbody: x +")),
            expect: vec![
                error("table.yaml", "spec.returns", &["integr"], &[]),
                error(
                    "table.yaml",
                    "spec.body",
                    &["not one SQL expression"],
                    &["RETURN"],
                ),
            ],
        },
        Case {
            name: "a_body_with_a_statement_after_it",
            files: with_schema(function("f", "returns: int\nbody: 1; DROP TABLE orders")),
            expect: vec![error("table.yaml", "spec.body", &["';'"], &["RETURN"])],
        },
        Case {
            name: "a_reserved_view_property",
            files: with_schema(view(
                "v",
                "query: SELECT 1\nproperties:\n  delta-operator.io/owner: someone",
            )),
            expect: vec![error(
                "table.yaml",
                "spec.properties.delta-operator.io/owner",
                &["managed"],
                &["remove"],
            )],
        },
    ])
}

#[test]
fn objects_lower_with_normalised_text_and_what_they_read() {
    use delta_operator_core::model::object::{ObjectBody, ObjectKind};
    let (m, errs) = load(&[("schema.yaml", SCHEMA), ("objects.yaml", OBJECTS)]);
    assert!(errs.is_empty(), "{}", show(&errs));
    let inputs = engine::lower(&m).unwrap_or_else(|e| panic!("{}", show(&e)));
    assert_eq!(inputs.objects.len(), 3);
    let by_kind = |k: ObjectKind| {
        inputs
            .objects
            .iter()
            .find(|o| o.object.kind == k)
            .unwrap_or_else(|| panic!("no {k:?}"))
    };
    let v = by_kind(ObjectKind::View);
    assert_eq!(v.object.to_string(), "main.sales.recent_orders");
    assert_eq!(v.owner_marker.to_string(), "default/recent-orders");
    let ObjectBody::View {
        query, normalized, ..
    } = &v.body
    else {
        panic!("{:?}", v.body)
    };
    assert!(
        query.starts_with("SELECT id, amount FROM orders"),
        "{query}"
    );
    assert!(
        normalized.starts_with("SELECT id, amount FROM orders WHERE"),
        "{normalized}"
    );
    let read: Vec<String> = v
        .reads
        .columns
        .iter()
        .map(|c| format!("{}.{}", c.relation, c.column))
        .collect();
    assert_eq!(
        read,
        [
            "main.sales.orders.amount",
            "main.sales.orders.id",
            "main.sales.orders.ts"
        ]
    );
    let f = by_kind(ObjectKind::Function);
    assert_eq!(f.object.to_string(), "main.sales.mask_email");
    let ObjectBody::Function {
        parameters,
        returns,
        deterministic,
        ..
    } = &f.body
    else {
        panic!("{:?}", f.body)
    };
    assert_eq!(
        (
            parameters[0].name.as_str(),
            parameters[0].data_type.as_str()
        ),
        ("email", "string")
    );
    assert_eq!((returns.as_str(), *deterministic), ("string", Some(true)));
    assert!(
        f.reads.is_empty(),
        "a parameter is no column: {:?}",
        f.reads
    );
    let vol = by_kind(ObjectKind::Volume);
    assert_eq!(vol.tags.get("team"), Some(&Some("sales".to_string())));
    assert_eq!(vol.comment.as_deref(), Some("raw files"));
}

/// A column mask's function is lowered to three parts, resolved against the table's catalog
/// and schema as the plan's order resolves it: the statement names the function the plan
/// waited for, and it compares equal to the three-part name Unity Catalog reads back.
#[test]
fn a_mask_function_is_lowered_to_three_parts_in_the_tables_schema() {
    let doc = table(
        "people",
        "columns:\n  - {name: a, type: string, mask: {function: redact}}\n  - {name: b, type: string, mask: {function: Sec.Redact}}\n  - {name: c, type: string, mask: {function: other.sec.redact}}\n  - {name: d, type: string, mask: {function: '`we.ird`'}}",
    );
    let files = with_schema(doc);
    let files: Vec<(&str, &str)> = files.iter().map(|(f, t)| (*f, t.as_str())).collect();
    let (m, load_errors) = load(&files);
    assert!(load_errors.is_empty(), "{}", show(&load_errors));
    let inputs = engine::lower(&m).unwrap_or_else(|e| panic!("{}", show(&e)));
    let t = &inputs.tables[0];
    let mask = |c: &str| {
        t.columns
            .iter()
            .find(|x| x.name == c)
            .and_then(|x| x.mask.as_ref())
            .map(|m| m.function.clone())
    };
    assert_eq!(mask("a").as_deref(), Some("main.sales.redact"));
    assert_eq!(mask("b").as_deref(), Some("main.sec.redact"));
    assert_eq!(mask("c").as_deref(), Some("other.sec.redact"));
    // a part holding a dot is left as written (the statement quotes it)
    assert_eq!(mask("d").as_deref(), Some("`we.ird`"));
}
