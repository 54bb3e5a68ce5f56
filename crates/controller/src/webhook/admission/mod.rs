//! The answer to one admission request: the object is loaded as `validate`
//! loads a document (CRD schema check), then validated and lowered with the
//! cached objects of its namespace, one kind per file. A refusal carries the
//! text `validate` prints (field path, message, fix).

mod object;
mod schema;
mod table;

use kube::ResourceExt;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde_json::Value;

use super::caches::Caches;
use crate::depends::{Arrival, Listed, Lookup};
use delta_operator_api::config::Config;
use delta_operator_api::spec::SpecError;
use delta_operator_api::spec::load::{DEFAULT_NAMESPACE, Manifests, load_value};
use delta_operator_api::spec::validate::{NOT_IN_MANIFESTS, names_a_missing_resource, validate};

/// What labels the errors of an admission request (never printed: an object has no file).
const FILE: &str = "admission";
/// At most this many errors in one refusal (the rest: `delta-operator validate`).
const MAX_ERRORS: usize = 20;

/// The answer to one admission request. `cached` looks up the namespace's objects
/// as the operator sees them (only those the object depends on are read); the incoming object replaces its cached version.
/// `config` holds the operator's targets (what a schema's `spec.target` names).
pub fn admit(
    req: &AdmissionRequest<DynamicObject>,
    cached: &dyn Lookup,
    config: &Config,
) -> AdmissionResponse {
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
    // a CREATE's object is not stored yet: it comes after every stored one
    let arrival = match req.operation {
        Operation::Create => Arrival::New,
        _ => Arrival::Stored,
    };
    match check(doc, &ns, cached, config, arrival) {
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

/// Warnings to admit with, or the errors to refuse for.
type Verdict = Result<Vec<String>, Vec<SpecError>>;

/// Loads `doc` as `validate` loads a document, then hands it to its kind's check.
fn check(doc: Value, ns: &str, cached: &dyn Lookup, config: &Config, arrival: Arrival) -> Verdict {
    let mut incoming = Manifests::default();
    let mut errors = Vec::new();
    load_value(FILE, doc, &mut incoming, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    if let Some(s) = incoming.schemas.pop() {
        schema::check(s, ns, cached, arrival)
    } else if let Some(t) = incoming.tables.pop() {
        table::check(t, ns, cached, config)
    } else if let Some(v) = incoming.views.pop() {
        object::check(object::Incoming::View(v), ns, cached)
    } else if let Some(f) = incoming.functions.pop() {
        object::check(object::Incoming::Function(f), ns, cached)
    } else if let Some(v) = incoming.volumes.pop() {
        object::check(object::Incoming::Volume(v), ns, cached)
    } else {
        Ok(vec![]) // not ours (the webhook configuration names only our kinds)
    }
}

/// Validates `m` for the resource `label`. Errors of other resources are not
/// this request's; that another resource is missing (a schema applied after its
/// table) is a warning, as the operator only waits for it.
fn validated(m: &Manifests, label: &str, ns: &str) -> Verdict {
    let (missing, errors): (Vec<SpecError>, Vec<SpecError>) = validate(m)
        .into_iter()
        .filter(|e| e.resource.as_deref() == Some(label))
        .partition(names_a_missing_resource);
    if !errors.is_empty() {
        return Err(errors);
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
    let resp = match caches {
        Some(c) => admit(&req, &c.namespace(&ns), &c.config),
        None => admit(&req, &Listed::default(), &Config::default()),
    };
    if !resp.allowed {
        tracing::info!(kind = %req.kind.kind, namespace = %ns, name = %req.name, "admission refused");
    }
    review_bytes(resp.into_review())
}

fn review_bytes(review: AdmissionReview<DynamicObject>) -> Vec<u8> {
    serde_json::to_vec(&review).unwrap_or_else(|_| b"{}".to_vec())
}

/// Requests and cached objects the admission tests (here and of the server) build.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use delta_operator_api::spec::load::Manifests;

    pub const SCHEMA: &str = r#"{"apiVersion":"delta-operator.io/v1alpha1","kind":"DeltaSchema",
        "metadata":{"name":"sales","namespace":"shop"},"spec":{"catalog":"main"}}"#;

    pub fn table(column_type: &str) -> Value {
        serde_json::json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
            "metadata": {"name": "orders", "namespace": "shop"},
            "spec": {"schemaRef": "sales", "columns": [
                {"name": "order_id", "type": "bigint"},
                {"name": "amount", "type": column_type},
            ]}
        })
    }

    pub fn review(uid: &str, op: &str, object: Value, old: Option<Value>) -> Vec<u8> {
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

    pub fn cached_schema() -> Manifests {
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

    /// Loaded manifests as the cache would hold them.
    pub fn namespace_of(m: &Manifests) -> Listed {
        Listed {
            schemas: m
                .schemas
                .iter()
                .map(|s| std::sync::Arc::new(s.resource.clone()))
                .collect(),
            tables: m
                .tables
                .iter()
                .map(|t| std::sync::Arc::new(t.resource.clone()))
                .collect(),
        }
    }

    pub fn response(body: &[u8], cached: &Manifests) -> Value {
        response_with(body, cached, &Config::default())
    }

    /// The response with the operator's targets `config`.
    pub fn response_with(body: &[u8], cached: &Manifests, config: &Config) -> Value {
        let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body).unwrap();
        let req: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
        let out =
            serde_json::to_value(admit(&req, &namespace_of(cached), config).into_review()).unwrap();
        out["response"].clone()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

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

    #[test]
    fn garbage_gets_an_invalid_answer_not_a_panic() {
        for body in [&b""[..], b"{", b"{\"request\": 1}", b"null", b"[]"] {
            let out: Value = serde_json::from_slice(&answer(body, None)).unwrap();
            assert_eq!(out["response"]["allowed"], false, "{out}");
        }
    }
}
