//! `delta-operator verify` against the warehouse emulator (e2e/warehouse/):
//! real Delta Lake on Spark behind the Databricks REST shapes, Unity Catalog
//! parts emulated. `make test` starts it around the cargo tests; by hand:
//! `e2e/warehouse/with-warehouse.sh cargo test --test verify_warehouse`.
//!
//! The emulator is not Databricks, so several assumptions cannot hold there.
//! The test pins the exact outcome of every probe on the emulator, and why,
//! so a change in a probe, in our SQL or in the emulator shows up here.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

struct Env {
    host: String,
    token: String,
    warehouse: String,
    admin: String,
}

fn env() -> Env {
    let get = support::warehouse::env;
    Env {
        host: get("DATABRICKS_HOST"),
        token: get("DATABRICKS_TOKEN"),
        warehouse: get("DATABRICKS_WAREHOUSE_ID"),
        admin: get("WAREHOUSE_URL"),
    }
}

/// A config with one Databricks target whose host, warehouse and token come from the environment.
fn config(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("config.yaml");
    std::fs::write(&p, "targets:\n  wh:\n    databricks: {}\n").unwrap();
    p
}

fn verify(cfg: &Path, args: &[&str]) -> Output {
    let e = env();
    let out = Command::new(env!("CARGO_BIN_EXE_delta-operator"))
        .arg("--config")
        .arg(cfg)
        .arg("verify")
        .args(["--target", "wh"])
        .args(args)
        .env("DATABRICKS_HOST", &e.host)
        .env("DATABRICKS_TOKEN", &e.token)
        .env("DATABRICKS_WAREHOUSE_ID", &e.warehouse)
        .env_remove("DATABRICKS_CLIENT_ID")
        .env_remove("DATABRICKS_CLIENT_SECRET")
        .output()
        .expect("runs the binary");
    eprintln!(
        "--- stderr of verify {args:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn http(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut req = reqwest::Client::new().request(method, url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("the emulator answers");
        (
            resp.status().as_u16(),
            resp.text().await.unwrap_or_default(),
        )
    })
}

fn schema_exists(full: &str) -> bool {
    let e = env();
    let (status, body) = http(
        reqwest::Method::GET,
        &format!("{}/api/2.1/unity-catalog/schemas/{full}", e.host),
        Some(&e.token),
        None,
    );
    match status {
        200 => true,
        404 => false,
        other => panic!("GET schemas/{full}: HTTP {other}: {body}"),
    }
}

