//! Schema steps: a schema's comment, properties, grants and owner.

use delta_operator_core::model::privilege::SCHEMA_KNOWN;
use delta_operator_core::model::{Privilege, SchemaRef};
use delta_operator_core::plan::SchemaAction;

use crate::quote::{ident, literal, props};
use crate::{SqlError, nonempty};

/// `` `catalog`.`schema` ``.
pub fn schema_name(s: &SchemaRef) -> String {
    format!("{}.{}", ident(&s.catalog), ident(&s.schema))
}

/// A schema privilege as SQL: its canonical spelling, checked against the
/// schema allow-list (they are keywords and cannot be quoted).
pub fn schema_privilege(p: &Privilege) -> Result<&'static str, SqlError> {
    SCHEMA_KNOWN
        .iter()
        .copied()
        .find(|k| *k == p.as_str())
        .ok_or_else(|| SqlError::UnknownSchemaPrivilege(p.to_string()))
}

/// The statement of one schema step.
pub fn compile_schema(s: &SchemaRef, action: &SchemaAction) -> Result<String, SqlError> {
    let privileges = |ps: &[Privilege], what: &'static str| {
        nonempty(ps.is_empty(), what)?;
        let p = ps
            .iter()
            .map(schema_privilege)
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, SqlError>(p.join(", "))
    };
    Ok(match action {
        // CREATE SCHEMA [IF NOT EXISTS] name [COMMENT …] [MANAGED LOCATION …]
        // [WITH DBPROPERTIES (…)], as documented at
        // https://docs.databricks.com/sql/language-manual/sql-ref-syntax-ddl-create-schema.html
        // (LOCATION is not Unity Catalog's: MANAGED LOCATION is). IF NOT EXISTS: a
        // schema someone created between the plan and this step is left as it is.
        SchemaAction::Create {
            comment,
            properties,
            managed_location,
        } => {
            let mut out = format!("CREATE SCHEMA IF NOT EXISTS {}", schema_name(s));
            if let Some(c) = comment.as_deref().filter(|c| !c.is_empty()) {
                out.push_str(&format!(" COMMENT {}", literal(c)));
            }
            if let Some(l) = managed_location {
                out.push_str(&format!(" MANAGED LOCATION {}", literal(l)));
            }
            if !properties.is_empty() {
                out.push_str(&format!(" WITH DBPROPERTIES ({})", props(properties)));
            }
            out
        }
        SchemaAction::SetComment { comment } if comment.is_empty() => {
            format!("COMMENT ON SCHEMA {} IS NULL", schema_name(s))
        }
        SchemaAction::SetComment { comment } => {
            format!(
                "COMMENT ON SCHEMA {} IS {}",
                schema_name(s),
                literal(comment)
            )
        }
        SchemaAction::SetProperties { properties } => {
            nonempty(properties.is_empty(), "SET DBPROPERTIES")?;
            format!(
                "ALTER SCHEMA {} SET DBPROPERTIES ({})",
                schema_name(s),
                props(properties)
            )
        }
        SchemaAction::Grant {
            principal,
            privileges: ps,
        } => format!(
            "GRANT {} ON SCHEMA {} TO {}",
            privileges(ps, "GRANT")?,
            schema_name(s),
            ident(principal)
        ),
        SchemaAction::Revoke {
            principal,
            privileges: ps,
        } => format!(
            "REVOKE {} ON SCHEMA {} FROM {}",
            privileges(ps, "REVOKE")?,
            schema_name(s),
            ident(principal)
        ),
        SchemaAction::SetOwner { owner } => {
            format!("ALTER SCHEMA {} OWNER TO {}", schema_name(s), ident(owner))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn schema_steps_quote_every_name_and_escape_every_literal() {
        let s = SchemaRef {
            catalog: "ma`in".into(),
            schema: "sa les".into(),
        };
        let one = |a: SchemaAction| compile_schema(&s, &a).expect("compiles");
        assert_eq!(
            one(SchemaAction::SetComment {
                comment: "it's ${x}".into()
            }),
            r"COMMENT ON SCHEMA `ma``in`.`sa les` IS 'it\'s $\{x}'"
        );
        assert_eq!(
            one(SchemaAction::SetComment {
                comment: String::new()
            }),
            "COMMENT ON SCHEMA `ma``in`.`sa les` IS NULL"
        );
        assert_eq!(
            one(SchemaAction::SetProperties {
                properties: BTreeMap::from([("k'".into(), "v".into())])
            }),
            r"ALTER SCHEMA `ma``in`.`sa les` SET DBPROPERTIES ('k\'' = 'v')"
        );
        assert_eq!(
            one(SchemaAction::Grant {
                principal: "a`b".into(),
                privileges: vec![Privilege::new("use_schema"), Privilege::new("SELECT")],
            }),
            "GRANT USE SCHEMA, SELECT ON SCHEMA `ma``in`.`sa les` TO `a``b`"
        );
        assert_eq!(
            one(SchemaAction::Revoke {
                principal: "x".into(),
                privileges: vec![Privilege::new("MODIFY")],
            }),
            "REVOKE MODIFY ON SCHEMA `ma``in`.`sa les` FROM `x`"
        );
        assert_eq!(
            one(SchemaAction::SetOwner { owner: "o`".into() }),
            "ALTER SCHEMA `ma``in`.`sa les` OWNER TO `o```"
        );
        assert_eq!(
            one(SchemaAction::Create {
                comment: Some("it's".into()),
                properties: BTreeMap::from([("k'".into(), "v".into())]),
                managed_location: Some("s3://b/it's".into()),
            }),
            r"CREATE SCHEMA IF NOT EXISTS `ma``in`.`sa les` COMMENT 'it\'s' MANAGED LOCATION 's3://b/it\'s' WITH DBPROPERTIES ('k\'' = 'v')"
        );
        assert_eq!(
            one(SchemaAction::Create {
                comment: None,
                properties: BTreeMap::new(),
                managed_location: None,
            }),
            "CREATE SCHEMA IF NOT EXISTS `ma``in`.`sa les`"
        );
        // a privilege outside the allow-list never reaches a statement
        let bad = SchemaAction::Grant {
            principal: "x".into(),
            privileges: vec![Privilege::new("SELECT ON CATALOG y TO z; --")],
        };
        assert!(matches!(
            compile_schema(&s, &bad),
            Err(SqlError::UnknownSchemaPrivilege(_))
        ));
        let none = SchemaAction::Revoke {
            principal: "x".into(),
            privileges: vec![],
        };
        assert_eq!(compile_schema(&s, &none), Err(SqlError::Empty("REVOKE")));
    }
}
