//! An apply in the cluster, from the outside: on a real kube-apiserver + etcd
//! (`e2e/with-controlplane.sh`, started by `make test`) and a lake of real Delta
//! tables. The status says which step runs and since when (Applying), a SIGTERM
//! or a kill -9 in the middle leaves it Interrupted (never Stalled), the next
//! operator resumes without losing a row, and a deletion whose target is
//! unavailable keeps its finalizer. The long step is a debug-build failpoint
//! (`slow-step-N`: the step waits before it runs), the kill mid-rewrite the
//! lake's `before-commit` failpoint (the process aborts with the rewritten
//! files written and nothing committed).

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use delta_operator::backend::lake::LakeBackend;
use delta_operator::model::TableRef;
use deltalake::arrow::array::{ArrayRef, Int64Array, StringArray};
use serde_json::Value;
use support::Lake;
use support::e2e::*;

fn lake_of(op: &Operator) -> Lake {
    Lake {
        dir: tempfile::tempdir().unwrap(),
        backend: LakeBackend::open(op.lake.to_str().unwrap()).unwrap(),
    }
}

fn orders_ref() -> TableRef {
    TableRef::new("main", "sales", "orders")
}

/// Rows written by a writer outside the operator, and what they add up to.
async fn append_rows(lake: &Lake, from: i64, n: i64) {
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(from..from + n));
    let amounts: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (from..from + n).map(|i| i % 1000),
    ));
    let status: ArrayRef = Arc::new(StringArray::from_iter_values(
        (from..from + n).map(|i| format!("s{i}")),
    ));
    lake.append(
        &orders_ref(),
        vec![("order_id", ids), ("amount", amounts), ("status", status)],
    )
    .await;
}

/// Row count and a checksum over every value the rows carry.
async fn fingerprint(lake: &Lake) -> Vec<String> {
    lake.query(
        &orders_ref(),
        "SELECT count(*), sum(order_id), sum(CAST(amount AS BIGINT)), count(DISTINCT status) FROM t",
    )
    .await
}

/// Starts the operator on `dir`'s lake, the examples Ready, with rows in orders.
fn ready_with_rows(ns: &str) -> (tempfile::TempDir, Vec<String>) {
    let op = Operator::start(ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "wait",
        "-n",
        ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "deltatable/customers",
        "--timeout=60s",
    ]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lake = lake_of(&op);
    rt.block_on(append_rows(&lake, 1, 2_000));
    let before = rt.block_on(fingerprint(&lake));
    (op.stop(), before)
}

