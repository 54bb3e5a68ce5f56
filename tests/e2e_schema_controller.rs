//! The DeltaSchema reconcile applies the schema's own metadata: on a Databricks target (the
//! warehouse emulator) its comment, properties, owner and grants reach Unity Catalog and the
//! schema is Ready; on the lake the same fields are Stalled with the rule's name. Needs the real
//! control plane (`e2e/with-controlplane.sh`) and the emulator (`e2e/warehouse/with-warehouse.sh`),
//! both started by `make test`.

mod support;

use std::time::Duration;

use delta_operator::backend::Backend;
use delta_operator::config::DatabricksTarget;
use delta_operator::model::SchemaRef;
use support::e2e::*;
use support::warehouse::{catalog_with_sales, sql};

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
    let b =
        delta_operator::backend::open::databricks(&DatabricksTarget::default()).expect("backend");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let catalog = format!("ctl_schema_{}", std::process::id());
    rt.block_on(async {
        catalog_with_sales(&b, &catalog).await;
        sql(
            &b,
            &[
                format!("GRANT MODIFY ON SCHEMA {catalog}.sales TO `analysts`"),
                // a pipeline's table and a view over it: listed as unmanaged, never touched
                format!("CREATE TABLE {catalog}.sales.raw (id BIGINT) USING DELTA"),
                format!("CREATE VIEW {catalog}.sales.raw_v AS SELECT id FROM {catalog}.sales.raw"),
            ],
        )
        .await;
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
    let unmanaged = seen["status"]["unmanaged"].to_string();
    assert!(
        unmanaged.contains(&format!("\"{catalog}.sales.raw\""))
            && unmanaged.contains(&format!("{catalog}.sales.raw_v (view)")),
        "the schema's status lists the table and the view it does not manage: {}",
        seen["status"]
    );
    assert_eq!(seen["status"]["unmanagedCount"], 2, "{}", seen["status"]);
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

/// A DeltaTable whose schema does not exist yet waits for it (Reconciling, SchemaNotFound),
/// never ReadFailed and never creating the schema itself: here its DeltaSchema's plan is
/// refused (a comment the lake cannot hold), so the schema is not created and the table
/// keeps waiting with nothing written. Once the DeltaSchema is fixed, its reconcile creates
/// the schema's folder and the table converges.
#[test]
fn a_table_waits_for_its_schema_to_be_created_then_converges() {
    let ns = namespace("lakecreate");
    let op = Operator::start(&ns, "    namespaces: ['*']", &[]);
    let orders = "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: orders}\nspec:\n  schemaRef: sales\n  columns:\n    - {name: id, type: bigint}\n";
    apply_yaml(
        &ns,
        &format!("{}{orders}", schema_yaml("main", "  comment: Sales data\n")),
    );
    let seen = wait_condition(
        &ns,
        "deltatable",
        "orders",
        "Reconciling",
        "True",
        Some("SchemaNotFound"),
    );
    let text = seen["status"].to_string();
    assert!(
        text.contains("waiting for schema main.sales to be created by DeltaSchema 'sales'"),
        "{text}"
    );
    wait_condition(
        &ns,
        "deltaschema",
        "sales",
        "Stalled",
        "True",
        Some("NotSupportedByBackend"),
    );
    assert!(
        !op.lake.join("main/sales").exists(),
        "neither the schema nor the table is created while the schema's plan is refused"
    );
    apply_yaml(&ns, &schema_yaml("main", ""));
    let seen = wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    assert!(op.lake.join("main/sales").is_dir(), "{}", seen["status"]);
    wait_condition(&ns, "deltatable", "orders", "Ready", "True", None);
    assert!(
        op.table_dir("orders").join("_delta_log").is_dir(),
        "{}",
        op.log()
    );
}

/// How many DeltaTables the restart test declares, each documented at length
/// (a table comment and 8 column comments of 16 KiB, the CRD's limit): their
/// list (~4 MB) takes longer to arrive than the one DeltaSchema's.
const DECLARED: usize = 30;

/// A long-documented table's spec body.
fn documented() -> String {
    let long = |what: &str| format!("{what} {}", "documented at length. ".repeat(700));
    let mut body = format!("  comment: '{}'\n  columns:\n", long("the table"));
    for c in 0..8 {
        body.push_str(&format!(
            "    - {{name: c{c}, type: bigint, comment: '{}'}}\n",
            long(&format!("column {c}"))
        ));
    }
    body
}

/// A restarted operator decides orphans only once it has listed every DeltaTable
/// (`Context::caches_synced`). A strict schema would plan the drop of a table no
/// DeltaTable declares; with 30 long-documented tables all Ready, the new operator's
/// schema status, sampled every 300 ms, never lists an orphan nor waits for
/// an approval, no event speaks of one, and every table stays.
#[test]
fn a_restarted_operator_takes_no_declared_table_for_an_orphan() {
    let ns = namespace("orphans-sync");
    // each table created once (no drift re-reads meanwhile)
    let op = Operator::start(&ns, ALL, &["--drift-interval", "300s"]);
    apply_yaml(&ns, support::STRICT_SCHEMA);
    let body = documented();
    let yaml: String = (0..DECLARED)
        .map(|i| support::table(&format!("t{i:02}"), &body))
        .collect();
    // create, not apply: the last-applied annotation would pass the 256 KiB limit
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), yaml).unwrap();
    kubectl_ok(&["create", "-n", &ns, "-f", file.path().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable",
        "--all",
        "--timeout=400s",
    ]);
    wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    let dir = op.stop();
    // echoed by the new operator's first schema reconcile: proof that it ran
    let asked = format!("restart-{}", std::process::id());
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltaschema/sales",
        &format!("reconcile.fluxcd.io/requestedAt={asked}"),
    ]);
    let sampler = Sampler::start(&ns, "deltaschema", "sales", Duration::from_millis(300));
    let op = Operator::start_in(&ns, ALL, &[], dir);
    wait_until(
        "the new operator to reconcile the schema",
        Duration::from_secs(60),
        || {
            let s = get(&ns, "deltaschema", "sales");
            if s["status"]["lastHandledReconcileAt"] == asked.as_str() {
                Ok(())
            } else {
                Err(s["status"].to_string())
            }
        },
    );
    // and a few more (the drift interval is 2 s)
    std::thread::sleep(Duration::from_secs(8));
    let samples = sampler.samples();
    assert!(samples.len() >= 10, "sampled {} times", samples.len());
    never_stalled(&samples);
    for s in &samples {
        let orphans = &s["status"]["orphans"];
        assert!(
            orphans.is_null() || orphans.as_array().is_some_and(Vec::is_empty),
            "declared tables taken for orphans: {}",
            s["status"]
        );
    }
    let said = events(&ns, "sales").to_lowercase();
    assert!(
        !said.contains("orphan") && !said.contains("approval"),
        "{said}"
    );
    wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    for i in 0..DECLARED {
        let t = format!("t{i:02}");
        assert!(op.table_dir(&t).join("_delta_log").is_dir(), "{t} stays");
    }
}

