//! The validating admission webhook: `kubectl apply` of a DeltaTable or
//! DeltaSchema runs the same load (CRD schema check), validation and lowering
//! as `delta-operator validate`, against the cached objects of its namespace,
//! and is refused with the same text `validate` prints (field path, message,
//! fix). Served over TLS by every replica (not only the leader), from a
//! certificate in `--webhook-cert-dir` (cert-manager's `tls.crt`/`tls.key`,
//! re-read when they change) or else a self-signed CA made at start whose
//! certificate is patched into the `ValidatingWebhookConfiguration` named by
//! `--webhook-config` (docs/architecture.md, "Admission").

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Error;
use super::metrics::Metrics;
use delta_operator_api::spec::SpecError;
use delta_operator_api::spec::load::{DEFAULT_NAMESPACE, Loaded, Manifests, load_value};
use delta_operator_api::spec::lower::{lower_table, qualified_reference, schema_of, table_ref_of};
use delta_operator_api::spec::names::comparison_key;
use delta_operator_api::spec::validate::{NOT_IN_MANIFESTS, names_a_missing_resource, validate};
use delta_operator_api::spec::{DeltaSchema, DeltaTable};

/// The path the webhook configuration points at.
pub const PATH: &str = "/validate";
/// What labels the errors of an admission request (never printed: an object has no file).
const FILE: &str = "admission";
/// At most this many errors in one refusal (the rest: `delta-operator validate`).
const MAX_ERRORS: usize = 20;
/// The largest request body read: an AdmissionReview holds the object and the old object
/// (the API server refuses objects over about 1.5 MiB each).
const MAX_BODY: usize = 8 * 1024 * 1024;

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

/// The answer to one admission request. `cached` holds the namespace's objects
/// as the operator sees them; the incoming object replaces its cached version.
pub fn admit(req: &AdmissionRequest<DynamicObject>, cached: &Manifests) -> AdmissionResponse {
    let allowed = AdmissionResponse::from(req);
    if !matches!(req.operation, Operation::Create | Operation::Update) || req.sub_resource.is_some()
    {
        return allowed;
    }
    let Some(obj) = &req.object else {
        return allowed;
    };
    // a resource on its way out must always lose its finalizer, and an update that
    // leaves the spec alone (an approval, a finalizer, a label) changes nothing validated
    if obj.metadata.deletion_timestamp.is_some()
        || req
            .old_object
            .as_ref()
            .is_some_and(|old| old.data.get("spec") == obj.data.get("spec"))
    {
        return allowed;
    }
    let mut doc = match serde_json::to_value(obj) {
        Ok(d) => d,
        Err(e) => return allowed.deny(format!("the object does not serialize: {e}")),
    };
    let ns = req
        .namespace
        .clone()
        .or_else(|| obj.namespace())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    if let Some(meta) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), Value::String(ns.clone()));
    }
    match check(doc, &ns, cached) {
        Ok(warnings) if warnings.is_empty() => allowed,
        Ok(warnings) => {
            let mut r = allowed;
            r.warnings = Some(warnings);
            r
        }
        Err(errors) => allowed.deny(refusal(&errors)),
    }
}

/// The text of a refusal: each error as `validate` prints it after the file name.
pub fn refusal(errors: &[SpecError]) -> String {
    let mut lines: Vec<String> = errors
        .iter()
        .take(MAX_ERRORS)
        .map(SpecError::located)
        .collect();
    if errors.len() > MAX_ERRORS {
        lines.push(format!(
            "... and {} more errors: run `delta-operator validate -f FILE` for all of them",
            errors.len() - MAX_ERRORS
        ));
    }
    lines.join("\n")
}