#[test]
fn an_apply_shows_its_step_and_a_sigterm_interrupts_it_then_the_next_operator_resumes() {
    let ns = namespace("applying");
    let (dir, before) = ready_with_rows(&ns);
    // step 2, the rewrite, takes 25 s before it runs
    let mut op = Operator::start_in_with_env(
        &ns,
        ALL,
        &[],
        dir,
        &[
            ("DELTA_OPERATOR_FAILPOINT", "slow-step-2"),
            ("DELTA_OPERATOR_FAILPOINT_SECONDS", "25"),
        ],
    );
    let sampler = Sampler::start(&ns, "deltatable", "orders", Duration::from_secs(1));
    apply_yaml(&ns, &orders_changed());
    // Applying, step 2 of 2, with how long it has run; the printer column shows it
    let mut applying = Value::Null;
    wait_until("step 2/4 to show", Duration::from_secs(60), || {
        applying = get(&ns, "deltatable", "orders");
        match true_condition(&applying, "Reconciling") {
            Some((r, m)) if r == "Applying" && m.starts_with("step 2/4 REPLACE TABLE") => Ok(()),
            _ => Err(applying["status"].to_string()),
        }
    });
    let apply = &applying["status"]["apply"];
    assert_eq!(apply["step"], 2, "{apply}");
    assert_eq!(apply["of"], 4, "{apply}");
    assert_eq!(apply["planId"], applying["status"]["plan"]["id"], "{apply}");
    assert!(
        apply["startedAt"].is_string() && apply["stepStartedAt"].is_string(),
        "{apply}"
    );
    assert!(
        apply["restorePoints"]
            .to_string()
            .contains("main.sales.orders@"),
        "the rewrite's restore point is in status before it runs: {apply}"
    );
    let (_, message) = true_condition(&applying, "Reconciling").unwrap();
    assert!(message.contains(", running "), "{message}");
    let columns = kubectl_ok(&["get", "-n", &ns, "deltatable", "orders"]);
    assert!(
        columns.contains("APPLYING") && columns.contains("2/4 REPLACE TABLE"),
        "{columns}"
    );
    // the message is refreshed while the step runs
    let first_message = message;
    wait_until(
        "the running time to be refreshed",
        Duration::from_secs(25),
        || {
            let now = true_condition(&get(&ns, "deltatable", "orders"), "Reconciling")
                .map(|(_, m)| m)
                .unwrap_or_default();
            if now != first_message && now.starts_with("step 2/4") {
                Ok(())
            } else {
                Err(now)
            }
        },
    );
    // SIGTERM in the middle of the step: it ends cleanly, the status says Interrupted and where
    let status = op.terminate(Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "the operator ends on SIGTERM: {status:?}\n{}",
        op.log()
    );
    let obj = get(&ns, "deltatable", "orders");
    let (reason, message) = true_condition(&obj, "Reconciling")
        .unwrap_or_else(|| panic!("not Reconciling after SIGTERM: {}", obj["status"]));
    assert_eq!(reason, "Interrupted", "{message}");
    assert!(message.contains("2/4 REPLACE TABLE"), "{message}");
    let restore_points = obj["status"]["apply"]["restorePoints"].clone();
    assert!(
        restore_points.to_string().contains("main.sales.orders@"),
        "{}",
        obj["status"]
    );
    // a graceful hand-off is no death of the process: nothing counted toward CrashLoop
    assert!(
        obj["status"]["apply"]["interruptions"].is_null(),
        "{}",
        obj["status"]
    );
    // the next operator reports it, re-plans, resumes; even one allowed death in a row
    // does not stall it, as a SIGTERM never counts
    let dir = op.stop();
    let op = Operator::start_in(&ns, ALL, &["--max-step-interruptions", "1"], dir);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=90s",
    ]);
    let samples = sampler.samples();
    never_stalled(&samples);
    assert!(
        samples
            .iter()
            .any(|s| true_condition(s, "Reconciling").is_some_and(|(r, _)| r == "Applying")),
        "Applying was seen"
    );
    let done = get(&ns, "deltatable", "orders");
    assert!(
        done["status"]["apply"].is_null(),
        "status.apply goes once done: {}",
        done["status"]
    );
    let kept = done["status"]["lastApplied"]["restorePoints"].to_string();
    for p in restore_points.as_array().unwrap() {
        assert!(kept.contains(p.as_str().unwrap()), "{p} kept in {kept}");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lake = lake_of(&op);
    assert_eq!(
        rt.block_on(fingerprint(&lake)),
        before,
        "every row and value kept"
    );
    let live = rt.block_on(lake.read(&orders_ref())).unwrap();
    assert!(
        live.columns.iter().any(|c| c.name == "note"),
        "the change landed"
    );
}

