//! A view query's output column names, as far as its parse tree tells them:
//! `expr AS name` and a bare column (`c`, `t.c`) name their column; `*`,
//! `t.*`, `VALUES`, `TABLE t` and an expression without an alias (whose name
//! the engine makes up) do not, and leave the list incomplete. A set
//! operation's columns are its first operand's (as Spark names them).

use sqlparser::ast::{Expr, Query, SelectItem, SetExpr};

use delta_operator_core::model::object::QueryOutputs;

pub(crate) fn of_query(query: &Query) -> QueryOutputs {
    of_set_expr(&query.body)
}

fn of_set_expr(body: &SetExpr) -> QueryOutputs {
    match body {
        SetExpr::Select(select) => {
            let mut out = QueryOutputs {
                names: vec![],
                complete: true,
            };
            for item in &select.projection {
                match item {
                    SelectItem::ExprWithAlias { alias, .. } => out.names.push(alias.value.clone()),
                    SelectItem::ExprWithAliases { aliases, .. } => {
                        out.names.extend(aliases.iter().map(|a| a.value.clone()))
                    }
                    SelectItem::UnnamedExpr(Expr::Identifier(i)) => out.names.push(i.value.clone()),
                    SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                        match parts.last() {
                            Some(last) => out.names.push(last.value.clone()),
                            None => out.complete = false,
                        }
                    }
                    SelectItem::UnnamedExpr(_)
                    | SelectItem::QualifiedWildcard(..)
                    | SelectItem::Wildcard(_) => out.complete = false,
                }
            }
            out
        }
        SetExpr::Query(q) => of_query(q),
        SetExpr::SetOperation { left, .. } => of_set_expr(left),
        _ => QueryOutputs::default(),
    }
}
