//! Read cost on Databricks: statements and HTTP requests for (a) the first read of N unchanged
//! tables in one schema and (b) a steady-state drift check of them with the warehouse stopped,
//! against the warehouse emulator, counted on the server (its /_emulator/requests log, which
//! also counts warehouse starts) and cross-checked with the backend's own counters. A third of
//! the specs are silent about tags and grants, a third declare table tags, a third table tags,
//! a column's tags and grants: the cost per table of each kind is printed. Beside them, for the
//! same tables: what delta-engine and stevin need
//! (docs/architecture.md §9: delta-engine reads 6 statements per present table;
//! stevin runs 14 information_schema queries per schema, then DESCRIBE DETAIL per Delta table and
//! SHOW CREATE TABLE + SHOW EFFECTIVE POLICIES per described table, plus DESCRIBE HISTORY per
//! changed table: none here).
//!
//!   e2e/bench/statements.sh [N]          (N defaults to 200; starts and stops an emulator)
//!   # or, with an emulator already up (. DIR/env):
//!   BENCH_TABLES=200 cargo bench --profile dev --bench statements
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs with 5 tables to prove it
//! works; it needs the emulator's DATABRICKS_* and WAREHOUSE_URL either way.

use std::time::{Duration, Instant};

use delta_operator::backend::databricks::DatabricksBackend;
use delta_operator::backend::databricks::auth::{Credentials, Secret};
use delta_operator::backend::databricks::client::ClientConfig;
use delta_operator::engine::{lower, read_and_plan};
use delta_operator::model::OWNER_PROPERTY;
use delta_operator::spec::load::{Manifests, load_str};
use futures::StreamExt;
use serde_json::Value;

fn env(k: &str) -> String {
    std::env::var(k).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| {
        panic!("{k} is not set: this benchmark runs against the warehouse emulator. Run e2e/bench/statements.sh, or `e2e/warehouse/with-warehouse.sh cargo bench --profile dev --bench statements`")
    })
}

fn backend() -> DatabricksBackend {
    let creds = Credentials::Token(Secret::new(env("DATABRICKS_TOKEN")));
    let mut cfg = ClientConfig::new(
        &env("DATABRICKS_HOST"),
        &env("DATABRICKS_WAREHOUSE_ID"),
        creds,
    );
    cfg.poll_interval = Duration::from_millis(100);
    DatabricksBackend::new(cfg).expect("backend")
}

/// The server's request log from index `since`: (requests, statements, by endpoint, total, starts).
async fn server_log(since: u64) -> (u64, u64, Value, u64, u64) {
    let url = format!("{}/_emulator/requests?since={since}", env("WAREHOUSE_URL"));
    let v: Value = reqwest::get(&url)
        .await
        .expect("the emulator's admin endpoint")
        .json()
        .await
        .expect("json");
    let reqs = v["requests"].as_array().cloned().unwrap_or_default();
    let statements = reqs
        .iter()
        .filter(|r| r.get("statement").is_some_and(|s| !s.is_null()))
        .count() as u64;
    (
        reqs.len() as u64,
        statements,
        v["by_endpoint"].clone(),
        v["total_requests"].as_u64().unwrap_or(0),
        v["warehouse_starts"].as_u64().expect("warehouse_starts"),
    )
}

async fn faults(body: Value) {
    reqwest::Client::new()
        .post(format!("{}/_emulator/faults", env("WAREHOUSE_URL")))
        .json(&body)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .expect("the emulator's fault knobs");
}

/// What table `i`'s spec declares beyond its columns: 0 nothing, 1 a table tag, 2 a table
/// tag, a column's tag and a grant.
fn kind(i: usize) -> usize {
    i % 3
}

