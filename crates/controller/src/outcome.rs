//! What a user reads when a reconcile ends unhappy. Every reconcile's outcome
//! (the report's condition reason and message) goes through `Context::announce`,
//! the one place that turns a failed, refused, waiting or interrupted outcome into
//! an Event on the resource and one WARN line in the operator's log, so that
//! `kubectl describe` and `kubectl logs` say what status says.
//!
//! Both are said when the resource's state (reason and message) changes, not on
//! every requeue: a table stuck waiting is reconciled again every few seconds
//! (backoff) and a stalled one every drift interval, and repeating the same
//! Event and the same WARN line each time would bury everything else. The state
//! is remembered per resource in this process (`Announced`), so a restarted
//! operator says each stuck state once more in its own log.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};

use crate::Context;
use crate::decide::Report;
use delta_operator_api::reason::Reason;
use delta_operator_api::spec::load::DEFAULT_NAMESPACE;

/// How an outcome is announced: `Warning` when something failed, was refused
/// or was cut short, `Normal` when it waits for something that comes by itself;
/// `None` when nothing is wrong (in sync, applying, or held by a person's choice).
/// Every reason is named, so a new one has to be placed here.
pub fn announced_as(reason: Reason) -> Option<EventType> {
    use Reason::*;
    match reason {
        // a stopped warehouse starting is said in status while the read waits; it is
        // how serverless warehouses work, not something to fix
        InSync | Observing | Paused | Applying | WarehouseStarting => None,
        NotCached | SchemaNotFound | WaitingForParent | WaitingForDependency | Deferred
        | Locked | PlanStale => Some(EventType::Normal),
        // ApprovalRequired: a destructive plan refused until a person approves it
        ApprovalRequired | ReadRetrying | LeaseLost | Interrupted | InvalidSpec | UnknownTarget
        | TargetUnavailable | Forbidden | ReadFailed | ApplyFailed | CrashLoop | DeleteFailed
        | Blocked | ParentFailed | DriftDetected | Refused(_) => Some(EventType::Warning),
    }
}

/// The Event's reason: the condition's, except `Interrupted`, whose Event has
/// always been `ApplyInterrupted` (the name users and dashboards know).
pub fn event_reason(reason: Reason) -> String {
    match reason {
        Reason::Interrupted => "ApplyInterrupted".into(),
        other => other.to_string(),
    }
}

/// One resource's state as announced: its uid (a resource deleted and made again
/// under the same name is another one), the Event's reason and the message.
pub fn state(uid: Option<&str>, reason: &str, message: &str) -> u64 {
    let mut h = DefaultHasher::new();
    uid.hash(&mut h);
    reason.hash(&mut h);
    message.hash(&mut h);
    h.finish()
}

/// The state last announced per resource (`Kind/namespace/name`), while it is unhappy.
pub struct Announced {
    last: Mutex<Last>,
    /// An entry not seen for this long is forgotten: its resource was deleted
    /// without a reconcile seeing it go (no finalizer). Longer than any requeue.
    ttl: Duration,
}

#[derive(Default)]
struct Last {
    by_object: HashMap<String, (u64, Instant)>,
    swept: Option<Instant>,
}

impl Announced {
    pub fn new(ttl: Duration) -> Self {
        Announced {
            last: Mutex::new(Last::default()),
            ttl,
        }
    }

    /// Records `state` as `object`'s at `now`: true when it is news (the first
    /// state seen, or another than the last one).
    pub fn is_news(&self, object: &str, state: u64, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.swept.is_none_or(|at| now >= at + self.ttl) {
            let ttl = self.ttl;
            last.by_object.retain(|_, (_, seen)| now < *seen + ttl);
            last.swept = Some(now);
        }
        let before = last.by_object.insert(object.to_string(), (state, now));
        before.is_none_or(|(s, _)| s != state)
    }

    /// `object` is fine again, or gone: the next unhappy state is news, even the same one.
    pub fn forget(&self, object: &str) {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_object
            .remove(object);
    }
}

/// The parameter names whose values are credentials: `token=…`, `X-Amz-Signature=…`,
/// `client_secret=…`. Compared lowercased, as the name's ending.
const SECRET_KEYS: [&str; 7] = [
    "token",
    "secret",
    "password",
    "signature",
    "credential",
    "apikey",
    "api_key",
];

/// `text` with what looks like a credential replaced by `***`: a bearer token,
/// a Databricks personal access token, the value of a parameter named like a
/// secret, a URL's password. Credentials are kept out of errors where they are
/// read (typed secrets without Display); this is the last check before a message
/// leaves the process in an Event or a log line, which more people can read.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut bearer = false;
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if bearer && !word.is_empty() {
            out.push_str("***");
        } else {
            out.push_str(&redact_word(word));
        }
        bearer = word.eq_ignore_ascii_case("bearer");
    }
    out
}