/// The outcome of every probe on the emulator, and why. (outcome, a piece of
/// the workspace's words that must appear, when the emulator refused something).
fn expected() -> BTreeMap<&'static str, (&'static str, Option<&'static str>)> {
    BTreeMap::from([
        // Real Delta: CREATE OR REPLACE … AS SELECT from itself works in Delta 4.4.
        ("replace_reads_itself", ("held", None)),
        // Emulated from the documented (and stevin-pinned) behaviour: REPLACE keeps tags and grants.
        ("replace_keeps_tags_and_grants", ("held", None)),
        // Real Delta RESTORE, through our own undo text.
        ("restore_puts_back_replaced", ("held", None)),
        // Real Delta shallow clone.
        ("clone_outlives_rewrite", ("held", None)),
        // Emulated from the CREATE VIEW page: a replaced view loses its grants and tags
        // (Spark's own replace drops its properties).
        ("replace_view_drops_governance", ("held", None)),
        // Emulated: UC functions are real Spark SQL functions whose replace drops the grants.
        ("replace_function_drops_grants", ("held", None)),
        // The emulator keeps the query as sent (TableInfo / information_schema.views).
        ("view_definition_as_written", ("held", None)),
        // Emulated: COMMENT ON TABLE on a view sets its comment (Spark refuses it).
        ("comment_on_table_names_a_view", ("held", None)),
        // Emulated: ROUTINE_NOT_FOUND for a mask naming a missing function.
        ("mask_needs_existing_function", ("held", None)),
        // Emulated from the CREATE FUNCTION page: other parameter types are refused.
        ("replace_function_keeps_signature", ("held", None)),
        // OSS Delta drops a nested NOT NULL but refuses SET NOT NULL (Databricks-only).
        (
            "nested_not_null_alter",
            (
                "differed",
                Some("Cannot change nullable column to non-nullable: s.x"),
            ),
        ),
        // Real Delta: both kinds at create; ADD COLUMN with either is refused.
        ("identity_generated_not_addable", ("held", None)),
        // Real Spark/Delta: a CHECK in CREATE TABLE is refused; ADD CONSTRAINT works.
        ("check_not_in_create", ("held", None)),
        // Real Delta: date → timestamp_ntz needs the timestampNtz feature on top of type
        // widening, which our plan does not enable (a finding, not an emulator gap).
        (
            "metadata_widenings_allowed",
            ("differed", Some("DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT")),
        ),
        // Real Delta 4.4: map keys and values and array elements widen by their path,
        // and ADD COLUMNS reaches inside an array's structs.
        ("nested_changes_in_place", ("held", None)),
        // Real Delta refuses every change our matrix calls a rewrite.
        ("rewrite_widenings_refused", ("held", None)),
        // Real Delta: DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS for 5 keys.
        ("cluster_keys_at_most_4", ("held", None)),
        // CLUSTER BY AUTO is Databricks-only: OSS Spark cannot parse it.
        ("cluster_by_auto", ("differed", Some("PARSE_SYNTAX_ERROR"))),
        // Real Delta 4.4 refuses replacing a (once) clustered table by a partitioned one even
        // after CLUSTER BY NONE; stevin pinned the opposite on Databricks.
        (
            "partition_after_cluster_none",
            (
                "differed",
                Some("DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE"),
            ),
        ),
        ("insert_overwrite_column_list", ("held", None)),
        // Emulated UNDROP (the table is renamed aside and back, properties kept).
        ("undrop_brings_back", ("held", None)),
        // Spark 4 runs in ANSI mode.
        ("ansi_mode", ("held", None)),
        // UC REST: 404 CATALOG_DOES_NOT_EXIST.
        ("missing_catalog_is_error", ("held", None)),
        // The emulator lists only direct grants (inherited_from 'NONE'), never inherited ones.
        ("schema_grant_not_table_grant", ("held", None)),
        ("table_privileges_inherited_from", ("differed", None)),
        // Emulated: CREATE MATERIALIZED VIEW makes a Delta table typed MATERIALIZED_VIEW.
        ("mv_left_alone", ("held", None)),
        // ABAC policies are not emulated: CREATE POLICY is a syntax error.
        (
            "effective_policies_columns",
            ("unknown", Some("PARSE_SYNTAX_ERROR")),
        ),
        // The emulator answers SHOW [EFFECTIVE] POLICIES with the documented columns and no rows.
        ("no_policy_lists_none", ("held", None)),
        (
            "describe_policy_shape",
            ("unknown", Some("PARSE_SYNTAX_ERROR")),
        ),
        ("widening_needs_feature", ("held", None)),
        ("rename_needs_column_mapping", ("held", None)),
        ("drop_needs_column_mapping", ("held", None)),
        // Delta 4.4 can remove column mapping (REMOVE COLUMN MAPPING): our rule is stricter.
        ("column_mapping_irreversible", ("differed", None)),
        // OSS Delta refuses SET NOT NULL altogether (Databricks-only).
        (
            "set_not_null_in_place",
            (
                "differed",
                Some("Cannot change nullable column to non-nullable: a"),
            ),
        ),
        ("drop_not_null_in_place", ("held", None)),
        ("restore_undoes_drop_column", ("held", None)),
        ("check_validates_existing_rows", ("held", None)),
        ("default_needs_feature", ("held", None)),
        ("cluster_by_in_place", ("held", None)),
        ("comments_clear", ("held", None)),
        // Spark substitutes ${x} inside a backtick-quoted identifier (variable substitution
        // runs on the raw text), so the column `${x}` is created as ``: sql::ident cannot
        // protect identifiers the way sql::literal protects literals (a finding).
        ("hostile_names_round_trip", ("differed", None)),
        // Emulated PK/FK: UC lower-cases constraint names.
        ("primary_key_statements", ("held", None)),
        ("history_gives_version", ("held", None)),
        ("clone_copies_owner_marker", ("held", None)),
    ])
}