/// Loads `doc` as `validate` loads a document, then validates and lowers it with
/// the namespace's cached objects. Errors of other resources are not this
/// request's; that another resource is missing (a schema applied after its
/// table) is a warning, as the operator only waits for it.
fn check(doc: Value, ns: &str, cached: &Manifests) -> Result<Vec<String>, Vec<SpecError>> {
    let mut incoming = Manifests::default();
    let mut errors = Vec::new();
    load_value(FILE, doc, &mut incoming, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let in_ns = |n: String| n == ns;
    let mut m = Manifests::default();
    let label;
    if let Some(s) = incoming.schemas.pop() {
        label = s.label();
        m.schemas = cached
            .schemas
            .iter()
            .filter(|c| in_ns(c.namespace()) && c.name() != s.name())
            .cloned()
            .collect();
        m.schemas.push(s);
    } else if let Some(t) = incoming.tables.pop() {
        label = t.label();
        m.schemas = cached
            .schemas
            .iter()
            .filter(|c| in_ns(c.namespace()))
            .cloned()
            .collect();
        // the incoming table last: a table another resource already declares is its error
        let others: Vec<&Loaded<DeltaTable>> = cached
            .tables
            .iter()
            .filter(|c| in_ns(c.namespace()) && c.name() != t.name())
            .collect();
        m.tables = related_tables(&m, &t, &others);
        m.tables.push(t);
    } else {
        return Ok(vec![]); // not ours (the webhook configuration names only our kinds)
    }
    let (missing, errors): (Vec<SpecError>, Vec<SpecError>) = validate(&m)
        .into_iter()
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .partition(names_a_missing_resource);
    if !errors.is_empty() {
        return Err(errors);
    }
    if let Some(t) = m.tables.last()
        && schema_of(&m, t).is_some()
    {
        lower_table(&m, t)?;
    }
    Ok(missing
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e.path,
                e.message
                    .replace(NOT_IN_MANIFESTS, &format!("in namespace {ns} yet"))
            )
        })
        .collect())
}

/// The cached tables a table's errors can depend on, in cache order: those declaring
/// the same table (the newcomer's duplicate) and its foreign-key ancestors (their
/// columns, a cycle through them). No other table can change this table's errors, and
/// validating every table of the namespace made one admission cost O(tables there):
/// applying thousands of tables, O(N²). `m` holds the namespace's schemas.
fn related_tables(
    m: &Manifests,
    t: &Loaded<DeltaTable>,
    others: &[&Loaded<DeltaTable>],
) -> Vec<Loaded<DeltaTable>> {
    let Some(own) = table_ref_of(m, t) else {
        return Vec::new(); // its schema is missing: it names no table, so nothing relates
    };
    let mut by_ref: std::collections::BTreeMap<_, Vec<usize>> = std::collections::BTreeMap::new();
    let mut keep = std::collections::BTreeSet::new();
    // tables of its schema whose names are one to a reader (`spec::names`): validate refuses the pair
    let key = comparison_key(&own.table);
    for (i, c) in others.iter().enumerate() {
        if let Some(r) = table_ref_of(m, c) {
            if r.catalog == own.catalog
                && r.schema == own.schema
                && r.table != own.table
                && comparison_key(&r.table) == key
            {
                keep.insert(i);
            }
            by_ref.entry(r).or_default().push(i);
        }
    }
    let mut visited = std::collections::BTreeSet::new();
    let mut queue = vec![(own, t)];
    while let Some((from, table)) = queue.pop() {
        if !visited.insert(from.clone()) {
            continue;
        }
        keep.extend(by_ref.get(&from).into_iter().flatten().copied());
        for c in &table.resource.spec.constraints {
            let Some(to) = c
                .foreign_key
                .as_ref()
                .and_then(|fk| qualified_reference(&from, &fk.references))
            else {
                continue;
            };
            // validate follows the last declaration of a table; the others are kept as duplicates
            if let Some(&last) = by_ref.get(&to).and_then(|v| v.last()) {
                queue.push((to, others[last]));
            }
        }
    }
    keep.into_iter().map(|i| others[i].clone()).collect()
}

/// The cached objects the webhook validates against: its own watches, run by
/// every replica (a standby has no controllers, but answers admission too).
#[derive(Clone)]
pub struct Caches {
    pub tables: Store<DeltaTable>,
    pub schemas: Store<DeltaSchema>,
}