#[test]
fn killed_mid_rewrite_the_next_operator_says_so_resumes_and_loses_no_row() {
    let ns = namespace("killed");
    let (dir, before) = ready_with_rows(&ns);
    // the process aborts inside the rewrite: files written, nothing committed
    let mut op = Operator::start_in_with_env(
        &ns,
        ALL,
        &[],
        dir,
        &[("DELTA_OPERATOR_FAILPOINT", "before-commit")],
    );
    apply_yaml(&ns, &orders_changed());
    wait_until(
        "the operator to abort mid-rewrite",
        Duration::from_secs(60),
        || {
            if op.log().contains("failpoint before-commit") {
                Ok(())
            } else {
                Err(op
                    .log()
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
        },
    );
    op.kill9();
    // what the dead operator left: Applying step 2/4, its restore point
    let left = get(&ns, "deltatable", "orders");
    assert_eq!(
        true_condition(&left, "Reconciling").map(|(r, _)| r),
        Some("Applying".to_string()),
        "{}",
        left["status"]
    );
    let restore_points: BTreeSet<String> = left["status"]["apply"]["restorePoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no restore points in {}", left["status"]))
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert!(!restore_points.is_empty());
    // a writer appends while no operator runs
    let rt = tokio::runtime::Runtime::new().unwrap();
    let outside = Lake {
        dir: tempfile::tempdir().unwrap(),
        backend: LakeBackend::open(op.lake.to_str().unwrap()).unwrap(),
    };
    rt.block_on(append_rows(&outside, 10_001, 500));
    let before_with_appended = rt.block_on(fingerprint(&outside));
    assert_ne!(before_with_appended, before);
    let sampler = Sampler::start(&ns, "deltatable", "orders", Duration::from_secs(1));
    let dir = op.stop();
    let op = Operator::start_in(&ns, ALL, &[], dir);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=90s",
    ]);
    never_stalled(&sampler.samples());
    let done = get(&ns, "deltatable", "orders");
    let kept = done["status"]["lastApplied"]["restorePoints"].to_string();
    for p in &restore_points {
        assert!(kept.contains(p.as_str()), "{p} kept in {kept}");
    }
    assert_eq!(
        rt.block_on(fingerprint(&lake_of(&op))),
        before_with_appended,
        "every row, the appended ones too"
    );
    // it said what it found (status, then this event), then resumed
    let said = events(&ns, "orders");
    assert!(
        said.lines().any(|l| l.starts_with("ApplyInterrupted: ")
            && l.contains("cut short at step 2/4")
            && l.contains("operator running it ended")),
        "{said}"
    );
    assert!(said.contains("ApplyResumed: "), "{said}");
}

/// The step of a change to orders kills the operator every time it runs (the
/// lake's `before-commit` failpoint: out of memory, in effect). Restarted each
/// time, as a kubelet would: after the third death in a row the next operator
/// stalls orders (CrashLoop, saying what to do) instead of resuming into a fourth,
/// while customers is reconciled as usual; no row is lost. Restarted without the
/// failpoint it stays stalled until asked to retry; asked, it applies.
#[test]
fn a_step_that_kills_the_operator_three_times_in_a_row_stalls_its_table_alone() {
    let ns = namespace("crashloop");
    let (mut dir, before) = ready_with_rows(&ns);
    let crashing = [("DELTA_OPERATOR_FAILPOINT", "before-commit")];
    let flag = ["--max-step-interruptions", "3"];
    apply_yaml(&ns, &orders_changed());
    let mut deaths = 0;
    let op = loop {
        assert!(deaths <= 3, "still resumed after {deaths} deaths in a row");
        let mut op = Operator::start_in_with_env(&ns, ALL, &flag, dir, &crashing);
        let mut stalled = false;
        wait_until(
            "the operator to die in the step or to stall orders",
            Duration::from_secs(90),
            || {
                if op.log().contains("failpoint before-commit") {
                    return Ok(());
                }
                let o = get(&ns, "deltatable", "orders");
                match true_condition(&o, "Stalled") {
                    Some((r, _)) if r == "CrashLoop" => {
                        stalled = true;
                        Ok(())
                    }
                    other => Err(format!("{other:?} in {}", o["status"])),
                }
            },
        );
        if stalled {
            break op;
        }
        deaths += 1;
        // the process aborted itself; reap it and start the next, as a kubelet would
        op.kill9();
        dir = op.stop();
    };
    assert_eq!(
        deaths, 3,
        "stalled after exactly --max-step-interruptions deaths"
    );
    let stalled = get(&ns, "deltatable", "orders");
    let (_, message) = true_condition(&stalled, "Stalled").unwrap();
    for said in [
        "REPLACE TABLE",
        "was cut short 3 times in a row by the operator process ending",
        "resources.limits.memory",
        "Spark Connect",
        "kubectl annotate deltatable orders reconcile.fluxcd.io/requestedAt=",
    ] {
        assert!(message.contains(said), "{said}: {message}");
    }
    assert_eq!(stalled["status"]["apply"]["interruptions"], 3);
    assert!(
        events(&ns, "orders")
            .lines()
            .any(|l| l.starts_with("CrashLoop: ") && l.contains("3 times in a row")),
        "{}",
        events(&ns, "orders")
    );
    // the other table goes on: a change to customers (no rewrite) is applied meanwhile
    let customers = std::fs::read_to_string(examples().join("customers.yaml"))
        .unwrap()
        .replace(
            "comment: One row per customer",
            "comment: One row per customer, kept",
        );
    apply_yaml(&ns, &customers);
    wait_until(
        "customers Ready with its change",
        Duration::from_secs(60),
        || {
            let c = get(&ns, "deltatable", "customers");
            let seen = c["status"]["observedGeneration"] == c["metadata"]["generation"];
            match true_condition(&c, "Ready") {
                Some(_) if seen => Ok(()),
                other => Err(format!("{other:?} in {}", c["status"])),
            }
        },
    );
    assert!(
        !op.log().contains("failpoint before-commit"),
        "the stalled step did not run again"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(
        rt.block_on(fingerprint(&lake_of(&op))),
        before,
        "no row lost"
    );
    // a restart (the failpoint gone, memory raised, say) alone does not retry it
    let dir = op.stop();
    let op = Operator::start_in(&ns, ALL, &flag, dir);
    std::thread::sleep(Duration::from_secs(6));
    let still = get(&ns, "deltatable", "orders");
    assert_eq!(
        true_condition(&still, "Stalled").map(|(r, _)| r),
        Some("CrashLoop".to_string()),
        "{}",
        still["status"]
    );
    // asked to retry, it resumes the step and applies
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltatable/orders",
        "reconcile.fluxcd.io/requestedAt=retry-1",
        "--overwrite",
    ]);
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=90s",
    ]);
    let done = get(&ns, "deltatable", "orders");
    assert!(done["status"]["apply"].is_null(), "{}", done["status"]);
    assert_eq!(
        rt.block_on(fingerprint(&lake_of(&op))),
        before,
        "every row and value kept"
    );
    let live = rt.block_on(lake_of(&op).read(&orders_ref())).unwrap();
    assert!(
        live.columns.iter().any(|c| c.name == "note"),
        "the change landed"
    );
}

