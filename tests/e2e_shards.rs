//! Shards, on a real kube-apiserver + etcd (`e2e/with-controlplane.sh`) and a
//! lake of real Delta tables: two operator processes with `--shards 4` share
//! the tables of four namespaces (one namespace per shard), each reconciling
//! and applying only the shards whose Lease it holds; one is killed (-9), and
//! the other takes its shards within the Lease duration and reconciles what was
//! the dead one's.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use delta_operator::controller::shard::shard_of;
use serde_json::Value;
use support::e2e::*;

const SHARDS: u32 = 4;
/// Renewed every third of it: long enough that a replica slowed by a loaded machine (CI runs
/// this beside a node's pods, and the replicas reconcile every earlier test's leftovers, being
/// cluster-wide) does not miss a renewal and see its shard taken mid-test (4 s did, once).
const LEASE_SECONDS: u64 = 10;
const TABLES_PER_NAMESPACE: usize = 4;

/// A DeltaSchema `team` (lake schema `main.<schema>`) and its tables `t0`….
fn manifests(schema: &str, tables: usize) -> String {
    let mut out = format!(
        "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata:\n  name: {schema}\nspec:\n  catalog: main\n  mode: additive\n"
    );
    for i in 0..tables {
        out.push_str(&table(schema, &format!("t{i}"), "first"));
    }
    out
}

fn table(schema: &str, name: &str, comment: &str) -> String {
    format!(
        "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata:\n  name: {name}\nspec:\n  schemaRef: {schema}\n  comment: {comment}\n  columns:\n    - name: id\n      type: bigint\n    - name: note\n      type: string\n"
    )
}

/// One namespace per shard: names tried in turn until each shard has one.
fn namespace_per_shard() -> Vec<String> {
    let mut by_shard: BTreeMap<u32, String> = BTreeMap::new();
    for k in 0.. {
        let name = format!("shard{k}-{}", std::process::id());
        by_shard
            .entry(shard_of(&name, None, SHARDS))
            .or_insert(name);
        if by_shard.len() == SHARDS as usize {
            break;
        }
    }
    let names: Vec<String> = by_shard.into_values().collect();
    for n in &names {
        kubectl_ok(&["create", "namespace", n]);
    }
    names
}

/// Each shard Lease's holder, when it holds it unexpired.
fn holders(lease_ns: &str) -> BTreeMap<u32, String> {
    let out = kubectl_ok(&["get", "lease", "-n", lease_ns, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).unwrap();
    let mut held = BTreeMap::new();
    for l in list["items"].as_array().unwrap() {
        let Some(i) = l["metadata"]["name"]
            .as_str()
            .and_then(|n| n.strip_prefix("delta-operator-shard-"))
            .and_then(|i| i.parse::<u32>().ok())
        else {
            continue;
        };
        let spec = &l["spec"];
        let (Some(holder), Some(renewed)) =
            (spec["holderIdentity"].as_str(), spec["renewTime"].as_str())
        else {
            continue;
        };
        let renewed = chrono::DateTime::parse_from_rfc3339(renewed).unwrap();
        let secs = spec["leaseDurationSeconds"].as_i64().unwrap_or(0);
        if renewed + chrono::Duration::seconds(secs) > chrono::Utc::now() {
            held.insert(i, holder.to_string());
        }
    }
    held
}

/// The writers the commits of a lake table name (`delta-operator.writer`).
fn writers(table: &std::path::Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .flatten()
    {
        if e.path().extension().is_none_or(|x| x != "json") {
            continue;
        }
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            let action: Value = serde_json::from_str(line).unwrap();
            if let Some(w) = action["commitInfo"]["delta-operator.writer"].as_str() {
                out.insert(w.to_string());
            }
        }
    }
    out
}

fn ready(ns: &str, kind: &str, name: &str) -> Result<Value, String> {
    let o = get(ns, kind, name);
    match condition(&o, "Ready") {
        Some((s, _)) if s == "True" => Ok(o),
        _ => Err(format!("{ns}/{name}: {}", o["status"])),
    }
}