impl Caches {
    pub fn start(client: &Client, namespace: Option<&str>) -> Self {
        fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
        where
            K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
        {
            match ns {
                Some(ns) => Api::namespaced(client.clone(), ns),
                None => Api::all(client.clone()),
            }
        }
        let (tables, tw) = reflector::store();
        let (schemas, sw) = reflector::store();
        let wc = watcher::Config::default();
        tokio::spawn(
            watcher(api::<DeltaTable>(client, namespace), wc.clone())
                .default_backoff()
                .modify(|t: &mut DeltaTable| {
                    crate::strip_managed_fields(t);
                    t.status = None; // validation reads specs only
                })
                .reflect(tw)
                .for_each(|_| futures::future::ready(())),
        );
        tokio::spawn(
            watcher(api::<DeltaSchema>(client, namespace), wc)
                .default_backoff()
                .modify(|s: &mut DeltaSchema| {
                    crate::strip_managed_fields(s);
                    s.status = None;
                })
                .reflect(sw)
                .for_each(|_| futures::future::ready(())),
        );
        Caches { tables, schemas }
    }

    async fn ready(&self) {
        let _ = self.tables.wait_until_ready().await;
        let _ = self.schemas.wait_until_ready().await;
    }

    fn manifests(&self, ns: &str) -> Manifests {
        let loaded = |file: &str| file.to_string();
        Manifests {
            schemas: self
                .schemas
                .state()
                .iter()
                .filter(|s| s.namespace().as_deref().unwrap_or(DEFAULT_NAMESPACE) == ns)
                .map(|s| Loaded {
                    file: loaded("cluster"),
                    resource: s.as_ref().clone(),
                })
                .collect(),
            tables: self
                .tables
                .state()
                .iter()
                .filter(|t| t.namespace().as_deref().unwrap_or(DEFAULT_NAMESPACE) == ns)
                .map(|t| Loaded {
                    file: loaded("cluster"),
                    resource: t.as_ref().clone(),
                })
                .collect(),
        }
    }
}

/// The response body for one request body (an AdmissionReview).
pub fn answer(body: &[u8], caches: Option<&Caches>) -> Vec<u8> {
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => {
            return review_bytes(
                AdmissionResponse::invalid(format!("not an AdmissionReview: {e}")).into_review(),
            );
        }
    };
    let req: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(r) => r,
        Err(_) => {
            return review_bytes(
                AdmissionResponse::invalid("the AdmissionReview has no request").into_review(),
            );
        }
    };
    let ns = req
        .namespace
        .clone()
        .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    let cached = caches.map(|c| c.manifests(&ns)).unwrap_or_default();
    let resp = admit(&req, &cached);
    if !resp.allowed {
        tracing::info!(kind = %req.kind.kind, namespace = %ns, name = %req.name, "admission refused");
    }
    review_bytes(resp.into_review())
}

fn review_bytes(review: AdmissionReview<DynamicObject>) -> Vec<u8> {
    serde_json::to_vec(&review).unwrap_or_else(|_| b"{}".to_vec())
}