#[test]
fn deleting_while_the_target_is_unavailable_keeps_the_finalizer_until_the_drop_can_run() {
    let ns = namespace("delete-unavailable");
    let op = Operator::start(&ns, ALL, &[]);
    kubectl_ok(&["apply", "-n", &ns, "-f", examples().to_str().unwrap()]);
    kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deltatable/orders",
        "--type=merge",
        "-p",
        "{\"spec\":{\"deletionPolicy\":\"Delete\"}}",
    ]);
    wait_until("Ready with the finalizer", Duration::from_secs(60), || {
        let o = get(&ns, "deltatable", "orders");
        let ready = condition(&o, "Ready").is_some_and(|(s, _)| s == "True");
        if ready
            && o["metadata"]["finalizers"]
                .to_string()
                .contains("delta-operator.io/drop-table")
        {
            Ok(())
        } else {
            Err(o.to_string())
        }
    });
    let dir = op.stop();
    // the same target name, now one that cannot be opened (a token the environment lacks)
    let broken = "targets:\n  lake:\n    databricks: {host: 'https://unused.invalid', warehouseId: w1, auth: {tokenEnv: DELTA_OPERATOR_E2E_UNSET_TOKEN}}\n    namespaces: ['*']\n    schemas: ['*']\n";
    let op = Operator::start_with_config(&ns, broken, &[], dir);
    kubectl_ok(&["delete", "-n", &ns, "deltatable/orders", "--wait=false"]);
    // (before the delete it said TargetUnavailable too; now it says what the deletion waits for)
    wait_until(
        "the deletion to wait for its target",
        Duration::from_secs(30),
        || {
            let o = get(&ns, "deltatable", "orders");
            match true_condition(&o, "Stalled") {
                Some((r, m))
                    if r == "TargetUnavailable"
                        && m.contains("deletionPolicy Delete")
                        && m.contains("restart the operator") =>
                {
                    Ok(())
                }
                _ => Err(format!("{}\n{}", o["status"], op.log())),
            }
        },
    );
    // it stays while the target cannot be reached: the table is not silently kept
    std::thread::sleep(Duration::from_secs(5));
    let still = get(&ns, "deltatable", "orders");
    assert!(
        still["metadata"]["finalizers"]
            .to_string()
            .contains("delta-operator.io/drop-table"),
        "the finalizer stays: {still}"
    );
    assert!(
        op.table_dir("orders").join("_delta_log").is_dir(),
        "not dropped"
    );
    // the target back: the drop waits for its approval, then runs, and the resource goes
    let dir = op.stop();
    let op = Operator::start_in(&ns, ALL, &[], dir);
    let obj = wait_condition(
        &ns,
        "deltatable",
        "orders",
        "Stalled",
        "True",
        Some("ApprovalRequired"),
    );
    let id = obj["status"]["plan"]["id"].as_str().unwrap().to_string();
    kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deltatable/orders",
        &format!("delta-operator.io/approve={id}"),
        "--overwrite",
    ]);
    wait_until("the resource to go", Duration::from_secs(60), || {
        let (ok, out, err) = kubectl(&["get", "-n", &ns, "deltatable", "orders"]);
        if !ok && err.contains("NotFound") {
            Ok(())
        } else {
            Err(format!("{out}{err}"))
        }
    });
    assert!(
        !op.table_dir("orders").join("_delta_log").exists(),
        "dropped"
    );
}

