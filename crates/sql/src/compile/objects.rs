//! Views, SQL functions and volumes: every object step as Databricks SQL, and
//! its undo. The undo of a `Drop` is the object's old DDL (its CREATE, then its
//! tags, grants and owner), rendered from what the plan read of it.
//!
//! Statements as the Databricks SQL reference writes them:
//! - `CREATE [OR REPLACE] VIEW v [COMMENT c] [TBLPROPERTIES (…)] AS query`
//!   (sql-ref-syntax-ddl-create-view), then `COMMENT ON COLUMN v.col IS c` for
//!   each column comment (sql-ref-syntax-ddl-comment: the column list of a
//!   CREATE VIEW must name every column, which only the query knows);
//! - `CREATE [OR REPLACE] FUNCTION f(p T [COMMENT c], …) RETURNS T [NOT] DETERMINISTIC
//!   COMMENT c RETURN body` (sql-ref-syntax-ddl-create-sql-function);
//! - `CREATE VOLUME v [COMMENT c]` (sql-ref-syntax-ddl-create-volume, managed);
//! - `COMMENT ON TABLE v` (a view is a relation: COMMENT ON has no VIEW) and `COMMENT ON VOLUME`;
//! - `COMMENT ON COLUMN v.col IS c | NULL` (sql-ref-syntax-ddl-comment, DBR 16.1+:
//!   "relation_name must identify a table, … a view, or a materialized view"; the
//!   view's owner runs it): a declared column comment changed with the query unchanged;
//! - `ALTER VIEW … SET|UNSET TBLPROPERTIES`, `ALTER VIEW|VOLUME … SET|UNSET TAGS`,
//!   `ALTER VIEW|FUNCTION|VOLUME … OWNER TO`, `GRANT|REVOKE … ON VIEW|FUNCTION|VOLUME`,
//!   `DROP VIEW|FUNCTION|VOLUME IF EXISTS`.
//!
//! Every name is quoted and every literal escaped (`quote`); types are parsed
//! and printed back (`types::sql_type`); privileges come from each kind's allow
//! list. The query and the body are the user's text as written: validation
//! parsed them as exactly one query / expression (the plan compares them
//! normalised, but runs what the user wrote).

use std::collections::BTreeMap;

use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_core::model::{
    FunctionParam, Grant, ObjectBody, ObjectKind, ObjectRef, ObservedObject, Privilege,
};
use delta_operator_core::plan::compile::{CompileError, CompiledObject};
use delta_operator_core::plan::{ObjectAction, ObjectPlan, ObjectStep};

use crate::quote::{ident, keys, literal, props};
use crate::types::sql_type;
use crate::{SqlError, nonempty};

/// Privileges a view takes (a view is a relation: the table privileges).
const VIEW_PRIVILEGES: &[&str] = delta_operator_core::model::privilege::KNOWN;
/// Privileges a function takes (Unity Catalog's privilege types, function securable).
const FUNCTION_PRIVILEGES: &[&str] = &["ALL PRIVILEGES", "EXECUTE", "MANAGE"];
/// Privileges a volume takes.
const VOLUME_PRIVILEGES: &[&str] = &[
    "ALL PRIVILEGES",
    "APPLY TAG",
    "MANAGE",
    "READ VOLUME",
    "WRITE VOLUME",
];

/// `` `catalog`.`schema`.`name` ``.
pub fn object_name(o: &ObjectRef) -> String {
    format!(
        "{}.{}.{}",
        ident(&o.catalog),
        ident(&o.schema),
        ident(&o.name)
    )
}

fn keyword(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::View => "VIEW",
        ObjectKind::Function => "FUNCTION",
        ObjectKind::Volume => "VOLUME",
    }
}

/// The privilege as GRANT writes it for this kind of object, from its allow list.
fn object_privilege(kind: ObjectKind, p: &Privilege) -> Result<&'static str, SqlError> {
    let allowed = match kind {
        ObjectKind::View => VIEW_PRIVILEGES,
        ObjectKind::Function => FUNCTION_PRIVILEGES,
        ObjectKind::Volume => VOLUME_PRIVILEGES,
    };
    allowed
        .iter()
        .copied()
        .find(|k| *k == p.as_str())
        .ok_or_else(|| {
            SqlError::Unsupported(format!(
                "'{p}' is not a privilege a {} takes; use one of {}",
                keyword(kind).to_lowercase(),
                allowed.join(", ")
            ))
        })
}