/// Starts the webhook: its caches, its certificate, its HTTPS server, and the
/// upkeep of the caBundle. Returns once it listens; `metrics.webhook_pending`
/// turns false (so /readyz may say 200) once it can answer from synced caches
/// with a CA the API server trusts.
pub async fn start(
    client: Client,
    opts: WebhookOptions,
    namespace: Option<String>,
    metrics: Arc<Metrics>,
) -> Result<(), Error> {
    metrics.webhook_pending.store(true, Ordering::Relaxed);
    let caches = Caches::start(&client, namespace.as_deref());
    let (resolver, ca_pem) = certificates(&opts)?;
    let acceptor = acceptor(resolver)?;
    let listener = tokio::net::TcpListener::bind(&opts.addr)
        .await
        .map_err(|e| Error::Other(format!("webhook: listen on {}: {e}", opts.addr)))?;
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(addr = %addr, "serving the admission webhook (HTTPS {PATH})");
    println!("webhook listening on {addr}");
    tokio::spawn(serve(listener, acceptor, Some(caches.clone())));
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

/// TLS 1.2/1.3 (aws-lc-rs), HTTP/1.1, the certificate from `resolver`.
fn acceptor(resolver: Arc<dyn ResolvesServerCert>) -> Result<tokio_rustls::TlsAcceptor, Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Other(format!("webhook TLS: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(tls)))
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

/// The server certificate source, and the CA to patch into the configuration (if any).
fn certificates(
    opts: &WebhookOptions,
) -> Result<(Arc<dyn ResolvesServerCert>, Option<String>), Error> {
    if let Some(dir) = &opts.cert_dir
        && dir.join("tls.crt").exists()
        && dir.join("tls.key").exists()
    {
        let files = FileCert::load(dir)?;
        let ca = std::fs::read_to_string(dir.join("ca.crt")).ok();
        tracing::info!(dir = %dir.display(), "webhook certificate from files");
        return Ok((Arc::new(files), ca));
    }
    let g = self_signed(&opts.hosts)?;
    let key = certified(
        g.chain.as_bytes(),
        g.key.as_bytes(),
        "the generated certificate",
    )
    .map_err(Error::Other)?;
    tracing::info!(hosts = ?opts.hosts, "webhook certificate from a self-signed CA made at start");
    Ok((Arc::new(Fixed(Arc::new(key))), Some(g.ca)))
}

/// A generated CA and the serving certificate it signed, PEM. Not `Debug`: it
/// holds a private key, which never leaves the process.
pub struct Generated {
    /// The CA certificate: what the caBundle holds.
    pub ca: String,
    /// The serving certificate, then the CA's.
    pub chain: String,
    pub key: String,
}

/// A CA made now, and a serving certificate it signs for `hosts` (DNS names or
/// IP addresses). The CA's key is dropped here: nothing else is ever signed.
pub fn self_signed(hosts: &[String]) -> Result<Generated, Error> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let e = |e: rcgen::Error| Error::Other(format!("webhook certificate: {e}"));
    let ca_key = KeyPair::generate().map_err(e)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "delta-operator webhook CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().map_err(e)?;
    let mut leaf = CertificateParams::new(hosts.to_vec()).map_err(e)?;
    leaf.distinguished_name
        .push(DnType::CommonName, "delta-operator webhook");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(e)?;
    Ok(Generated {
        ca: ca_cert.pem(),
        chain: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        key: leaf_key.serialize_pem(),
    })
}

/// A certificate chain and its key, from PEM. An error names the file
/// (`what`), never the key's text.
fn certified(chain: &[u8], key: &[u8], what: &str) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what}: tls.crt: {e}"))?;
    if chain.is_empty() {
        return Err(format!("{what}: tls.crt: no certificate in it"));
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|_| format!("{what}: tls.key: not a PEM private key"))?;
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    CertifiedKey::from_der(chain, key, &provider).map_err(|e| format!("{what}: {e}"))
}

#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// `tls.crt` and `tls.key` of a folder, read again when `tls.crt` changes
/// (cert-manager renews the Secret; the kubelet updates the mounted files).
#[derive(Debug)]
struct FileCert {
    dir: PathBuf,
    current: Mutex<(Option<SystemTime>, Arc<CertifiedKey>)>,
}

impl FileCert {
    fn load(dir: &Path) -> Result<Self, Error> {
        let (mtime, key) = read_cert(dir)?;
        Ok(FileCert {
            dir: dir.to_path_buf(),
            current: Mutex::new((mtime, Arc::new(key))),
        })
    }
}