/// Two replicas; the leader is killed (-9) in the middle of an apply. The
/// standby takes the Lease once it expires, finds the apply cut short, says so,
/// resumes, and no row is lost; the status is never Stalled meanwhile.
#[test]
fn a_two_replica_failover_during_an_apply_resumes_it() {
    let ns = namespace("failover");
    let (dir, before) = ready_with_rows(&ns);
    let config = format!(
        "targets:\n  lake:\n    lake: {{root: {}}}\n{ALL}\n",
        dir.path().join("lake").display()
    );
    let holder = || {
        kubectl(&[
            "get",
            "lease",
            "delta-operator-leader",
            "-n",
            &ns,
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .1
    };
    let mut a = Operator::start_with_env(
        &ns,
        &config,
        &["--leader-elect", "--identity", "op-a"],
        tempfile::tempdir().unwrap(),
        &[
            ("DELTA_OPERATOR_FAILPOINT", "slow-step-2"),
            ("DELTA_OPERATOR_FAILPOINT_SECONDS", "60"),
        ],
    );
    wait_until("op-a to lead", Duration::from_secs(30), || {
        if holder() == "op-a" {
            Ok(())
        } else {
            Err(holder())
        }
    });
    let b = Operator::start_with_env(
        &ns,
        &config,
        &["--leader-elect", "--identity", "op-b"],
        tempfile::tempdir().unwrap(),
        &[],
    );
    apply_yaml(&ns, &orders_changed());
    wait_until("op-a to apply step 2/4", Duration::from_secs(60), || {
        let o = get(&ns, "deltatable", "orders");
        match true_condition(&o, "Reconciling") {
            Some((r, m)) if r == "Applying" && m.starts_with("step 2/4") => Ok(()),
            _ => Err(o["status"].to_string()),
        }
    });
    let sampler = Sampler::start(&ns, "deltatable", "orders", Duration::from_secs(1));
    a.kill9();
    wait_until("op-b to lead", Duration::from_secs(30), || {
        if holder() == "op-b" {
            Ok(())
        } else {
            Err(holder())
        }
    });
    kubectl_ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "deltatable/orders",
        "--timeout=90s",
    ]);
    let samples = sampler.samples();
    never_stalled(&samples);
    // op-b said what it found before resuming (the status said it for a moment; the events keep it)
    let said = events(&ns, "orders");
    assert!(
        said.lines()
            .any(|l| l.starts_with("ApplyInterrupted: ") && l.contains("cut short at step 2/4")),
        "{said}"
    );
    assert!(said.contains("ApplyResumed: "), "{said}");
    let done = get(&ns, "deltatable", "orders");
    assert!(done["status"]["apply"].is_null(), "{}", done["status"]);
    assert!(
        done["status"]["lastApplied"]["restorePoints"]
            .to_string()
            .contains("main.sales.orders@"),
        "{}",
        done["status"]
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lake = Lake {
        dir: tempfile::tempdir().unwrap(),
        backend: LakeBackend::open(dir.path().join("lake").to_str().unwrap()).unwrap(),
    };
    assert_eq!(
        rt.block_on(fingerprint(&lake)),
        before,
        "every row and value kept"
    );
    assert!(b.log().contains("leading"), "{}", b.log());
}
