//! The DeltaSchema reconcile applies the schema's own metadata: on a Databricks target (the
//! warehouse emulator) its comment, properties, owner and grants reach Unity Catalog and the
//! schema is Ready; on the lake the same fields are Stalled with the rule's name. Needs the real
//! control plane (`e2e/with-controlplane.sh`) and the emulator (`e2e/warehouse/with-warehouse.sh`),
//! both started by `make test`.

mod support;

use delta_operator::backend::Backend;
use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::config::DatabricksTarget;
use delta_operator::model::SchemaRef;
use support::e2e::*;

fn schema_yaml(catalog: &str, spec: &str) -> String {
    format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec:\n  catalog: {catalog}\n{spec}"
    )
}

const META: &str = "  comment: Sales data\n  properties: {team: revenue}\n  grants:\n    - {principal: analysts, privileges: [USE SCHEMA, SELECT]}\n";

#[test]
fn a_delta_schemas_metadata_reaches_unity_catalog_through_the_reconcile() {
    for k in [
        "DATABRICKS_HOST",
        "DATABRICKS_TOKEN",
        "DATABRICKS_WAREHOUSE_ID",
    ] {
        support::warehouse::env(k);
    }
    let b = DatabricksBackend::from_target(&DatabricksTarget::default()).expect("backend");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let catalog = format!("ctl_schema_{}", std::process::id());
    rt.block_on(async {
        for s in [
            format!("CREATE CATALOG {catalog}"),
            format!("CREATE SCHEMA {catalog}.sales"),
            format!("GRANT MODIFY ON SCHEMA {catalog}.sales TO `analysts`"),
        ] {
            b.client()
                .execute(&s, &|_: &str| {})
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    });
    let ns = namespace("dbxschema");
    let op = Operator::start_databricks(&ns, "    namespaces: ['*']\n    schemas: ['ctl_*']", &[]);
    apply_yaml(&ns, &schema_yaml(&catalog, META));
    let seen = wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    let live = rt
        .block_on(b.read_schema(&SchemaRef {
            catalog: catalog.clone(),
            schema: "sales".into(),
        }))
        .expect("read")
        .expect("the schema exists");
    assert_eq!(
        live.comment.as_deref(),
        Some("Sales data"),
        "{}\n{}",
        seen["status"],
        op.log()
    );
    assert_eq!(
        live.properties.get("team").map(String::as_str),
        Some("revenue")
    );
    let privileges: Vec<&str> = live.privileges_of("analysts").map(|p| p.as_str()).collect();
    assert_eq!(privileges, ["SELECT", "USE SCHEMA"], "MODIFY is revoked");
    assert!(
        seen["status"]["lastApplied"]["stepsApplied"].as_i64() >= Some(3),
        "{}",
        seen["status"]
    );
}

#[test]
fn on_the_lake_a_schemas_metadata_is_stalled_with_the_rules_name() {
    let ns = namespace("lakeschema");
    let _op = Operator::start(&ns, "    namespaces: ['*']", &[]);
    apply_yaml(&ns, &schema_yaml("main", META));
    let seen = wait_condition(
        &ns,
        "deltaschema",
        "sales",
        "Stalled",
        "True",
        Some("NotSupportedByBackend"),
    );
    let text = seen["status"].to_string();
    assert!(text.contains("spec.comment"), "{text}");
    assert!(
        text.contains("remove spec.comment from the DeltaSchema"),
        "{text}"
    );
}