fn read_cert(dir: &Path) -> Result<(Option<SystemTime>, CertifiedKey), Error> {
    let crt_path = dir.join("tls.crt");
    let what = format!("webhook certificate in {}", dir.display());
    let mtime = std::fs::metadata(&crt_path).and_then(|m| m.modified()).ok();
    let crt =
        std::fs::read(&crt_path).map_err(|e| Error::Other(format!("{what}: tls.crt: {e}")))?;
    let key = std::fs::read(dir.join("tls.key"))
        .map_err(|e| Error::Other(format!("{what}: tls.key: {e}")))?;
    let certified = certified(&crt, &key, &what).map_err(Error::Other)?;
    Ok((mtime, certified))
}

impl FileCert {
    /// The certificate now: read again when `tls.crt` changed since it was last read.
    fn current(&self) -> Arc<CertifiedKey> {
        let mut cur = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let mtime = std::fs::metadata(self.dir.join("tls.crt"))
            .and_then(|m| m.modified())
            .ok();
        if mtime != cur.0 {
            match read_cert(&self.dir) {
                Ok((m, key)) => {
                    tracing::info!(dir = %self.dir.display(), "webhook certificate reloaded");
                    *cur = (m, Arc::new(key));
                }
                // half-written during a renewal: keep the old one, try again next handshake
                Err(e) => tracing::warn!(error = %e, "webhook certificate not reloaded"),
            }
        }
        cur.1.clone()
    }
}

impl ResolvesServerCert for FileCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    caches: Option<Caches>,
) {
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let acceptor = acceptor.clone();
        let caches = caches.clone();
        tokio::spawn(async move {
            let handshake =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(sock)).await;
            let Ok(Ok(mut tls)) = handshake else {
                return;
            };
            let _ = handle(&mut tls, caches.as_ref()).await;
            let _ = tls.shutdown().await;
        });
    }
}

/// One HTTP/1.1 request on `io`: POST /validate with an AdmissionReview.
pub async fn handle<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    caches: Option<&Caches>,
) -> std::io::Result<()> {
    let Some((head, body)) = tokio::time::timeout(Duration::from_secs(10), read_request(io))
        .await
        .ok()
        .flatten()
    else {
        return respond(io, "400 Bad Request", "text/plain", b"bad request\n").await;
    };
    let mut parts = head.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    if path != PATH {
        return respond(io, "404 Not Found", "text/plain", b"not found\n").await;
    }
    if method != "POST" {
        return respond(
            io,
            "405 Method Not Allowed",
            "text/plain",
            b"POST an AdmissionReview\n",
        )
        .await;
    }
    let out = answer(&body, caches);
    respond(io, "200 OK", "application/json", &out).await
}

async fn respond<S: AsyncWrite + Unpin>(
    io: &mut S,
    code: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {code}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    io.write_all(head.as_bytes()).await?;
    io.write_all(body).await?;
    io.flush().await
}