#[test]
fn verify_reports_every_probe_honestly_on_the_emulator() {
    let e = env();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let schema = format!("verify_full_{}", std::process::id());
    assert!(
        !schema_exists(&format!("main.{schema}")),
        "a fresh scratch schema"
    );

    let t0 = std::time::Instant::now();
    let out = verify(&cfg, &["--schema", &format!("main.{schema}"), "--json"]);
    eprintln!("full run: {:.1}s", t0.elapsed().as_secs_f64());
    let stdout = String::from_utf8_lossy(&out.stdout);
    // some probes cannot hold on the emulator: exit 1
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}");
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|err| panic!("--json prints JSON ({err}):\n{stdout}"));

    let probes = report["probes"].as_array().expect("probes");
    let expected = expected();
    let names: Vec<&str> = probes.iter().map(|p| p["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        expected.keys().copied().collect::<Vec<_>>(),
        "the report lists every probe, once"
    );
    assert!(names.len() >= 24 + 10, "stevin's 24 and ours");

    let mut wrong = Vec::new();
    for p in probes {
        let name = p["name"].as_str().unwrap();
        let (outcome, words) = expected[name];
        let got = p["outcome"].as_str().unwrap();
        if got != outcome {
            wrong.push(format!(
                "{name}: expected {outcome}, got {got}: {}",
                p["result"]
            ));
            continue;
        }
        assert!(
            p["docs_url"].as_str().unwrap().starts_with("https://"),
            "{name} names its docs"
        );
        assert!(
            !p["matters"].as_str().unwrap().is_empty(),
            "{name} says what depends on it"
        );
        assert!(
            !p["statements"].as_array().unwrap().is_empty(),
            "{name} ran statements"
        );
        let message = p["result"]["workspace"]["message"].as_str();
        match (words, message) {
            (Some(w), Some(m)) => assert!(
                m.contains(w),
                "{name}: the workspace's words {m:?} should contain {w:?}"
            ),
            (Some(w), None) => wrong.push(format!(
                "{name}: expected the workspace's words ({w}), got none: {}",
                p["result"]
            )),
            (None, _) => {}
        }
        if got == "held" {
            assert!(
                p["result"]["evidence"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty()),
                "{name}: held with evidence"
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "outcomes differ from the emulator's expected ones:\n{}",
        wrong.join("\n")
    );

    let count = |k: &str| expected.values().filter(|(o, _)| *o == k).count() as u64;
    assert_eq!(report["held"].as_u64(), Some(count("held")));
    assert_eq!(report["differed"].as_u64(), Some(count("differed")));
    assert_eq!(report["unknown"].as_u64(), Some(count("unknown")));
    // the widening probe says which widening differed
    let widen = probes
        .iter()
        .find(|p| p["name"] == "metadata_widenings_allowed")
        .unwrap();
    assert!(
        widen["result"]["observed"]
            .as_str()
            .unwrap()
            .contains("date → timestamp_ntz"),
        "{}",
        widen["result"]
    );
    // the hostile-names probe names the one that did not round-trip, and only it
    let hostile = probes
        .iter()
        .find(|p| p["name"] == "hostile_names_round_trip")
        .unwrap();
    assert_eq!(
        hostile["result"]["observed"]
            .as_str()
            .unwrap()
            .matches("missing")
            .count(),
        1,
        "{}",
        hostile["result"]
    );
    assert!(
        hostile["result"]["observed"]
            .as_str()
            .unwrap()
            .contains("column \"${x}\" missing"),
        "{}",
        hostile["result"]
    );

    // the scratch schema was created for the run and is gone afterwards (no --keep)
    assert_eq!(report["schema_kept"], Value::Bool(false));
    assert!(
        !schema_exists(&format!("main.{schema}")),
        "the scratch schema is dropped with CASCADE"
    );

    // ---- a refusal shows the workspace's own words verbatim under ✗
    let words = r"[VERIFY_INJECTED] the workspace's own words: 'quoted' \ back ${not_substituted} ✓ SQLSTATE: XX000";
    let (status, body) = http(
        reqwest::Method::POST,
        &format!("{}/_emulator/faults", e.admin),
        None,
        Some(
            serde_json::json!({"fail_pattern": "^\\s*INSERT\\s+OVERWRITE", "fail_message": words}),
        ),
    );
    assert_eq!(status, 200, "{body}");
    let faulted = verify(
        &cfg,
        &[
            "--schema",
            &format!("main.{schema}_fault"),
            "--only",
            "insert_overwrite_column_list,ansi_mode",
        ],
    );
    let (status, body) = http(
        reqwest::Method::DELETE,
        &format!("{}/_emulator/faults", e.admin),
        None,
        None,
    );
    assert_eq!(status, 200, "{body}");
    let text = String::from_utf8_lossy(&faulted.stdout);
    assert_eq!(faulted.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("insert_overwrite_column_list"))
        .unwrap_or_else(|| panic!("a line for the probe:\n{text}"));
    assert!(line.starts_with("✗ differed"), "{line}");
    assert!(
        text.contains(&format!("the workspace said:\n              {words}\n")),
        "verbatim words under the ✗:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("✓ held") && l.contains("ansi_mode")),
        "{text}"
    );
    assert!(text.contains("1 held, 1 differed, 0 unknown"), "{text}");
    let stderr = String::from_utf8_lossy(&faulted.stderr);
    assert!(
        stderr.contains("insert_overwrite_column_list ✗ differed"),
        "progress per probe on stderr:\n{stderr}"
    );
    assert!(!schema_exists(&format!("main.{schema}_fault")));

    // ---- all held: exit 0; --keep leaves the schema
    let ok = verify(
        &cfg,
        &[
            "--schema",
            &format!("main.{schema}_ok"),
            "--only",
            "ansi_mode,history_gives_version",
            "--keep",
        ],
    );
    let text = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0), "{text}");
    assert!(text.contains("2 held, 0 differed, 0 unknown"), "{text}");
    assert!(
        schema_exists(&format!("main.{schema}_ok")),
        "--keep keeps the scratch schema"
    );
}

#[test]
fn verify_refuses_a_non_databricks_target_and_a_bad_schema() {
    let _ = env();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!(
            "targets:\n  lake: {{lake: {{root: {}}}}}\n  wh:\n    databricks: {{}}\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_delta-operator"))
        .arg("--config")
        .arg(&cfg)
        .args(["verify", "--target", "lake", "--schema", "main.x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("is a lake target: verify probes Databricks and Spark Connect targets"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = verify(&cfg, &["--schema", "no_dot"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("catalog.schema"));
    let out = verify(&cfg, &["--schema", "main.x", "--only", "no_such_probe"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such probe"));
}
