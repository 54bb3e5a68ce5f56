//! What one admission and one reconcile's dependency lookup cost beside 1,000
//! and beside 20,000 cached DeltaTables of one namespace, in the same run, with
//! the ratio (the goal: within 1.2×, a cost per event independent of the
//! number of tables). The caches are the real ones (kube's reflector stores
//! and `lookup::TableIndex`, fed the watch events a list would bring); the
//! admission is the webhook's whole answer to an AdmissionReview body.
//! `cargo bench -p delta-operator-controller --bench depends` runs the full
//! sizes; under `cargo test` (no `--bench` argument) small ones, to prove it works.

use std::sync::Arc;
use std::time::{Duration, Instant};

use delta_operator_api::spec::{DeltaSchema, DeltaTable};
use delta_operator_controller::depends::{self, Claims, Dependent};
use delta_operator_controller::lookup::TableIndex;
use delta_operator_controller::webhook::{Caches, answer};
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

const NS: &str = "shop";
/// Tables per DeltaSchema, as `make bench-controller` spreads them.
const PER_SCHEMA: usize = 500;

fn schema(i: usize) -> Value {
    json!({
        "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaSchema",
        "metadata": {"name": format!("s{i}"), "namespace": NS}, "spec": {"catalog": "main"}
    })
}

/// Table `i`: 6 columns, keyed by id; every third references the one before it
/// (so foreign keys are there to follow, two deep at most).
fn table(name: &str, schema: usize, references: Option<&str>) -> Value {
    let mut constraints = vec![json!({"primaryKey": {"columns": ["id"]}})];
    if let Some(r) = references {
        constraints.push(
            json!({"foreignKey": {"columns": ["ref_id"], "references": r,
            "referencedColumns": ["id"]}}),
        );
    }
    json!({
        "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schemaRef": format!("s{schema}"), "comment": "a table of the bench",
            "columns": [
                {"name": "id", "type": "bigint", "nullable": false},
                {"name": "ref_id", "type": "bigint"},
                {"name": "amount", "type": "decimal(18,2)"},
                {"name": "note", "type": "string"},
                {"name": "at", "type": "timestamp"},
                {"name": "ok", "type": "boolean"},
            ],
            "constraints": constraints}
    })
}

fn nth_table(i: usize) -> Value {
    let previous = format!("t{}", i.wrapping_sub(1));
    let refs = (i % 3 == 2).then_some(previous.as_str());
    table(&format!("t{i}"), i / PER_SCHEMA, refs)
}

/// The caches as the webhook and the controller hold them after listing `n` tables.
fn caches(n: usize) -> Caches {
    let (tables, mut tw) = reflector::store::<DeltaTable>();
    let (schemas, mut sw) = reflector::store::<DeltaSchema>();
    let index = TableIndex::default();
    for s in 0..n.div_ceil(PER_SCHEMA) {
        let s: DeltaSchema = serde_json::from_value(schema(s)).unwrap();
        sw.apply_watcher_event(&Event::Apply(s));
    }
    let mut feed = |e: Event<DeltaTable>| {
        tw.apply_watcher_event(&e);
        index.apply(&e);
    };
    feed(Event::Init);
    for i in 0..n {
        feed(Event::InitApply(
            serde_json::from_value(nth_table(i)).unwrap(),
        ));
    }
    feed(Event::InitDone);
    Caches {
        tables,
        schemas,
        index,
        config: Arc::default(),
    }
}

/// The table each event is about: in the first schema, referencing `t2`
/// (which references `t1`), so both ancestors are dependencies.
fn probe() -> Value {
    table("probe", 0, Some("t2"))
}

fn review(object: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "bench",
            "kind": {"group": "delta-operator.io", "version": "v1alpha1", "kind": "DeltaTable"},
            "resource": {"group": "delta-operator.io", "version": "v1alpha1", "resource": "deltatables"},
            "name": "probe", "namespace": NS, "operation": "CREATE",
            "userInfo": {"username": "bench"}, "object": object,
        }
    }))
    .unwrap()
}

/// The medians of `f` on the small and on the large caches, timed in turns (one
/// run of each, then again), so that a load coming and going on a shared
/// machine weighs on both alike.
fn medians(
    runs: usize,
    small: &Caches,
    large: &Caches,
    mut f: impl FnMut(&Caches),
) -> (Duration, Duration) {
    for _ in 0..runs.div_ceil(10) {
        f(small); // warm what the measured runs will find warm
        f(large);
    }
    let mut time = |c: &Caches| {
        let start = Instant::now();
        f(c);
        start.elapsed()
    };
    let (mut a, mut b): (Vec<Duration>, Vec<Duration>) =
        (0..runs).map(|_| (time(small), time(large))).unzip();
    a.sort();
    b.sort();
    (a[runs / 2], b[runs / 2])
}

/// What is measured, checked once: the admission allows the table, and its
/// dependencies are its two ancestors and no other table.
fn check(caches: &Caches, body: &[u8], probe: &DeltaTable) {
    let out: Value = serde_json::from_slice(&answer(body, Some(caches))).unwrap();
    assert_eq!(out["response"]["allowed"], true, "{out}");
    let deps = depends::dependencies(
        Dependent::Table(probe),
        &caches.namespace(NS),
        Claims::OwnerMarker,
    );
    let names: Vec<String> = deps
        .tables
        .iter()
        .map(|t| t.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["t1", "t2"]);
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (small, large, runs) = if full {
        (1_000, 20_000, 501)
    } else {
        (50, 200, 5)
    };
    let (a, b) = (caches(small), caches(large));
    let body = review(&probe());
    let probe: DeltaTable = serde_json::from_value(probe()).unwrap();
    check(&a, &body, &probe);
    check(&b, &body, &probe);
    let admission = medians(runs, &a, &b, |c| {
        std::hint::black_box(answer(&body, Some(c)));
    });
    let reconcile = medians(runs, &a, &b, |c| {
        let cached = c.namespace(NS);
        let d = depends::dependencies(Dependent::Table(&probe), &cached, Claims::OwnerMarker);
        std::hint::black_box(depends::with_table(&d, depends::cached(probe.clone())));
    });
    // what every admission and reconcile did first before the index: the namespace's tables
    let listing = medians(runs, &a, &b, |c| {
        let in_ns: Vec<Arc<DeltaTable>> = c
            .tables
            .state()
            .into_iter()
            .filter(|t| t.metadata.namespace.as_deref() == Some(NS))
            .collect();
        std::hint::black_box(in_ns);
    });
    println!(
        "one namespace, one DeltaSchema per {PER_SCHEMA} tables; median of {runs} runs each, \
         the two sizes timed in turns; the goal: within 1.2x"
    );
    let row = |what: &str, (x, y): (Duration, Duration)| {
        println!(
            "{what:<66} {small:>6} tables: {:>8.1} µs   {large:>6} tables: {:>8.1} µs   ratio {:.2}x",
            x.as_secs_f64() * 1e6,
            y.as_secs_f64() * 1e6,
            y.as_secs_f64() / x.as_secs_f64()
        );
    };
    row(
        "admission of a DeltaTable (webhook::answer, whole request)",
        admission,
    );
    row(
        "reconcile's dependency lookup (dependencies + manifests)",
        reconcile,
    );
    row(
        "for reference: listing the namespace (what both did first before)",
        listing,
    );
}