fn privileges(kind: ObjectKind, ps: &[Privilege], what: &'static str) -> Result<String, SqlError> {
    nonempty(ps.is_empty(), what)?;
    let p = ps
        .iter()
        .map(|p| object_privilege(kind, p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(p.join(", "))
}

/// A type written by a user, parsed and printed back (never spliced).
fn ddl_type(text: &str) -> Result<String, SqlError> {
    parse_type(text)
        .map(|t| sql_type(&t))
        .map_err(|e| SqlError::Unsupported(format!("the type '{text}' cannot be read: {e}")))
}

/// The user's query or body: one statement's text, without a trailing `;`.
fn user_text(text: &str, what: &str) -> Result<String, SqlError> {
    let t = text.trim().trim_end_matches(';').trim_end();
    if t.is_empty() {
        return Err(SqlError::Unsupported(format!("the {what} is empty")));
    }
    Ok(t.to_string())
}

fn view_ddl(
    o: &ObjectRef,
    replace: bool,
    query: &str,
    comment: Option<&str>,
    column_comments: &BTreeMap<String, String>,
    properties: &BTreeMap<String, String>,
) -> Result<Vec<String>, SqlError> {
    let mut create = format!(
        "CREATE {}VIEW {}",
        if replace { "OR REPLACE " } else { "" },
        object_name(o)
    );
    if let Some(c) = comment.filter(|c| !c.is_empty()) {
        create.push_str(&format!(" COMMENT {}", literal(c)));
    }
    if !properties.is_empty() {
        create.push_str(&format!(" TBLPROPERTIES ({})", props(properties)));
    }
    create.push_str(&format!(" AS {}", user_text(query, "view's query")?));
    let mut out = vec![create];
    for (col, c) in column_comments {
        out.push(format!(
            "COMMENT ON COLUMN {}.{} IS {}",
            object_name(o),
            ident(col),
            literal(c)
        ));
    }
    Ok(out)
}

fn function_ddl(
    o: &ObjectRef,
    replace: bool,
    parameters: &[FunctionParam],
    returns: &str,
    body: &str,
    deterministic: Option<bool>,
    comment: &str,
) -> Result<String, SqlError> {
    let params = parameters
        .iter()
        .map(|p| {
            let mut s = format!("{} {}", ident(&p.name), ddl_type(&p.data_type)?);
            if let Some(c) = &p.comment {
                s.push_str(&format!(" COMMENT {}", literal(c)));
            }
            Ok(s)
        })
        .collect::<Result<Vec<_>, SqlError>>()?;
    let mut out = format!(
        "CREATE {}FUNCTION {}({}) RETURNS {}",
        if replace { "OR REPLACE " } else { "" },
        object_name(o),
        params.join(", "),
        ddl_type(returns)?
    );
    match deterministic {
        Some(true) => out.push_str(" DETERMINISTIC"),
        Some(false) => out.push_str(" NOT DETERMINISTIC"),
        None => {}
    }
    if !comment.is_empty() {
        out.push_str(&format!(" COMMENT {}", literal(comment)));
    }
    out.push_str(&format!(" RETURN {}", user_text(body, "function's body")?));
    Ok(out)
}

fn alter(o: &ObjectRef, rest: impl AsRef<str>) -> String {
    format!(
        "ALTER {} {} {}",
        keyword(o.kind),
        object_name(o),
        rest.as_ref()
    )
}

fn unsupported(o: &ObjectRef, what: &str) -> SqlError {
    SqlError::Unsupported(format!(
        "a {} takes no {what}",
        keyword(o.kind).to_lowercase()
    ))
}

/// The statements of one object step, in order.
pub fn compile_object(o: &ObjectRef, action: &ObjectAction) -> Result<Vec<String>, SqlError> {
    use ObjectAction as A;
    let one = |s: String| Ok(vec![s]);
    let kind = o.kind;
    match action {
        A::CreateView {
            query,
            comment,
            column_comments,
            properties,
        }
        | A::ReplaceView {
            query,
            comment,
            column_comments,
            properties,
        } if kind == ObjectKind::View => view_ddl(
            o,
            matches!(action, A::ReplaceView { .. }),
            query,
            comment.as_deref(),
            column_comments,
            properties,
        ),
        A::CreateFunction {
            parameters,
            returns,
            body,
            deterministic,
            comment,
        }
        | A::ReplaceFunction {
            parameters,
            returns,
            body,
            deterministic,
            comment,
        } if kind == ObjectKind::Function => one(function_ddl(
            o,
            matches!(action, A::ReplaceFunction { .. }),
            parameters,
            returns,
            body,
            *deterministic,
            comment,
        )?),
        A::CreateVolume { comment } if kind == ObjectKind::Volume => {
            let mut s = format!("CREATE VOLUME {}", object_name(o));
            if !comment.is_empty() {
                s.push_str(&format!(" COMMENT {}", literal(comment)));
            }
            one(s)
        }
        A::CreateView { .. }
        | A::ReplaceView { .. }
        | A::CreateFunction { .. }
        | A::ReplaceFunction { .. }
        | A::CreateVolume { .. } => Err(SqlError::Unsupported(format!(
            "{} does not make a {}",
            action.title(o),
            keyword(kind).to_lowercase()
        ))),
        // a function's comment is part of its CREATE: changed by a replace
        A::SetComment { .. } if kind == ObjectKind::Function => Err(unsupported(
            o,
            "COMMENT ON (its comment is changed by a replace)",
        )),
        A::SetComment { comment } => {
            // COMMENT ON TABLE names any relation, a view too; volumes have their own
            let target = if kind == ObjectKind::View {
                "TABLE"
            } else {
                "VOLUME"
            };
            let value = if comment.is_empty() {
                "NULL".to_string()
            } else {
                literal(comment)
            };
            one(format!("COMMENT ON {target} {} IS {value}", object_name(o)))
        }
        A::SetColumnComment { column, comment } if kind == ObjectKind::View => {
            let value = if comment.is_empty() {
                "NULL".to_string()
            } else {
                literal(comment)
            };
            one(format!(
                "COMMENT ON COLUMN {}.{} IS {value}",
                object_name(o),
                ident(column)
            ))
        }
        A::SetColumnComment { .. } => Err(unsupported(o, "column comments")),
        A::SetProperties { properties } if kind == ObjectKind::View => {
            nonempty(properties.is_empty(), "SET TBLPROPERTIES")?;
            one(alter(
                o,
                format!("SET TBLPROPERTIES ({})", props(properties)),
            ))
        }
        A::UnsetProperties { keys: k } if kind == ObjectKind::View => {
            nonempty(k.is_empty(), "UNSET TBLPROPERTIES")?;
            one(alter(
                o,
                format!("UNSET TBLPROPERTIES IF EXISTS ({})", keys(k)),
            ))
        }
        A::SetProperties { .. } | A::UnsetProperties { .. } => Err(unsupported(o, "properties")),
        A::SetTags { tags } if kind != ObjectKind::Function => {
            nonempty(tags.is_empty(), "SET TAGS")?;
            one(alter(o, format!("SET TAGS ({})", props(tags))))
        }
        A::UnsetTags { keys: k } if kind != ObjectKind::Function => {
            nonempty(k.is_empty(), "UNSET TAGS")?;
            one(alter(o, format!("UNSET TAGS ({})", keys(k))))
        }
        A::SetTags { .. } | A::UnsetTags { .. } => Err(unsupported(o, "tags")),
        A::Grant {
            principal,
            privileges: ps,
        } => one(format!(
            "GRANT {} ON {} {} TO {}",
            privileges(kind, ps, "GRANT")?,
            keyword(kind),
            object_name(o),
            ident(principal)
        )),
        A::Revoke {
            principal,
            privileges: ps,
        } => one(format!(
            "REVOKE {} ON {} {} FROM {}",
            privileges(kind, ps, "REVOKE")?,
            keyword(kind),
            object_name(o),
            ident(principal)
        )),
        A::SetOwner { owner } => one(alter(o, format!("OWNER TO {}", ident(owner)))),
        A::Drop => one(format!(
            "DROP {} IF EXISTS {}",
            keyword(kind),
            object_name(o)
        )),
    }
}

/// The comment a function or volume carries live: the user's part, then the
/// owner marker line (as read), so a re-creation keeps the ownership.
fn live_comment(o: &ObservedObject) -> String {
    match (o.comment.as_deref(), o.marker.as_deref()) {
        (Some(c), Some(m)) => format!("{c}\n{}", marker_line(m)),
        (Some(c), None) => c.to_string(),
        (None, Some(m)) => marker_line(m),
        (None, None) => String::new(),
    }
}

/// The marker as its comment line (`[delta-operator.io/owner=ns/name]`).
fn marker_line(m: &str) -> String {
    if m.starts_with(delta_operator_core::model::object::MARKER_LINE_PREFIX) {
        m.to_string()
    } else {
        format!(
            "{}{m}]",
            delta_operator_core::model::object::MARKER_LINE_PREFIX
        )
    }
}

/// The object as it is live, as statements that make it again: its CREATE
/// (`replace`: CREATE OR REPLACE), then its tags, grants and owner.
pub fn object_ddl(o: &ObservedObject, replace: bool) -> Result<Vec<String>, SqlError> {
    let r = &o.object;
    let mut out = match &o.body {
        ObjectBody::View {
            query,
            column_comments,
            ..
        } => view_ddl(
            r,
            replace,
            query,
            o.comment.as_deref(),
            column_comments,
            &o.properties,
        )?,
        ObjectBody::Function {
            parameters,
            returns,
            body,
            deterministic,
            ..
        } => vec![function_ddl(
            r,
            replace,
            parameters,
            returns,
            body,
            *deterministic,
            &live_comment(o),
        )?],
        ObjectBody::Volume => {
            let mut s = format!("CREATE VOLUME {}", object_name(r));
            let c = live_comment(o);
            if !c.is_empty() {
                s.push_str(&format!(" COMMENT {}", literal(&c)));
            }
            vec![s]
        }
    };
    if !o.tags.is_empty() && r.kind != ObjectKind::Function {
        out.push(alter(r, format!("SET TAGS ({})", props(&o.tags))));
    }
    out.extend(grant_statements(r, &o.grants));
    if let Some(owner) = &o.owner {
        out.push(alter(r, format!("OWNER TO {}", ident(owner))));
    }
    Ok(out)
}

fn grant_statements(r: &ObjectRef, grants: &[Grant]) -> Vec<String> {
    grants
        .iter()
        .filter_map(|g| {
            compile_object(
                r,
                &ObjectAction::Grant {
                    principal: g.principal.clone(),
                    privileges: g.privileges.clone(),
                },
            )
            .ok()
        })
        .flatten()
        .collect()
}

/// How to undo `action` on the object as `observed` was read before it. None:
/// no undo is known.
pub fn object_undo(
    o: &ObjectRef,
    action: &ObjectAction,
    observed: Option<&ObservedObject>,
) -> Option<String> {
    use ObjectAction as A;
    let drop = || compile_object(o, &A::Drop).ok();
    let statements: Vec<String> = match action {
        A::CreateView { .. } | A::CreateFunction { .. } | A::CreateVolume { .. } => drop()?,
        // the old definition, replaced again (what the replace drops is put back by
        // the plan's own later steps, whose undos say so)
        A::ReplaceView { .. } | A::ReplaceFunction { .. } => {
            let live = observed?;
            object_ddl(live, true).ok()?
        }
        A::Drop => object_ddl(observed?, false).ok()?,
        A::SetComment { .. } => {
            let live = observed?;
            let old = match o.kind {
                ObjectKind::View => live.comment.clone().unwrap_or_default(),
                _ => live_comment(live),
            };
            compile_object(o, &A::SetComment { comment: old }).ok()?
        }
        A::SetColumnComment { column, .. } => {
            let old = match &observed?.body {
                ObjectBody::View {
                    column_comments, ..
                } => column_comments
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(column))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
                _ => return None,
            };
            compile_object(
                o,
                &A::SetColumnComment {
                    column: column.clone(),
                    comment: old,
                },
            )
            .ok()?
        }
        A::SetProperties { properties } => {
            let live = observed?;
            restore_map(o, properties.keys(), &live.properties, true)?
        }
        A::UnsetProperties { keys } => {
            let live = observed?;
            restore_map(o, keys.iter(), &live.properties, true)?
        }
        A::SetTags { tags } => {
            let live = observed?;
            restore_map(o, tags.keys(), &live.tags, false)?
        }
        A::UnsetTags { keys } => {
            let live = observed?;
            restore_map(o, keys.iter(), &live.tags, false)?
        }
        A::Grant {
            principal,
            privileges,
        } => compile_object(
            o,
            &A::Revoke {
                principal: principal.clone(),
                privileges: privileges.clone(),
            },
        )
        .ok()?,
        A::Revoke {
            principal,
            privileges,
        } => compile_object(
            o,
            &A::Grant {
                principal: principal.clone(),
                privileges: privileges.clone(),
            },
        )
        .ok()?,
        A::SetOwner { .. } => {
            let old = observed?.owner.clone()?;
            compile_object(o, &A::SetOwner { owner: old }).ok()?
        }
    };
    (!statements.is_empty()).then(|| statements.join(";\n"))
}

/// Puts the keys back as `live` had them: the ones it had set to their old
/// values, the others unset.
fn restore_map<'a>(
    o: &ObjectRef,
    changed: impl Iterator<Item = &'a String>,
    live: &BTreeMap<String, String>,
    properties: bool,
) -> Option<Vec<String>> {
    let mut set = BTreeMap::new();
    let mut unset = Vec::new();
    for k in changed {
        match live.get(k) {
            Some(v) => {
                set.insert(k.clone(), v.clone());
            }
            None => unset.push(k.clone()),
        }
    }
    let mut out = Vec::new();
    if !unset.is_empty() {
        let a = if properties {
            ObjectAction::UnsetProperties { keys: unset }
        } else {
            ObjectAction::UnsetTags { keys: unset }
        };
        out.extend(compile_object(o, &a).ok()?);
    }
    if !set.is_empty() {
        let a = if properties {
            ObjectAction::SetProperties { properties: set }
        } else {
            ObjectAction::SetTags { tags: set }
        };
        out.extend(compile_object(o, &a).ok()?);
    }
    Some(out)
}

