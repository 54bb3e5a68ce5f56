//! The webhook's HTTPS server: TLS from `certs`, HTTP from `crate::http`,
//! POST /validate answered by `admission`.

use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite};

use super::PATH;
use super::admission::answer;
use super::caches::Caches;
use crate::http::{self, Reply, reply};

/// The largest request body read: an AdmissionReview holds the object and the old object
/// (the API server refuses objects over about 1.5 MiB each).
const MAX_BODY: usize = 8 * 1024 * 1024;
/// How long a client may take for its TLS handshake, and then for its request.
const TIMEOUT: Duration = Duration::from_secs(10);

pub(super) async fn serve(
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
            let handshake = tokio::time::timeout(TIMEOUT, acceptor.accept(sock)).await;
            let Ok(Ok(tls)) = handshake else {
                return;
            };
            connection(tls, caches).await;
        });
    }
}

/// One connection (TLS already done): its request, POST /validate with an AdmissionReview.
pub async fn connection<S>(io: S, caches: Option<Caches>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    http::serve_connection(io, TIMEOUT, move |req| route(req, caches.clone())).await;
}

async fn route(req: Request<Incoming>, caches: Option<Caches>) -> Reply {
    let text = |status, body: &'static str| reply(status, "text/plain", body);
    if req.uri().path() != PATH {
        return text(StatusCode::NOT_FOUND, "not found\n");
    }
    if req.method() != Method::POST {
        return text(StatusCode::METHOD_NOT_ALLOWED, "POST an AdmissionReview\n");
    }
    // too large, cut short or too slow: refused before anything is parsed
    let body = tokio::time::timeout(TIMEOUT, Limited::new(req.into_body(), MAX_BODY).collect());
    let Ok(Ok(body)) = body.await else {
        return text(StatusCode::BAD_REQUEST, "bad request\n");
    };
    let out = answer(&body.to_bytes(), caches.as_ref());
    reply(StatusCode::OK, "application/json", out)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::SystemTime;

    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use serde_json::Value;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::super::WebhookOptions;
    use super::super::admission::testing::{review, table};
    use super::super::certs::tests::write_cert;
    use super::super::certs::{acceptor, certificates, self_signed};
    use super::*;

    #[tokio::test]
    async fn http_request_in_pieces_is_answered() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let body = review("u-6", "CREATE", table("int"), None);
        let task = tokio::spawn(connection(server, None));
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
        task.await.unwrap();
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
}
