//! Admission of a DeltaSchema: validated with the namespace's other schemas
//! (two schemas of one namespace may not declare one catalog schema) and the
//! other namespaces' schemas whose names look like its own (a catalog schema
//! is one across namespaces: `depends::dependencies`).

use delta_operator_api::spec::DeltaSchema;
use delta_operator_api::spec::load::Loaded;

use super::{Verdict, validated};
use crate::depends::{Arrival, Lookup, schema_inputs};

pub(super) fn check(
    s: Loaded<DeltaSchema>,
    ns: &str,
    cached: &dyn Lookup,
    arrival: Arrival,
) -> Verdict {
    let label = s.label();
    let m = schema_inputs(cached, s, arrival);
    validated(&m, &label, ns)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use delta_operator_api::spec::load::Manifests;
    use serde_json::Value;

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
    // A schema whose name is a cached schema's of the same catalog to a reader (Cyrillic а
    // for Latin a) is denied naming both, as validate denies it; in another catalog it is not.
    #[test]
    fn a_lookalike_of_a_cached_schema_of_the_catalog_is_denied_naming_both() {
        let lookalike = |catalog: &str| {
            let mut s: Value = serde_json::from_str(SCHEMA).unwrap();
            s["metadata"]["name"] = "sales-2".into();
            s["spec"]["name"] = "s\u{430}les".into();
            s["spec"]["catalog"] = catalog.into();
            s
        };
        let r = response(
            &review("u-6", "CREATE", lookalike("main"), None),
            &cached_schema(),
        );
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("DeltaSchema shop/sales-2: spec.name: ")
                && msg.contains("and schema 'sales' (metadata.name of DeltaSchema shop/sales")
                && msg.contains("same catalog")
                && msg.contains("look the same"),
            "{msg}"
        );
        let r = response(
            &review("u-7", "CREATE", lookalike("other"), None),
            &cached_schema(),
        );
        assert_eq!(r["allowed"], true, "{r}");
    }
}