/// One object step compiled: its statements and its undo.
pub fn compile(plan: &ObjectPlan, step: &ObjectStep) -> Result<CompiledObject, CompileError> {
    let statements = compile_object(&plan.object, &step.action)?;
    let undo = object_undo(&plan.object, &step.action, plan.observed.as_deref());
    Ok(CompiledObject { statements, undo })
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::Grant;

    fn v() -> ObjectRef {
        ObjectRef::new(ObjectKind::View, "ma`in", "sa les", "it's")
    }
    fn f() -> ObjectRef {
        ObjectRef::new(ObjectKind::Function, "main", "sec", "mask`x")
    }
    fn vol() -> ObjectRef {
        ObjectRef::new(ObjectKind::Volume, "main", "raw", "files")
    }
    fn sql(o: &ObjectRef, a: ObjectAction) -> Vec<String> {
        compile_object(o, &a).expect("compiles")
    }

    #[test]
    fn a_view_quotes_every_name_and_escapes_every_literal() {
        let a = ObjectAction::CreateView {
            query: "SELECT id FROM main.sales.orders;  ".into(),
            comment: Some("it's ${x}\\".into()),
            column_comments: BTreeMap::from([("i`d".to_string(), "the 'id'".to_string())]),
            properties: BTreeMap::from([(
                "delta-operator.io/owner".to_string(),
                "ns/it's".to_string(),
            )]),
        };
        assert_eq!(
            sql(&v(), a),
            vec![
                r"CREATE VIEW `ma``in`.`sa les`.`it's` COMMENT 'it\'s $\{x}\\' TBLPROPERTIES ('delta-operator.io/owner' = 'ns/it\'s') AS SELECT id FROM main.sales.orders".to_string(),
                r"COMMENT ON COLUMN `ma``in`.`sa les`.`it's`.`i``d` IS 'the \'id\''".to_string(),
            ]
        );
        let r = ObjectAction::ReplaceView {
            query: "SELECT 1".into(),
            comment: None,
            column_comments: BTreeMap::new(),
            properties: BTreeMap::new(),
        };
        assert_eq!(
            sql(&v(), r),
            vec!["CREATE OR REPLACE VIEW `ma``in`.`sa les`.`it's` AS SELECT 1"]
        );
        assert_eq!(
            sql(
                &v(),
                ObjectAction::SetComment {
                    comment: "a'b".into()
                }
            ),
            vec![r"COMMENT ON TABLE `ma``in`.`sa les`.`it's` IS 'a\'b'"]
        );
        assert_eq!(
            sql(
                &v(),
                ObjectAction::UnsetTags {
                    keys: vec!["k'".into()]
                }
            ),
            vec![r"ALTER VIEW `ma``in`.`sa les`.`it's` UNSET TAGS ('k\'')"]
        );
        assert_eq!(
            sql(
                &v(),
                ObjectAction::Grant {
                    principal: "data `eng`".into(),
                    privileges: vec![Privilege::new("select")],
                }
            ),
            vec!["GRANT SELECT ON VIEW `ma``in`.`sa les`.`it's` TO `data ``eng```"]
        );
        assert_eq!(
            sql(&v(), ObjectAction::Drop),
            vec!["DROP VIEW IF EXISTS `ma``in`.`sa les`.`it's`"]
        );
        assert_eq!(
            sql(
                &v(),
                ObjectAction::SetColumnComment {
                    column: "i`d".into(),
                    comment: "the 'id'".into()
                }
            ),
            vec![r"COMMENT ON COLUMN `ma``in`.`sa les`.`it's`.`i``d` IS 'the \'id\''"]
        );
        // a function has no columns to comment on
        assert!(
            compile_object(
                &f(),
                &ObjectAction::SetColumnComment {
                    column: "x".into(),
                    comment: "y".into()
                }
            )
            .is_err()
        );
        // an empty query is refused, never run as `AS `
        assert!(
            compile_object(
                &v(),
                &ObjectAction::CreateView {
                    query: " ; ".into(),
                    comment: None,
                    column_comments: BTreeMap::new(),
                    properties: BTreeMap::new()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn a_function_parses_its_types_and_escapes_its_comments() {
        let a = ObjectAction::CreateFunction {
            parameters: vec![
                FunctionParam {
                    name: "e`mail".into(),
                    data_type: "STRING".into(),
                    comment: Some("it's".into()),
                },
                FunctionParam {
                    name: "n".into(),
                    data_type: "decimal(10, 2)".into(),
                    comment: None,
                },
            ],
            returns: "string".into(),
            body: "CASE WHEN n > 0 THEN '***' ELSE NULL END".into(),
            deterministic: Some(true),
            comment: "masks\n[delta-operator.io/owner=ns/m]".into(),
        };
        assert_eq!(
            sql(&f(), a),
            vec![
                r"CREATE FUNCTION `main`.`sec`.`mask``x`(`e``mail` string COMMENT 'it\'s', `n` decimal(10,2)) RETURNS string DETERMINISTIC COMMENT 'masks
[delta-operator.io/owner=ns/m]' RETURN CASE WHEN n > 0 THEN '***' ELSE NULL END"
            ]
        );
        // a type that is not one is refused, never spliced
        let bad = ObjectAction::ReplaceFunction {
            parameters: vec![],
            returns: "string) RETURN 1; DROP TABLE x --".into(),
            body: "1".into(),
            deterministic: Some(false),
            comment: String::new(),
        };
        assert!(compile_object(&f(), &bad).is_err());
        // functions have no tags, no COMMENT ON, no properties; EXECUTE is theirs
        assert!(
            compile_object(
                &f(),
                &ObjectAction::SetTags {
                    tags: BTreeMap::from([("a".into(), "b".into())])
                }
            )
            .is_err()
        );
        assert!(
            compile_object(
                &f(),
                &ObjectAction::SetComment {
                    comment: "x".into()
                }
            )
            .is_err()
        );
        assert_eq!(
            sql(
                &f(),
                ObjectAction::Revoke {
                    principal: "a".into(),
                    privileges: vec![Privilege::new("execute")]
                }
            ),
            vec!["REVOKE EXECUTE ON FUNCTION `main`.`sec`.`mask``x` FROM `a`"]
        );
        assert!(
            compile_object(
                &f(),
                &ObjectAction::Grant {
                    principal: "a".into(),
                    privileges: vec![Privilege::new("SELECT; DROP")]
                }
            )
            .is_err()
        );
        assert_eq!(
            sql(
                &f(),
                ObjectAction::SetOwner {
                    owner: "o`x".into()
                }
            ),
            vec!["ALTER FUNCTION `main`.`sec`.`mask``x` OWNER TO `o``x`"]
        );
    }

    #[test]
    fn a_volume() {
        assert_eq!(
            sql(
                &vol(),
                ObjectAction::CreateVolume {
                    comment: "raw ${files}".into()
                }
            ),
            vec![r"CREATE VOLUME `main`.`raw`.`files` COMMENT 'raw $\{files}'"]
        );
        assert_eq!(
            sql(
                &vol(),
                ObjectAction::SetComment {
                    comment: String::new()
                }
            ),
            vec!["COMMENT ON VOLUME `main`.`raw`.`files` IS NULL"]
        );
        assert_eq!(
            sql(
                &vol(),
                ObjectAction::Grant {
                    principal: "etl".into(),
                    privileges: vec![
                        Privilege::new("READ_VOLUME"),
                        Privilege::new("write volume")
                    ]
                }
            ),
            vec!["GRANT READ VOLUME, WRITE VOLUME ON VOLUME `main`.`raw`.`files` TO `etl`"]
        );
        assert!(
            compile_object(
                &vol(),
                &ObjectAction::SetProperties {
                    properties: BTreeMap::from([("a".into(), "b".into())])
                }
            )
            .is_err()
        );
    }

    #[test]
    fn a_drops_undo_is_the_old_ddl_with_tags_grants_and_owner() {
        let mut live = ObservedObject::new(
            v(),
            ObjectBody::View {
                query: "SELECT id FROM t".into(),
                normalized: String::new(),
                column_comments: BTreeMap::new(),
            },
        );
        live.comment = Some("it's".into());
        live.properties =
            BTreeMap::from([("delta-operator.io/owner".to_string(), "ns/v".to_string())]);
        live.tags = BTreeMap::from([("domain".to_string(), "sales".to_string())]);
        live.grants = vec![Grant {
            principal: "analysts".into(),
            privileges: vec![Privilege::new("SELECT")],
        }];
        live.owner = Some("alice".into());
        let undo = object_undo(&v(), &ObjectAction::Drop, Some(&live)).expect("an undo");
        assert_eq!(
            undo,
            [
                r"CREATE VIEW `ma``in`.`sa les`.`it's` COMMENT 'it\'s' TBLPROPERTIES ('delta-operator.io/owner' = 'ns/v') AS SELECT id FROM t",
                r"ALTER VIEW `ma``in`.`sa les`.`it's` SET TAGS ('domain' = 'sales')",
                r"GRANT SELECT ON VIEW `ma``in`.`sa les`.`it's` TO `analysts`",
                r"ALTER VIEW `ma``in`.`sa les`.`it's` OWNER TO `alice`",
            ]
            .join(";\n")
        );
        // a function's: its comment keeps the marker line
        let mut func = ObservedObject::new(
            f(),
            ObjectBody::Function {
                parameters: vec![],
                returns: "int".into(),
                body: "1".into(),
                normalized: String::new(),
                deterministic: None,
            },
        );
        func.comment = Some("one".into());
        func.marker = Some("ns/one".into());
        let undo = object_undo(&f(), &ObjectAction::Drop, Some(&func)).expect("an undo");
        assert_eq!(
            undo,
            "CREATE FUNCTION `main`.`sec`.`mask``x`() RETURNS int COMMENT 'one\n[delta-operator.io/owner=ns/one]' RETURN 1"
        );
        // a create's undo drops it; a grant's revokes; a tag change puts the old value back
        assert_eq!(
            object_undo(
                &vol(),
                &ObjectAction::CreateVolume {
                    comment: String::new()
                },
                None
            )
            .as_deref(),
            Some("DROP VOLUME IF EXISTS `main`.`raw`.`files`")
        );
        let set = ObjectAction::SetTags {
            tags: BTreeMap::from([
                ("domain".to_string(), "finance".to_string()),
                ("new".to_string(), "x".to_string()),
            ]),
        };
        assert_eq!(
            object_undo(&v(), &set, Some(&live)).as_deref(),
            Some(
                "ALTER VIEW `ma``in`.`sa les`.`it's` UNSET TAGS ('new');\nALTER VIEW `ma``in`.`sa les`.`it's` SET TAGS ('domain' = 'sales')"
            )
        );
        // without what was read, a drop has no undo to show
        assert_eq!(object_undo(&v(), &ObjectAction::Drop, None), None);
    }
}
