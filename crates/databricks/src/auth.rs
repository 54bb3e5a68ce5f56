//! Credentials for a workspace: a personal access token, or a service
//! principal's OAuth client credentials (machine-to-machine). Secrets are
//! wrapped so they never reach Debug output, logs or error messages.

use std::fmt;
use std::time::{Duration, Instant};

/// A secret value. Debug prints `***`; there is no Display, so it cannot end up
/// in a formatted message by accident. `expose` is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `Authorization: Bearer <token>` on every request.
    Token(Secret),
    /// `POST {host}/oidc/v1/token` (client_credentials, scope all-apis, HTTP Basic).
    OAuth {
        client_id: String,
        client_secret: Secret,
    },
}

impl Credentials {
    /// From Databricks' unified-auth variables: `DATABRICKS_TOKEN`, else
    /// `DATABRICKS_CLIENT_ID` + `DATABRICKS_CLIENT_SECRET`.
    pub fn from_env() -> Result<Self, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        if let Some(t) = var("DATABRICKS_TOKEN") {
            return Ok(Credentials::Token(Secret::new(t.trim())));
        }
        match (var("DATABRICKS_CLIENT_ID"), var("DATABRICKS_CLIENT_SECRET")) {
            (Some(id), Some(secret)) => Ok(Credentials::OAuth { client_id: id.trim().into(), client_secret: Secret::new(secret.trim()) }),
            (Some(_), None) => Err("DATABRICKS_CLIENT_ID is set but DATABRICKS_CLIENT_SECRET is not".into()),
            _ => Err("no Databricks credential: set DATABRICKS_TOKEN, or DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET, or the target's auth in the config".into()),
        }
    }
}

/// An OAuth access token and when it stops being used.
#[derive(Debug, Clone)]
pub struct CachedToken {
    pub token: Secret,
    /// Refresh from this moment on: a margin before the real expiry
    /// (a fifth of the lifetime, at most a minute), so no request carries a
    /// token that expires in flight.
    pub refresh_at: Instant,
}

impl CachedToken {
    pub fn new(token: Secret, expires_in: Duration, now: Instant) -> Self {
        let margin = (expires_in / 5).min(Duration::from_secs(60));
        CachedToken {
            token,
            refresh_at: now + expires_in.saturating_sub(margin),
        }
    }
    pub fn fresh(&self, now: Instant) -> bool {
        now < self.refresh_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = Credentials::OAuth {
            client_id: "id".into(),
            client_secret: Secret::new("s3cr3t"),
        };
        let dbg = format!("{c:?} {:?}", Credentials::Token(Secret::new("dapi123")));
        assert!(!dbg.contains("s3cr3t") && !dbg.contains("dapi123"), "{dbg}");
        assert!(dbg.contains("***"));
    }

    #[test]
    fn tokens_refresh_before_expiry() {
        let now = Instant::now();
        let t = CachedToken::new(Secret::new("x"), Duration::from_secs(3600), now);
        assert!(t.fresh(now + Duration::from_secs(3500)));
        assert!(!t.fresh(now + Duration::from_secs(3541)));
        let short = CachedToken::new(Secret::new("x"), Duration::from_secs(1), now);
        assert!(short.fresh(now + Duration::from_millis(700)));
        assert!(!short.fresh(now + Duration::from_millis(900)));
    }
}
