//! Admission of a DeltaView, DeltaFunction or DeltaVolume: validated with its
//! namespace's schemas (`validate`'s checks for the kind: names, grants for
//! the kind, the query or body parsed), then lowered as a reconcile lowers it
//! when its schema resolves. A schema not applied yet is a warning, as for tables.

use delta_operator_api::spec::load::{Loaded, Manifests};
use delta_operator_api::spec::lower_objects::object_schema_of;
use delta_operator_api::spec::objects::{DeltaFunction, DeltaView, DeltaVolume};

use super::{Verdict, validated};
use crate::depends::{Lookup, cached};

/// The incoming object of one kind, with the namespace's schemas.
pub(super) enum Incoming {
    View(Loaded<DeltaView>),
    Function(Loaded<DeltaFunction>),
    Volume(Loaded<DeltaVolume>),
}

pub(super) fn check(o: Incoming, ns: &str, lookup: &dyn Lookup) -> Verdict {
    let mut m = Manifests {
        schemas: lookup
            .schemas()
            .into_iter()
            .map(|s| cached(s.as_ref().clone()))
            .collect(),
        ..Manifests::default()
    };
    let label = match &o {
        Incoming::View(v) => v.label(),
        Incoming::Function(f) => f.label(),
        Incoming::Volume(v) => v.label(),
    };
    match o {
        Incoming::View(v) => m.views.push(v),
        Incoming::Function(f) => m.functions.push(f),
        Incoming::Volume(v) => m.volumes.push(v),
    }
    let warnings = validated(&m, &label, ns)?;
    use delta_operator_api::spec::lower_objects::{lower_function, lower_view, lower_volume};
    if let Some(v) = m.views.last()
        && object_schema_of(&m, v).is_some()
    {
        lower_view(&m, v)?;
    }
    if let Some(f) = m.functions.last()
        && object_schema_of(&m, f).is_some()
    {
        lower_function(&m, f)?;
    }
    if let Some(v) = m.volumes.last()
        && object_schema_of(&m, v).is_some()
    {
        lower_volume(&m, v)?;
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use delta_operator_api::spec::load::Manifests;
    use serde_json::{Value, json};

    fn view(query: &str) -> Value {
        json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaView",
            "metadata": {"name": "recent", "namespace": "shop"},
            "spec": {"schemaRef": "sales", "query": query}
        })
    }

    #[test]
    fn a_good_view_is_allowed() {
        let r = response(
            &review("v-1", "CREATE", view("SELECT id FROM orders"), None),
            &cached_schema(),
        );
        assert_eq!(r["allowed"], true, "{r}");
    }

    #[test]
    fn a_view_whose_query_does_not_parse_is_denied_at_spec_query() {
        let r = response(
            &review("v-2", "CREATE", view("SELEC id FROM orders"), None),
            &cached_schema(),
        );
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("DeltaView shop/recent: spec.query") && msg.contains("fix:"),
            "{msg}"
        );
    }

    #[test]
    fn a_view_without_a_query_is_denied_by_the_crd_schema() {
        let mut v = view("SELECT 1");
        v["spec"].as_object_mut().unwrap().remove("query");
        let r = response(&review("v-3", "CREATE", v, None), &cached_schema());
        assert_eq!(r["allowed"], false, "{r}");
        assert!(
            r["status"]["message"].as_str().unwrap().contains("query"),
            "{r}"
        );
    }

    #[test]
    fn a_function_with_a_grant_of_a_table_privilege_is_denied_and_before_its_schema_warned() {
        let f = json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaFunction",
            "metadata": {"name": "mask", "namespace": "shop"},
            "spec": {"schemaRef": "sales", "returns": "string", "body": "'***'",
                "parameters": [{"name": "s", "type": "string"}],
                "grants": [{"principal": "analysts", "privileges": ["SELECT"]}]}
        });
        let r = response(&review("f-1", "CREATE", f.clone(), None), &cached_schema());
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        assert!(
            msg.contains("DeltaFunction shop/mask: spec.grants"),
            "{msg}"
        );
        let mut ok = f;
        ok["spec"]["grants"][0]["privileges"] = json!(["EXECUTE"]);
        let r = response(&review("f-2", "CREATE", ok, None), &Manifests::default());
        assert_eq!(r["allowed"], true, "{r}");
        let w = r["warnings"][0].as_str().unwrap();
        assert!(
            w.contains("spec.schemaRef") && w.contains("in namespace shop yet"),
            "{w}"
        );
    }
}