fn manifests(schema: &str, n: usize) -> delta_operator::engine::Inputs {
    let mut yaml = format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: bench}}\nspec: {{catalog: main, name: {schema}}}\n"
    );
    for i in 0..n {
        let (extra, v_tags) = match kind(i) {
            0 => ("", ""),
            1 => ("  tags: {domain: bench}\n", ""),
            _ => (
                "  tags: {domain: bench}\n  grants: [{principal: analysts, privileges: [SELECT]}]\n",
                ", tags: {pii: none}",
            ),
        };
        yaml.push_str(&format!(
            "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {{name: t{i:03}}}\nspec:\n  schemaRef: bench\n  comment: table {i}\n{extra}  columns:\n    - {{name: id, type: bigint, nullable: false}}\n    - {{name: v, type: string{v_tags}}}\n    - {{name: at, type: timestamp}}\n"
        ));
    }
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    load_str("bench.yaml", &yaml, &mut m, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    lower(&m).expect("valid manifests")
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let n: usize = if bench {
        std::env::var("BENCH_TABLES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200)
    } else {
        5
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(run(n));
}

async fn run(n: usize) {
    let setup = backend();
    let schema = format!("bench_{}_{}", std::process::id(), n);
    let t0 = Instant::now();
    setup
        .client()
        .execute(&format!("CREATE SCHEMA main.{schema}"), &|_: &str| {})
        .await
        .expect("create schema");
    // N tables exactly as the manifests declare them (owner marker included), four at a time
    // (the emulator's warehouse runs 4 statements at once)
    let creates = futures::stream::iter(0..n)
        .map(|i| {
            let t = format!("main.{schema}.t{i:03}");
            let mut sql = vec![format!(
                "CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, at TIMESTAMP) USING DELTA COMMENT 'table {i}' TBLPROPERTIES ('{OWNER_PROPERTY}' = 'default/t{i:03}')"
            )];
            if kind(i) > 0 {
                sql.push(format!("ALTER TABLE {t} SET TAGS ('domain' = 'bench')"));
            }
            if kind(i) > 1 {
                sql.push(format!("ALTER TABLE {t} ALTER COLUMN v SET TAGS ('pii' = 'none')"));
                sql.push(format!("GRANT SELECT ON TABLE {t} TO analysts"));
            }
            let c = setup.client();
            async move {
                for s in &sql {
                    c.execute(s, &|_: &str| {}).await.map_err(|e| format!("{s}: {e}"))?;
                }
                Ok::<(), String>(())
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<_>>()
        .await;
    for r in creates {
        r.expect("create");
    }
    let created_in = t0.elapsed();
    let inputs = manifests(&schema, n);

    // (a) the first read: a fresh backend (the operator just started)
    let b = backend();
    let (_, _, _, mark, _) = server_log(u64::MAX).await;
    let t = Instant::now();
    let (plan, observed) = read_and_plan(&b, &inputs).await.expect("read");
    let first_time = t.elapsed();
    let (first_req, first_stm, first_by, _, _) = server_log(mark).await;
    assert_eq!(observed.len(), n, "every table read");
    assert!(
        !plan.has_changes(),
        "the tables match their manifests:\n{}",
        delta_operator::plan::render::text::render(&plan)
    );
    let (own_first_stm, own_first_req) = (b.statements(), b.requests());

    // (b) a steady-state drift check: the same backend later (past its share window), nothing
    // moved, the warehouse stopped (auto-stopped while nothing changed)
    tokio::time::sleep(Duration::from_millis(2100)).await;
    faults(serde_json::json!({"warehouse_state": "STOPPED"})).await;
    let (_, _, _, mark, starts_before) = server_log(u64::MAX).await;
    let t = Instant::now();
    let checked = read_and_plan(&b, &inputs).await;
    let steady_time = t.elapsed();
    let (steady_req, steady_stm, steady_by, _, starts_after) = server_log(mark).await;
    faults(serde_json::json!({"warehouse_state": "RUNNING"})).await;
    assert!(!checked.expect("read").0.has_changes());
    let steady_starts = starts_after - starts_before;
    assert_eq!(steady_stm, 0, "a drift check sends no statement");
    assert_eq!(steady_starts, 0, "a drift check starts no warehouse");
    // requests naming each table (its tags, its column's tags, its grants), by kind of spec
    let prefix = format!("/main.{schema}.t");
    let mut per_kind = [0u64; 3];
    for (endpoint, count) in steady_by.as_object().into_iter().flatten() {
        let i = endpoint
            .find(&prefix)
            .and_then(|at| endpoint.get(at + prefix.len()..at + prefix.len() + 3))
            .and_then(|d| d.parse::<usize>().ok());
        if let Some(i) = i {
            per_kind[kind(i)] += count.as_u64().unwrap_or(0);
        }
    }
    let of_kind = |k: usize| (0..n).filter(|i| kind(*i) == k).count().max(1) as f64;
    let listing = steady_by["GET /api/2.1/unity-catalog/tables"]
        .as_u64()
        .unwrap_or(0);
    let (own_steady_stm, own_steady_req) =
        (b.statements() - own_first_stm, b.requests() - own_first_req);

    // the backend's own counters agree with the server's view
    assert_eq!(
        own_first_stm, first_stm,
        "statements: backend {own_first_stm}, server {first_stm}"
    );
    assert_eq!(
        own_steady_stm, steady_stm,
        "statements: backend {own_steady_stm}, server {steady_stm}"
    );
    assert_eq!(
        own_first_req, first_req,
        "requests: backend {own_first_req}, server {first_req}"
    );
    assert_eq!(
        own_steady_req, steady_req,
        "requests: backend {own_steady_req}, server {steady_req}"
    );

    let delta_engine = 6 * n as u64;
    let stevin = 14 + 3 * n as u64;
    println!(
        "read cost of {n} unchanged tables in one schema (main.{schema}; {n} tables created in {:.1}s)",
        created_in.as_secs_f64()
    );
    println!(
        "{:<34} {:>10} {:>13} {:>10}",
        "", "statements", "HTTP requests", "time"
    );
    println!(
        "{:<34} {:>10} {:>13} {:>9.2}s",
        "delta-operator (a) first read",
        first_stm,
        first_req,
        first_time.as_secs_f64()
    );
    println!(
        "{:<34} {:>10} {:>13} {:>9.2}s",
        "delta-operator (b) steady drift check",
        steady_stm,
        steady_req,
        steady_time.as_secs_f64()
    );
    println!(
        "{:<34} {:>10} {:>13} {:>10}",
        "delta-engine (a) and (b)", delta_engine, "≥ 6/table", ""
    );
    println!(
        "{:<34} {:>10} {:>13} {:>10}",
        "stevin (a) and (b)", stevin, "≥ 1/stmt", ""
    );
    println!(
        "  (b) with the warehouse stopped: {steady_starts} warehouse starts, {steady_stm} statements; per schema {listing} listing request(s); per table {:.2} requests on average: silent spec {:.2}, table tags {:.2}, table tags + a column's tags + grants {:.2}",
        (steady_req - listing) as f64 / n as f64,
        per_kind[0] as f64 / of_kind(0),
        per_kind[1] as f64 / of_kind(1),
        per_kind[2] as f64 / of_kind(2),
    );
    println!("  (a) by endpoint: {first_by}");
    println!("  (b) by endpoint: {steady_by}");
    println!(
        "  delta-engine: 6 sequential statements per present table (DESCRIBE TABLE EXTENDED AS JSON + 5 information_schema queries) = 6 × {n}"
    );
    println!(
        "  stevin: 14 information_schema queries per schema + per table DESCRIBE DETAIL, SHOW CREATE TABLE, SHOW EFFECTIVE POLICIES (+ DESCRIBE HISTORY per changed table: 0) = 14 + 3 × {n}"
    );
    println!(
        "  counted on the server (/_emulator/requests) and by the backend (DatabricksBackend::statements/requests): equal"
    );
    setup
        .client()
        .execute(&format!("DROP SCHEMA main.{schema} CASCADE"), &|_: &str| {})
        .await
        .ok();
}
