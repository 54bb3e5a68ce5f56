//! Comparing two CHECK expressions by their parse trees.

use std::ops::ControlFlow;

use crate::MAX_EXPRESSION_BYTES;
use crate::parse::parse_one;
use sqlparser::ast::{Expr, Ident, ObjectNamePart, VisitMut, VisitorMut};

/// Whether two CHECK expressions are the same expression: equal parse trees,
/// ignoring parentheses, the case of names and keywords, and quoting. An
/// engine stores a CHECK in its own spelling (delta-rs prints `(a > 0) OR b`
/// as `a > 0 OR b`, Databricks re-spaces it): compared by this, a CHECK the
/// operator wrote compares equal to what it declared, and the plan converges.
/// Expressions that do not parse are equal only as identical text.
pub fn same_expression(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (canonical(a), canonical(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// The parse tree without parentheses, names lower-cased and unquoted.
pub(super) fn canonical(text: &str) -> Option<Expr> {
    if text.len() > MAX_EXPRESSION_BYTES {
        return None;
    }
    let (mut expr, _) = parse_one(text).ok()?;
    let _ = VisitMut::visit(&mut expr, &mut Canonical);
    Some(expr)
}

pub(super) struct Canonical;

impl VisitorMut for Canonical {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let fold = |i: &mut Ident| {
            i.value = i.value.to_lowercase();
            i.quote_style = None;
        };
        match expr {
            Expr::Nested(inner) => *expr = (**inner).clone(),
            Expr::Identifier(i) => fold(i),
            Expr::CompoundIdentifier(ids) => ids.iter_mut().for_each(fold),
            Expr::Function(f) => {
                for part in &mut f.name.0 {
                    if let ObjectNamePart::Identifier(i) = part {
                        fold(i)
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