/// One space-separated word: `key=value` parameters, a URL's `user:password@`,
/// a `dapi…` token.
fn redact_word(word: &str) -> String {
    const ENDS: &[char] = &['&', ';', ',', ')', '"', '\'', '\n', '\t'];
    const STARTS: &[char] = &['&', ';', '?', '/', ',', '(', '"', '\'', '\n', '\t', '{'];
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(eq) = rest.find('=') {
        let (before, after) = rest.split_at(eq);
        let after = &after[1..];
        let key = before
            .rsplit(STARTS)
            .next()
            .unwrap_or(before)
            .to_lowercase();
        out.push_str(before);
        out.push('=');
        let value_end = after.find(ENDS).unwrap_or(after.len());
        if value_end > 0 && SECRET_KEYS.iter().any(|k| key.ends_with(k)) {
            out.push_str("***");
            rest = &after[value_end..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    let out = redact_userinfo(&out);
    redact_pat(&out)
}

/// `scheme://user:password@host` → `scheme://user:***@host`.
fn redact_userinfo(word: &str) -> String {
    let Some(at) = word.find("://") else {
        return word.to_string();
    };
    let authority_start = at + 3;
    let authority = &word[authority_start..];
    let authority_end = authority.find('/').unwrap_or(authority.len());
    let Some(user_end) = authority[..authority_end].rfind('@') else {
        return word.to_string();
    };
    let Some(colon) = authority[..user_end].find(':') else {
        return word.to_string();
    };
    format!(
        "{}***{}",
        &word[..authority_start + colon + 1],
        &word[authority_start + user_end..]
    )
}

/// A Databricks personal access token: `dapi` and 32 hex digits.
fn redact_pat(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find("dapi") {
        let tail = &rest[at + 4..];
        let hex = tail.bytes().take_while(|b| b.is_ascii_hexdigit()).count();
        out.push_str(&rest[..at]);
        if hex >= 32 {
            out.push_str("dapi***");
            rest = &tail[hex..];
        } else {
            out.push_str("dapi");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

impl Context {
    /// Says a reconcile's outcome: the report's events, then, when the outcome is
    /// unhappy and its state is news for this resource, one Event and one WARN line
    /// with the resource, the reason and the (redacted) message. Every reconcile
    /// of both kinds ends here, and so does an apply found cut short.
    pub async fn announce<K: Resource<DynamicType = ()>>(&self, obj: &K, report: &Report) {
        self.publish_all(obj, &report.events).await;
        let kind = K::kind(&());
        let ns = obj.namespace().unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        let name = obj.name_any();
        let key = format!("{kind}/{ns}/{name}");
        let Some(type_) = announced_as(report.reason) else {
            self.announced.forget(&key);
            return;
        };
        let reason = event_reason(report.reason);
        let message = redact(&report.message);
        let state = state(obj.meta().uid.as_deref(), &reason, &message);
        let object = format!("{ns}/{name}");
        if self.announced.is_news(&key, state, Instant::now()) {
            tracing::warn!(kind = %kind, object = %object, reason = %reason, "{message}");
            self.publish(obj, type_, &reason, message).await;
        } else {
            // the same state again (a requeue): said at WARN and as an Event when it began;
            // here only for whoever turns the debug level on
            tracing::debug!(kind = %kind, object = %object, reason = %reason, "still: {message}");
        }
    }

    /// A resource that is gone: nothing of it is remembered.
    pub fn forget(&self, key: &str) {
        self.metrics.forget(key);
        self.announced.forget(key);
        self.maintenance.forget(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::plan::rules::Rule;

    #[test]
    fn a_state_is_news_once_until_it_changes_or_is_forgotten() {
        let a = Announced::new(Duration::from_secs(3600));
        let t0 = Instant::now();
        let waiting = state(
            Some("u1"),
            "SchemaNotFound",
            "waiting for DeltaSchema 'sales'",
        );
        assert!(a.is_news("DeltaTable/ns/orders", waiting, t0));
        for s in 1..10 {
            let requeue = t0 + Duration::from_secs(s);
            assert!(!a.is_news("DeltaTable/ns/orders", waiting, requeue));
        }
        // another resource in the same state is news of its own
        assert!(a.is_news("DeltaTable/ns/customers", waiting, t0));
        // another message is another state; back to the first one is news again
        let failed = state(Some("u1"), "ReadFailed", "permission denied");
        assert!(a.is_news("DeltaTable/ns/orders", failed, t0));
        assert!(a.is_news("DeltaTable/ns/orders", waiting, t0));
        // in sync in between: the same trouble again is said again
        a.forget("DeltaTable/ns/orders");
        assert!(a.is_news("DeltaTable/ns/orders", waiting, t0));
        // the resource deleted and made again (another uid) says its state again
        let again = state(
            Some("u2"),
            "SchemaNotFound",
            "waiting for DeltaSchema 'sales'",
        );
        assert!(a.is_news("DeltaTable/ns/orders", again, t0));
    }

    #[test]
    fn resources_not_seen_for_the_ttl_are_forgotten() {
        let a = Announced::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert!(a.is_news("DeltaTable/ns/gone", 1, t0));
        assert!(a.is_news("DeltaTable/ns/stuck", 2, t0));
        assert!(!a.is_news("DeltaTable/ns/stuck", 2, t0 + Duration::from_secs(50)));
        // at the next sweep, the one seen 50 s ago stays, the other is forgotten
        assert!(!a.is_news("DeltaTable/ns/stuck", 2, t0 + Duration::from_secs(70)));
        let left = a.last.lock().unwrap().by_object.len();
        assert_eq!(left, 1);
        assert!(a.is_news("DeltaTable/ns/gone", 1, t0 + Duration::from_secs(71)));
    }

    #[test]
    fn what_is_wrong_is_a_warning_what_waits_is_normal_and_the_rest_is_not_said() {
        let said = |r| announced_as(r).map(|t| t == EventType::Warning);
        assert_eq!(said(Reason::ReadFailed), Some(true));
        assert_eq!(said(Reason::ApprovalRequired), Some(true));
        assert_eq!(said(Reason::Interrupted), Some(true));
        assert_eq!(said(Reason::Refused(Rule::RewriteRefused)), Some(true));
        assert_eq!(said(Reason::SchemaNotFound), Some(false));
        assert_eq!(said(Reason::WaitingForParent), Some(false));
        assert_eq!(said(Reason::WaitingForDependency), Some(false));
        assert_eq!(said(Reason::Deferred), Some(false));
        for fine in [
            Reason::InSync,
            Reason::Applying,
            Reason::Paused,
            Reason::Observing,
        ] {
            assert_eq!(said(fine), None, "{fine}");
        }
        // every Stalled reason is said as a Warning
        for r in Reason::all() {
            if r.phase() == delta_operator_api::reason::Phase::Stalled {
                assert_eq!(said(r), Some(true), "{r}");
            }
        }
        assert_eq!(event_reason(Reason::Interrupted), "ApplyInterrupted");
        assert_eq!(event_reason(Reason::SchemaNotFound), "SchemaNotFound");
    }

    #[test]
    fn credentials_never_leave_in_a_message() {
        let cases = [
            (
                "401 from https://x/api (Authorization: Bearer eyJhbGciOi.abc)",
                "401 from https://x/api (Authorization: Bearer ***",
            ),
            (
                "token dapi0123456789abcdef0123456789abcdef refused",
                "token dapi*** refused",
            ),
            (
                "GET s3://b/t?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abcd&x=1 failed",
                "GET s3://b/t?X-Amz-Credential=***&X-Amz-Signature=***&x=1 failed",
            ),
            (
                "sc://spark:15002/;user_id=op;token=s3cr3t: refused",
                "sc://spark:15002/;user_id=op;token=*** refused",
            ),
            (
                "connect to postgres://admin:hunter2@db:5432/x",
                "connect to postgres://admin:***@db:5432/x",
            ),
            ("client_secret=abc", "client_secret=***"),
        ];
        for (text, want) in cases {
            let got = redact(text);
            assert!(got.starts_with(want), "{text}\n → {got}");
            for secret in [
                "eyJhbG",
                "0123456789abcdef0123",
                "AKIA",
                "abcd&",
                "s3cr3t",
                "hunter2",
            ] {
                assert!(!got.contains(secret), "{got}");
            }
        }
        // what is no credential is left as it was
        for plain in [
            "waiting for DeltaSchema 'sales' in namespace ns",
            "step 2 REPLACE TABLE failed: CHECK amount >= 0 violated by 3 rows",
            "target 'remote': set DATABRICKS_TOKEN (tokenEnv: X_TOKEN)",
            "plan 50854c32792d7c1a needs approval: kubectl annotate deltatable orders delta-operator.io/approve=50854c32792d7c1a --overwrite",
        ] {
            assert_eq!(redact(plain), plain);
        }
    }
}
