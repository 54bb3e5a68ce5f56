//! The operator's Lease fence on a real kube-apiserver + etcd (`e2e/with-controlplane.sh`):
//! before every step an apply reads the target's Lease back from the API server
//! (`LeaseFence::check`), because a paused process cannot trust its own memory. A fence
//! whose Lease names this operator and is unexpired passes; one whose Lease another
//! identity took, or whose renewal time is past its duration (the process stalled), refuses,
//! even while this process's own flag still says it holds the Lease.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;

use delta_operator::controller::Locks;
use delta_operator::controller::metrics::InFlight;
use support::e2e::*;

const NS: &str = "default";

async fn client() -> kube::Client {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let kubeconfig = kube::config::Kubeconfig::read_from(e2e_dir().join("kubeconfig")).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A MicroTime `secs_ago` seconds before now, as the API server writes `renewTime`.
fn micro_time(secs_ago: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::seconds(secs_ago))
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// Overwrites the Lease's holder and renewal time, as another operator taking it (or a
/// renewal that never came) leaves it.
fn set_lease(name: &str, holder: &str, renewed_secs_ago: i64) {
    let patch = serde_json::json!({"spec": {
        "holderIdentity": holder,
        "renewTime": micro_time(renewed_secs_ago),
    }})
    .to_string();
    kubectl_ok(&[
        "patch", "lease", name, "-n", NS, "--type", "merge", "-p", &patch,
    ]);
}

fn holder(name: &str) -> String {
    kubectl_ok(&[
        "get",
        "lease",
        name,
        "-n",
        NS,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_fence_passes_while_held_and_refuses_once_taken_or_expired() {
    // a long Lease: this process's renewal does not come within the test, so its own
    // flag still says "held" when the fence is asked, and only the read-back can tell
    let locks = Locks::new(
        client().await,
        NS,
        "operator-a",
        120,
        Arc::new(InFlight::default()),
    );

    // taken by another identity
    let target = format!("fence-taken-{}", std::process::id());
    let lease = Locks::lease_name(&target);
    let held = locks
        .acquire(&target, 1, &BTreeSet::new())
        .await
        .expect("the Lease is free");
    assert_eq!(holder(&lease), "operator-a");
    let fence = held.fence();
    fence.check().await.expect("the holder's fence passes");
    assert!(held.is_held());
    set_lease(&lease, "operator-b", 0);
    let e = fence
        .check()
        .await
        .expect_err("a Lease another identity holds refuses the step");
    assert!(
        e.contains("lost the target's Lease") && e.contains("operator-b"),
        "names the Lease lost and who holds it: {e}"
    );
    // and it stays refused, whatever the Lease says after
    set_lease(&lease, "operator-a", 0);
    assert!(
        fence.check().await.is_err(),
        "a lost fence is not found again"
    );
    held.release().await;

    // expired: still naming this operator, but renewed longer ago than its duration
    let target = format!("fence-expired-{}", std::process::id());
    let lease = Locks::lease_name(&target);
    let held = locks
        .acquire(&target, 1, &BTreeSet::new())
        .await
        .expect("the Lease is free");
    let fence = held.fence();
    fence.check().await.expect("the holder's fence passes");
    set_lease(&lease, "operator-a", 600);
    let e = fence
        .check()
        .await
        .expect_err("an expired Lease refuses the step");
    assert!(e.contains("expired"), "{e}");
    held.release().await;
}
