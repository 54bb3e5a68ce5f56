//! User SQL expressions (`using:`), parsed, never spliced: exactly one
//! expression over the row's columns, printed back from the parse tree, so
//! what a backend runs is what the plan shows and nothing a user wrote can
//! close a parenthesis and add select items.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Visit, Visitor};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

/// The longest expression accepted (bytes).
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// How deep an expression may nest (parentheses, function calls).
const RECURSION_LIMIT: usize = 64;

/// A parsed `using:` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsingExpr {
    /// The expression printed back from its parse tree.
    pub sql: String,
    /// The columns it reads (the first part of each identifier), as written.
    pub columns: Vec<String>,
}

/// Parses a `using:` expression, or says why it is not exactly one expression over columns.
pub fn parse_using(text: &str) -> Result<UsingExpr, String> {
    if text.trim().is_empty() {
        return Err("is empty".into());
    }
    if text.len() > MAX_EXPRESSION_BYTES {
        return Err(format!(
            "is {} bytes long; the limit is {MAX_EXPRESSION_BYTES}",
            text.len()
        ));
    }
    let dialect = GenericDialect {};
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .try_with_sql(text)
        .map_err(|e| format!("is not SQL: {e}"))?;
    let expr = parser
        .parse_expr()
        .map_err(|e| format!("is not one SQL expression: {e}"))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(format!(
            "is more than one expression: '{}' follows it (a `using:` holds exactly one expression, without AS or a trailing comma)",
            next.token
        ));
    }
    let mut v = Columns::default();
    if let ControlFlow::Break(why) = expr.visit(&mut v) {
        return Err(why);
    }
    let mut columns = Vec::new();
    for c in v.columns {
        if !columns.iter().any(|x: &String| x.eq_ignore_ascii_case(&c)) {
            columns.push(c);
        }
    }
    Ok(UsingExpr {
        sql: expr.to_string(),
        columns,
    })
}

/// Collects column references, and stops at what a row expression cannot hold.
#[derive(Default)]
struct Columns {
    columns: Vec<String>,
}

impl Visitor for Columns {
    type Break = String;

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<String> {
        match expr {
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                ControlFlow::Break(
                    "holds a subquery; it may only read the row's own columns".into(),
                )
            }
            Expr::Wildcard(_) | Expr::QualifiedWildcard(_, _) => {
                ControlFlow::Break("holds '*'; name the columns it reads".into())
            }
            Expr::Function(f) if f.over.is_some() => ControlFlow::Break(format!(
                "holds the window function {}; it may only read the row's own columns",
                f.name
            )),
            Expr::Identifier(id) => {
                self.columns.push(id.value.clone());
                ControlFlow::Continue(())
            }
            Expr::CompoundIdentifier(ids) => {
                if let Some(first) = ids.first() {
                    self.columns.push(first.value.clone());
                }
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_using;

    #[test]
    fn one_expression_is_accepted_and_printed_back() {
        let e = parse_using("CAST(amount AS BIGINT) * 100").unwrap();
        assert_eq!(e.sql, "CAST(amount AS BIGINT) * 100");
        assert_eq!(e.columns, vec!["amount"]);
        let e = parse_using("coalesce(note, 'n/a')").unwrap();
        assert_eq!(e.columns, vec!["note"]);
        let e = parse_using("address.city || ', ' || `zip code`").unwrap();
        assert_eq!(e.columns, vec!["address", "zip code"]);
    }

    #[test]
    fn hostile_expressions_are_refused() {
        for bad in [
            "a) AS x, (b",
            "amount, status",
            "amount AS other",
            "1; DROP TABLE t",
            "(SELECT max(a) FROM t)",
            "EXISTS (SELECT 1)",
            "a IN (SELECT a FROM t)",
            "*",
            "row_number() OVER ()",
            "",
            "   ",
            "amount -- ) , status",
        ] {
            // a trailing comment is harmless: it is dropped by the printer
            if bad.contains("--") {
                assert_eq!(parse_using(bad).unwrap().sql, "amount");
                continue;
            }
            assert!(parse_using(bad).is_err(), "{bad:?} was accepted");
        }
        // deep nesting within the size limit stops at the parser's recursion limit
        assert!(
            parse_using(&format!("{}1{}", "(".repeat(2000), ")".repeat(2000)))
                .unwrap_err()
                .contains("not one SQL expression")
        );
        assert!(parse_using(&"a+".repeat(3000)).is_err());
    }
}