/// The request head (as text) and its body (by Content-Length), or None when
/// it is malformed, too large or cut short.
async fn read_request<S: AsyncRead + Unpin>(io: &mut S) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length: usize = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return None;
    }
    let mut body = buf.split_off(end + 4);
    while body.len() < length {
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some((head, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{"apiVersion":"delta-operator.io/v1alpha1","kind":"DeltaSchema",
        "metadata":{"name":"sales","namespace":"shop"},"spec":{"catalog":"main"}}"#;

    fn table(column_type: &str) -> Value {
        serde_json::json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
            "metadata": {"name": "orders", "namespace": "shop"},
            "spec": {"schemaRef": "sales", "columns": [
                {"name": "order_id", "type": "bigint"},
                {"name": "amount", "type": column_type},
            ]}
        })
    }

    fn review(uid: &str, op: &str, object: Value, old: Option<Value>) -> Vec<u8> {
        let kind = object["kind"].as_str().unwrap().to_string();
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "kind": {"group": "delta-operator.io", "version": "v1alpha1", "kind": kind},
                "resource": {"group": "delta-operator.io", "version": "v1alpha1", "resource": "deltatables"},
                "name": object["metadata"]["name"], "namespace": "shop", "operation": op,
                "userInfo": {"username": "someone"},
                "object": object, "oldObject": old,
            }
        }))
        .unwrap()
    }

    fn cached_schema() -> Manifests {
        let mut m = Manifests::default();
        let mut errors = vec![];
        load_value(
            "cluster",
            serde_json::from_str(SCHEMA).unwrap(),
            &mut m,
            &mut errors,
        );
        assert!(errors.is_empty(), "{errors:?}");
        m
    }

    fn response(body: &[u8], cached: &Manifests) -> Value {
        let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body).unwrap();
        let req: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
        let out = serde_json::to_value(admit(&req, cached).into_review()).unwrap();
        out["response"].clone()
    }

    #[test]
    fn a_good_table_is_allowed_and_the_uid_echoed() {
        let r = response(
            &review("u-1", "CREATE", table("int"), None),
            &cached_schema(),
        );
        assert_eq!(r["uid"], "u-1");
        assert_eq!(r["allowed"], true, "{r}");
    }

    #[test]
    fn a_typo_is_denied_with_the_text_validate_prints() {
        let r = response(
            &review("u-2", "CREATE", table("strin"), None),
            &cached_schema(),
        );
        assert_eq!(r["uid"], "u-2");
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        // the same error through the CLI's loader, printed as `validate` prints it
        let text = serde_saphyr::to_string(&table("strin")).unwrap();
        let mut m = cached_schema();
        let mut errors = vec![];
        delta_operator_api::spec::load::load_str("orders.yaml", &text, &mut m, &mut errors);
        errors.extend(validate(&m));
        let printed = errors[0].to_string();
        assert!(printed.starts_with("orders.yaml: "), "{printed}");
        assert_eq!(msg, printed.trim_start_matches("orders.yaml: "), "{r}");
        assert!(
            msg.contains("spec.columns[1].type") && msg.contains("fix:"),
            "{msg}"
        );
    }

    #[test]
    fn a_table_before_its_schema_is_allowed_with_a_warning() {
        let r = response(
            &review("u-3", "CREATE", table("int"), None),
            &Manifests::default(),
        );
        assert_eq!(r["allowed"], true, "{r}");
        let w = r["warnings"][0].as_str().unwrap();
        assert!(
            w.contains("spec.schemaRef") && w.contains("in namespace shop yet"),
            "{w}"
        );
    }

    #[test]
    fn an_update_that_leaves_a_bad_spec_alone_is_allowed() {
        let bad = table("strin");
        let mut approved = bad.clone();
        approved["metadata"]["annotations"] = serde_json::json!({"delta-operator.io/approve": "x"});
        let r = response(
            &review("u-4", "UPDATE", approved, Some(bad)),
            &cached_schema(),
        );
        assert_eq!(r["allowed"], true, "{r}");
    }

    /// A DeltaTable in shop/sales named `name` (declaring `table`), columns id and
    /// ref_id, with a foreign key (ref_id) -> `refs`(`col`) for each of `fks`.
    fn fk_table(name: &str, table: &str, fks: &[(&str, &str)]) -> Value {
        // every table keyed by id: a foreign key references its parent's primary key
        let key = serde_json::json!({"primaryKey": {"columns": ["id"]}});
        let constraints: Vec<Value> = std::iter::once(key)
            .chain(fks.iter().map(|(refs, col)| {
                serde_json::json!({"foreignKey": {"columns": ["ref_id"], "references": refs,
                    "referencedColumns": [col]}})
            }))
            .collect();
        serde_json::json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"schemaRef": "sales", "name": table, "columns": [
                {"name": "id", "type": "bigint", "nullable": false}, {"name": "ref_id", "type": "bigint"},
            ], "constraints": constraints}
        })
    }

    /// The schema and `tables` cached, after 300 unrelated tables.
    fn cached_with(tables: &[Value]) -> Manifests {
        let mut m = cached_schema();
        let mut errors = vec![];
        let filler =
            (0..300).map(|i| fk_table(&format!("filler-{i}"), &format!("filler_{i}"), &[]));
        for t in filler.chain(tables.iter().cloned()) {
            load_value("cluster", t, &mut m, &mut errors);
        }
        assert!(errors.is_empty(), "{errors:?}");
        m
    }

    fn refusal_of(object: Value, cached: &Manifests) -> Option<String> {
        let r = response(&review("u-fk", "CREATE", object, None), cached);
        (r["allowed"] == false).then(|| r["status"]["message"].as_str().unwrap().to_string())
    }

    // Only a table's duplicates and foreign-key ancestors are validated with it (not the
    // whole namespace): what they can refuse must still be refused.
    #[test]
    fn duplicates_and_foreign_key_ancestors_among_many_cached_tables_still_count() {
        let cached = cached_with(&[
            fk_table("orders-copy", "orders", &[]),
            fk_table("parent", "parent", &[]),
            fk_table("b", "b", &[("c", "id")]),
            fk_table("c", "c", &[("a", "id")]),
        ]);
        let dup = refusal_of(fk_table("orders", "orders", &[]), &cached).expect("a duplicate");
        assert!(
            dup.contains("also declared by DeltaTable shop/orders-copy"),
            "{dup}"
        );

        assert_eq!(
            refusal_of(fk_table("child", "child", &[("parent", "id")]), &cached),
            None
        );
        let col = refusal_of(fk_table("child", "child", &[("parent", "nope")]), &cached)
            .expect("a missing referenced column");
        assert!(
            col.contains("referencedColumns[0]: 'nope' is not a column of main.sales.parent"),
            "{col}"
        );

        // a -> b -> c -> a: the cycle runs through a grandparent
        let cycle = refusal_of(fk_table("a", "a", &[("b", "id")]), &cached).expect("a cycle");
        assert!(
            cycle.contains(
                "foreign keys form a cycle: main.sales.a -> main.sales.b -> main.sales.c"
            ),
            "{cycle}"
        );
        // without the edge back, no cycle
        assert_eq!(
            refusal_of(fk_table("x", "x", &[("b", "id")]), &cached),
            None
        );
    }

    // A table whose name is another's of its schema to a reader (Cyrillic о for Latin o)
    // is refused at admission as validate refuses it, though they are not duplicates.
    #[test]
    fn a_lookalike_of_a_cached_table_name_is_denied_naming_both() {
        let cached = cached_with(&[fk_table("orders", "orders", &[])]);
        let why =
            refusal_of(fk_table("orders-2", "\u{43e}rders", &[]), &cached).expect("a lookalike");
        assert!(
            why.contains("and table 'orders'") && why.contains("look the same"),
            "{why}"
        );
        assert_eq!(
            refusal_of(fk_table("orders-3", "orders_3", &[]), &cached),
            None
        );
    }

    #[test]
    fn a_schema_error_is_denied() {
        let mut s: Value = serde_json::from_str(SCHEMA).unwrap();
        s["spec"]["catalog"] = "no such catalog!".into();
        let r = response(&review("u-5", "CREATE", s, None), &Manifests::default());
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("DeltaSchema shop/sales: spec.catalog: "),
            "{msg}"
        );
    }

    #[test]
    fn garbage_gets_an_invalid_answer_not_a_panic() {
        for body in [&b""[..], b"{", b"{\"request\": 1}", b"null", b"[]"] {
            let out: Value = serde_json::from_slice(&answer(body, None)).unwrap();
            assert_eq!(out["response"]["allowed"], false, "{out}");
        }
    }

    #[tokio::test]
    async fn http_request_in_pieces_is_answered() {
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let body = review("u-6", "CREATE", table("int"), None);
        let task = tokio::spawn(async move { handle(&mut server, None).await });
        let head = format!(
            "POST /validate?timeout=10s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        client.write_all(head.as_bytes()).await.unwrap();
        client.write_all(&body[..10]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.write_all(&body[10..]).await.unwrap();
        let mut out = Vec::new();
        client.read_to_end(&mut out).await.unwrap();
        task.await.unwrap().unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        let json: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(json["response"]["uid"], "u-6");
        // without a schema cached: allowed, with the warning
        assert_eq!(json["response"]["allowed"], true, "{json}");
    }

    /// POST of a review over TLS to `port`, trusting only `ca`: the uid answered, or the error.
    async fn over_tls(port: u16, ca: &str) -> Result<String, String> {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())?;
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let body = review("u-tls", "CREATE", table("int"), None);
        let head = format!(
            "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes()).await.unwrap();
        tls.write_all(&body).await.unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        let text = String::from_utf8_lossy(&out).into_owned();
        let json: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap_or(""))
            .map_err(|e| format!("{e}: {text}"))?;
        Ok(json["response"]["uid"].as_str().unwrap_or("").to_string())
    }

    fn write_cert(dir: &Path, g: &Generated) {
        std::fs::write(dir.join("tls.key"), &g.key).unwrap();
        std::fs::write(dir.join("ca.crt"), &g.ca).unwrap();
        std::fs::write(dir.join("tls.crt"), &g.chain).unwrap();
    }

    /// A later modification time than any write before (however coarse the file system's clock).
    fn touch_later(file: &Path, seconds: u64) {
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(SystemTime::now() + Duration::from_secs(seconds))
            .unwrap();
    }

    /// cert-manager's Secret, mounted: served from the files, its ca.crt is what the
    /// caBundle gets, and a renewal is served from the next handshake on.
    #[tokio::test]
    async fn a_cert_dir_is_served_and_read_again_when_renewed() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["127.0.0.1".to_string()];
        let first = self_signed(&hosts).unwrap();
        write_cert(dir.path(), &first);
        let opts = WebhookOptions {
            addr: "127.0.0.1:0".into(),
            cert_dir: Some(dir.path().to_path_buf()),
            config: None,
            hosts: vec![],
        };
        let (resolver, ca) = certificates(&opts).unwrap();
        assert_eq!(ca.as_deref(), Some(first.ca.as_str()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(serve(listener, acceptor(resolver).unwrap(), None));
        assert_eq!(over_tls(port, &first.ca).await.unwrap(), "u-tls");
        // renewed under a new CA: the old CA no longer verifies it, the new one does
        let second = self_signed(&hosts).unwrap();
        write_cert(dir.path(), &second);
        touch_later(&dir.path().join("tls.crt"), 10);
        assert_eq!(over_tls(port, &second.ca).await.unwrap(), "u-tls");
        assert!(over_tls(port, &first.ca).await.is_err());
        // a half-written renewal keeps the last good certificate
        std::fs::write(dir.path().join("tls.crt"), "-----BEGIN CERTIFICATE-----\n").unwrap();
        touch_later(&dir.path().join("tls.crt"), 20);
        assert_eq!(over_tls(port, &second.ca).await.unwrap(), "u-tls");
    }

    #[test]
    fn a_bad_key_file_is_named_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let g = self_signed(&["localhost".into()]).unwrap();
        write_cert(dir.path(), &g);
        let secret =
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n";
        std::fs::write(dir.path().join("tls.key"), secret).unwrap();
        let err = match FileCert::load(dir.path()) {
            Ok(_) => panic!("a key that is not the certificate's was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains("tls.key") || err.contains("webhook certificate"),
            "{err}"
        );
        assert!(!err.contains("c2VjcmV0"), "{err}");
    }

    #[test]
    fn the_self_signed_certificate_is_a_chain_to_its_ca() {
        let g = self_signed(&["127.0.0.1".into(), "svc.ns.svc".into()]).unwrap();
        assert!(g.ca.starts_with("-----BEGIN CERTIFICATE-----"), "{}", g.ca);
        assert!(!g.ca.contains("PRIVATE"));
        let key = certified(g.chain.as_bytes(), g.key.as_bytes(), "test").unwrap();
        assert_eq!(key.cert.len(), 2);
    }
}
