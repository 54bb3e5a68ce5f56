//! The validating admission webhook: `kubectl apply` of a DeltaTable or
//! DeltaSchema runs the same load (CRD schema check), validation and lowering
//! as `delta-operator validate`, against the cached objects of its namespace,
//! and is refused with the same text `validate` prints (field path, message,
//! fix). Served over TLS by every replica (not only the leader), from a
//! certificate in `--webhook-cert-dir` (cert-manager's `tls.crt`/`tls.key`,
//! re-read when they change) or else a self-signed CA made at start whose
//! certificate is patched into the `ValidatingWebhookConfiguration` named by
//! `--webhook-config` (docs/architecture.md, "Admission").
//!
//! `admission` answers a request (one file per kind), `caches` holds what it
//! validates against, `certs` the serving certificate, `server` the HTTPS.

pub mod admission;
pub mod caches;
pub mod certs;
pub mod server;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use super::Error;
use super::metrics::Metrics;
pub use admission::{admit, answer, refusal};
pub use caches::Caches;
pub use certs::{CertError, Generated, self_signed};
use delta_operator_api::config::Config;

/// The path the webhook configuration points at.
pub const PATH: &str = "/validate";

/// Options of the webhook (`delta-operator run --webhook-addr …`).
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// Where the HTTPS server listens (`0.0.0.0:8443`; port 0 picks one, printed on stdout).
    pub addr: String,
    /// A folder with `tls.crt` and `tls.key` (and maybe `ca.crt`), as cert-manager's
    /// Secret mounts; without it (or without those files) a self-signed CA is made at start.
    pub cert_dir: Option<PathBuf>,
    /// The ValidatingWebhookConfiguration whose `caBundle`s this process keeps set.
    pub config: Option<String>,
    /// The names the generated certificate is for (DNS names or IP addresses).
    pub hosts: Vec<String>,
}

/// Starts the webhook: its caches, its certificate, its HTTPS server, and the
/// upkeep of the caBundle. Returns once it listens; `metrics.webhook_pending`
/// turns false (so /readyz may say 200) once it can answer from synced caches
/// with a CA the API server trusts.
pub async fn start(
    client: Client,
    opts: WebhookOptions,
    namespace: Option<String>,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
) -> Result<(), Error> {
    metrics.webhook_pending.store(true, Ordering::Relaxed);
    let caches = Caches::start(&client, namespace.as_deref(), config);
    let (resolver, ca_pem) = certs::certificates(&opts)?;
    let acceptor = certs::acceptor(resolver)?;
    let listener = tokio::net::TcpListener::bind(&opts.addr)
        .await
        .map_err(|source| Error::WebhookListen {
            addr: opts.addr.clone(),
            source,
        })?;
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(addr = %addr, "serving the admission webhook (HTTPS {PATH})");
    println!("webhook listening on {addr}");
    tokio::spawn(server::serve(listener, acceptor, Some(caches.clone())));
    tokio::spawn(async move {
        caches.ready().await;
        if let (Some(name), Some(ca)) = (&opts.config, &ca_pem) {
            keep_ca_bundle(&client, name, ca, &metrics).await;
        } else {
            metrics.webhook_pending.store(false, Ordering::Relaxed);
        }
    });
    Ok(())
}

/// Sets every webhook's `caBundle` in the configuration to `ca`, now and again
/// every minute (a chart upgrade may reset it). Until the first success, the
/// webhook stays unready: the API server cannot reach it without its CA.
async fn keep_ca_bundle(client: &Client, name: &str, ca: &str, metrics: &Metrics) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut logged = false;
    loop {
        match patch_ca_bundle(&api, name, ca).await {
            Ok(changed) => {
                if changed {
                    tracing::info!(config = %name, "patched the webhook CA into the ValidatingWebhookConfiguration");
                }
                metrics.webhook_pending.store(false, Ordering::Relaxed);
                logged = false;
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Err(e) => {
                if !logged {
                    tracing::warn!(config = %name, error = %e, "cannot set the webhook's caBundle yet; retrying");
                    logged = true;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

/// One pass: whether a caBundle had to change.
async fn patch_ca_bundle(
    api: &Api<ValidatingWebhookConfiguration>,
    name: &str,
    ca: &str,
) -> Result<bool, kube::Error> {
    let cfg = api.get(name).await?;
    let want = k8s_openapi::ByteString(ca.as_bytes().to_vec());
    let mut webhooks = cfg.webhooks.unwrap_or_default();
    let mut changed = false;
    for w in &mut webhooks {
        if w.client_config.ca_bundle.as_ref() != Some(&want) {
            w.client_config.ca_bundle = Some(want.clone());
            changed = true;
        }
    }
    if changed {
        // the whole list with the resourceVersion read: a concurrent change conflicts and is retried
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": cfg.metadata.resource_version},
            "webhooks": webhooks,
        });
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(changed)
}
