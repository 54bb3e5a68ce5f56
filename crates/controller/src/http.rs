//! The one HTTP/1.1 server code of the process, under /metrics and the
//! admission webhook: hyper serves each connection, a handler answers each
//! request. Every answer closes its connection (`connection: close`), as both
//! servers always have: their clients (probes, the API server) open one per request.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};

/// An answer with its whole body.
pub type Reply = Response<Full<Bytes>>;

/// An answer of `status` with `body` of `content_type`.
pub fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

/// Serves one connection: one request, answered by `handler`. A request head
/// not read whole within `head_timeout` ends the connection; one sent in
/// several segments is read whole before it is answered.
pub async fn serve_connection<I, H, F>(io: I, head_timeout: Duration, handler: H)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    H: Fn(Request<Incoming>) -> F + Send + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let answer = handler(req);
        async move { Ok::<_, Infallible>(answer.await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .keep_alive(false)
        .serve_connection(TokioIo::new(io), service)
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "HTTP connection ended with an error");
    }
}
