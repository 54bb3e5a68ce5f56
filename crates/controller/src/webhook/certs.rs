//! The webhook's serving certificate: from `--webhook-cert-dir` (cert-manager's
//! `tls.crt`/`tls.key`, read again when they change), or else from a CA made at
//! start, whose certificate the caller keeps in the webhook configuration.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::WebhookOptions;

/// Why there is no certificate to serve. Never quotes a key's text.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("webhook certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{what}: {file}: {source}")]
    Read {
        what: String,
        file: &'static str,
        source: std::io::Error,
    },
    #[error("{what}: tls.crt: {source}")]
    Chain {
        what: String,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{what}: tls.crt: no certificate in it")]
    NoCertificate { what: String },
    #[error("{what}: tls.key: not a PEM private key")]
    Key { what: String },
    /// The key is not the certificate's, or rustls cannot use it.
    #[error("{what}: {source}")]
    Unusable { what: String, source: rustls::Error },
    #[error("webhook TLS: {0}")]
    Tls(rustls::Error),
}

/// TLS 1.2/1.3 (aws-lc-rs), HTTP/1.1, the certificate from `resolver`.
pub(super) fn acceptor(
    resolver: Arc<dyn ResolvesServerCert>,
) -> Result<tokio_rustls::TlsAcceptor, CertError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(CertError::Tls)?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(tls)))
}

/// The server certificate source, and the CA to patch into the configuration (if any).
pub(super) fn certificates(
    opts: &WebhookOptions,
) -> Result<(Arc<dyn ResolvesServerCert>, Option<String>), CertError> {
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
    )?;
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
pub fn self_signed(hosts: &[String]) -> Result<Generated, CertError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "delta-operator webhook CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(hosts.to_vec())?;
    leaf.distinguished_name
        .push(DnType::CommonName, "delta-operator webhook");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;
    Ok(Generated {
        ca: ca_cert.pem(),
        chain: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        key: leaf_key.serialize_pem(),
    })
}

/// A certificate chain and its key, from PEM. An error names the file
/// (`what`), never the key's text.
fn certified(chain: &[u8], key: &[u8], what: &str) -> Result<CertifiedKey, CertError> {
    let what = || what.to_string();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<_, _>>()
        .map_err(|source| CertError::Chain {
            what: what(),
            source,
        })?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate { what: what() });
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|_| CertError::Key { what: what() })?;
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    CertifiedKey::from_der(chain, key, &provider).map_err(|source| CertError::Unusable {
        what: what(),
        source,
    })
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
    fn load(dir: &Path) -> Result<Self, CertError> {
        let (mtime, key) = read_cert(dir)?;
        Ok(FileCert {
            dir: dir.to_path_buf(),
            current: Mutex::new((mtime, Arc::new(key))),
        })
    }

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

fn read_cert(dir: &Path) -> Result<(Option<SystemTime>, CertifiedKey), CertError> {
    let crt_path = dir.join("tls.crt");
    let what = format!("webhook certificate in {}", dir.display());
    let mtime = std::fs::metadata(&crt_path).and_then(|m| m.modified()).ok();
    let read = |file: &'static str| {
        std::fs::read(dir.join(file)).map_err(|source| CertError::Read {
            what: what.clone(),
            file,
            source,
        })
    };
    let crt = read("tls.crt")?;
    let key = read("tls.key")?;
    Ok((mtime, certified(&crt, &key, &what)?))
}

impl ResolvesServerCert for FileCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub fn write_cert(dir: &Path, g: &Generated) {
        std::fs::write(dir.join("tls.key"), &g.key).unwrap();
        std::fs::write(dir.join("ca.crt"), &g.ca).unwrap();
        std::fs::write(dir.join("tls.crt"), &g.chain).unwrap();
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