#[test]
fn two_replicas_share_the_shards_and_the_survivor_takes_a_dead_ones() {
    let lease_ns = namespace("shards-leases");
    let namespaces = namespace_per_shard();
    let lake = tempfile::tempdir().unwrap();
    let config = format!(
        "targets:\n  lake:\n    lake: {{root: {}}}\n{ALL}\n",
        lake.path().display()
    );
    let lease_seconds = LEASE_SECONDS.to_string();
    let shards = SHARDS.to_string();
    let start = |identity: &str| {
        Operator::start_cluster_wide(
            &lease_ns,
            &config,
            &[
                "--leader-elect",
                "--shards",
                &shards,
                "--lease-seconds",
                &lease_seconds,
                "--identity",
                identity,
            ],
            tempfile::tempdir().unwrap(),
        )
    };
    let mut a = start("op-a");
    let b = start("op-b");
    // two shards each, once both see the other
    wait_until("the shards to be shared", Duration::from_secs(60), || {
        let h = holders(&lease_ns);
        let of = |id: &str| h.values().filter(|v| *v == id).count();
        if h.len() == SHARDS as usize && of("op-a") == 2 && of("op-b") == 2 {
            Ok(())
        } else {
            Err(format!("{h:?}"))
        }
    });
    for (k, ns) in namespaces.iter().enumerate() {
        apply_yaml(ns, &manifests(&format!("team{k}"), TABLES_PER_NAMESPACE));
    }
    let mut objects: Vec<(String, String)> = vec![];
    for ns in &namespaces {
        for i in 0..TABLES_PER_NAMESPACE {
            objects.push((ns.clone(), format!("t{i}")));
        }
    }
    wait_until("every table to be Ready", Duration::from_secs(180), || {
        objects
            .iter()
            .try_for_each(|(ns, name)| ready(ns, "deltatable", name).map(|_| ()))
    });
    // each table was reconciled, and so applied, by the replica holding its shard
    let held = holders(&lease_ns);
    let mut applied_by = BTreeSet::new();
    for (ns, name) in &objects {
        let o = get(ns, "deltatable", name);
        let shard = shard_of(ns, None, SHARDS);
        assert_eq!(
            o["status"]["shard"].as_u64(),
            Some(u64::from(shard)),
            "{ns}/{name}: {}",
            o["status"]
        );
        let by = o["status"]["reconciledBy"].as_str().unwrap_or_default();
        assert_eq!(
            Some(by),
            held.get(&shard).map(String::as_str),
            "{ns}/{name}"
        );
        assert!(
            o["status"]["lastApplied"]["planId"].is_string(),
            "{ns}/{name}: {}",
            o["status"]
        );
        applied_by.insert(by.to_string());
    }
    assert_eq!(
        applied_by,
        BTreeSet::from(["op-a".to_string(), "op-b".to_string()]),
        "both replicas applied some"
    );
    // every commit of a table names, as its writer, the replica holding its shard
    for (k, ns) in namespaces.iter().enumerate() {
        let holder = &held[&shard_of(ns, None, SHARDS)];
        for i in 0..TABLES_PER_NAMESPACE {
            let dir = lake.path().join(format!("main/team{k}/t{i}"));
            let writers = writers(&dir);
            assert_eq!(
                writers,
                BTreeSet::from([holder.clone()]),
                "{ns}/t{i} ({})",
                dir.display()
            );
        }
    }
    assert!(
        b.http("/metrics").contains("delta_operator_shards_held 2"),
        "{}",
        b.http("/metrics")
    );

    // op-a dies: op-b holds every shard within the Lease duration and a margin
    let dead: Vec<String> = namespaces
        .iter()
        .filter(|ns| held.get(&shard_of(ns, None, SHARDS)).map(String::as_str) == Some("op-a"))
        .cloned()
        .collect();
    assert!(!dead.is_empty());
    a.kill9();
    let killed = Instant::now();
    wait_until(
        "op-b to hold every shard",
        Duration::from_secs(LEASE_SECONDS + 6),
        || {
            let h = holders(&lease_ns);
            if h.len() == SHARDS as usize && h.values().all(|v| v == "op-b") {
                Ok(())
            } else {
                Err(format!("{h:?}"))
            }
        },
    );
    eprintln!(
        "op-b held every shard {:?} after the kill",
        killed.elapsed()
    );

    // a table changed and one created in the dead replica's former shards: Ready through op-b
    let ns = &dead[0];
    let k = namespaces.iter().position(|n| n == ns).unwrap();
    let schema = format!("team{k}");
    apply_yaml(ns, &table(&schema, "t0", "changed"));
    apply_yaml(ns, &table(&schema, "late", "created after the kill"));
    wait_until(
        "the changed and the new table to be Ready through op-b",
        Duration::from_secs(90),
        || {
            for name in ["t0", "late"] {
                let o = ready(ns, "deltatable", name)?;
                let by = o["status"]["reconciledBy"].as_str().unwrap_or_default();
                let observed = o["status"]["observedGeneration"].as_i64();
                if by != "op-b" || observed != o["metadata"]["generation"].as_i64() {
                    return Err(format!("{name}: {}", o["status"]));
                }
            }
            Ok(())
        },
    );
    let t0 = get(ns, "deltatable", "t0");
    let comment = t0["status"]["conditions"].to_string();
    assert!(
        t0["status"]["lastApplied"]["planId"].is_string(),
        "{comment}"
    );
    assert!(
        b.http("/metrics").contains("delta_operator_shards_held 4"),
        "{}",
        b.http("/metrics")
    );
    for n in &namespaces {
        let _ = kubectl(&["delete", "namespace", n, "--wait=false"]);
    }
}
