//! Tenancy: which namespaces may use a target, and which catalogs and schemas
//! it may touch. Checked before anything is read or written.

use delta_operator_api::config::{Target, matches};
use delta_operator_core::model::SchemaRef;

/// `Err(message)` when the namespace or the schema is outside the target's allowance.
pub fn check(
    target_name: &str,
    target: &Target,
    namespace: &str,
    schema: &SchemaRef,
) -> Result<(), String> {
    if !target.namespaces.iter().any(|p| matches(p, namespace)) {
        return Err(format!(
            "namespace '{namespace}' may not use target '{target_name}' (allowed: {})",
            target.namespaces.join(", ")
        ));
    }
    if !target.allows_schema(schema) {
        return Err(format!(
            "target '{target_name}' may not touch {schema} (allowed: {})",
            target.schemas.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_api::config::{LakeTarget, TargetBackend};

    fn target(ns: &[&str], schemas: &[&str]) -> Target {
        Target {
            backend: TargetBackend::Lake(LakeTarget { root: "x".into() }),
            namespaces: ns.iter().map(|s| s.to_string()).collect(),
            schemas: schemas.iter().map(|s| s.to_string()).collect(),
            max_concurrent_applies: 1,
            default_schema_mode: Default::default(),
            hand_off: None,
            maintenance: None,
        }
    }

    #[test]
    fn namespaces_and_schemas_are_both_checked() {
        let s = SchemaRef {
            catalog: "dev".into(),
            schema: "sales".into(),
        };
        assert!(check("t", &target(&["team-*"], &["dev"]), "team-a", &s).is_ok());
        assert!(
            check("t", &target(&["team-*"], &["dev"]), "other", &s)
                .unwrap_err()
                .contains("namespace 'other'")
        );
        assert!(
            check("t", &target(&["*"], &["prod"]), "x", &s)
                .unwrap_err()
                .contains("dev.sales")
        );
        assert!(check("t", &target(&["*"], &["dev.sa*"]), "x", &s).is_ok());
        assert!(check("t", &target(&["*"], &["dev.other"]), "x", &s).is_err());
    }
}