/// A table in the schema that no DeltaTable declares and that carries no owner marker (a
/// pipeline's, written here by the Python `deltalake` writer) is listed in the DeltaSchema's
/// status as unmanaged, with a count, and never touched.
#[test]
fn a_schemas_status_lists_the_tables_it_does_not_manage() {
    let ns = namespace("unmanaged");
    let op = Operator::start(&ns, ALL, &[]);
    apply_yaml(&ns, support::SCHEMA);
    wait_condition(&ns, "deltaschema", "sales", "Ready", "True", None);
    let stranger = op.table_dir("pipeline_events");
    std::fs::create_dir_all(&stranger).unwrap();
    let o = std::process::Command::new(support::python())
        .arg("-c")
        .arg(format!(
            "import deltalake, pyarrow as pa, os, sys\ndeltalake.write_deltalake({:?}, pa.table({{'id': pa.array([1, 2], pa.int64())}}))\nsys.stdout.flush()\nos._exit(0)",
            stranger.to_str().unwrap()
        ))
        .output()
        .expect("python");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log_before: Vec<_> = std::fs::read_dir(stranger.join("_delta_log"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltaschema/sales",
        "--overwrite",
        &format!(
            "reconcile.fluxcd.io/requestedAt=unmanaged-{}",
            std::process::id()
        ),
    ]);
    wait_until(
        "the schema's status to list the unmanaged table",
        Duration::from_secs(60),
        || {
            let s = get(&ns, "deltaschema", "sales");
            let listed = s["status"]["unmanaged"]
                .as_array()
                .is_some_and(|u| u.iter().any(|t| t == "main.sales.pipeline_events"));
            if listed && s["status"]["unmanagedCount"] == 1 {
                Ok(())
            } else {
                Err(s["status"].to_string())
            }
        },
    );
    let log_after: Vec<_> = std::fs::read_dir(stranger.join("_delta_log"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        log_before, log_after,
        "the unmanaged table is never written"
    );
}
