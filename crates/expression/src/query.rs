//! A view's query and a SQL function's body: parsed (Databricks' dialect),
//! held to one query or one expression, measured, and printed back from the
//! parse tree (the normalised form a plan compares: whitespace, keyword case
//! and comments never make a difference; identifiers keep their case).

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, SetExpr, Statement, Visit, Visitor};
use sqlparser::dialect::DatabricksDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::reads::{self, Reads};
use delta_operator_core::model::SchemaRef;
use delta_operator_core::model::object::QueryOutputs;

/// The longest view query or function body accepted (bytes).
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// How many expression nodes a query or body may hold.
pub const MAX_QUERY_NODES: usize = 20_000;

/// How deep the parser may recurse in a query (nested subqueries,
/// parentheses, calls).
pub const QUERY_RECURSION_LIMIT: usize = 128;

/// How deep a query's or body's expressions may nest, counting the operands
/// of operator chains the parser builds without recursing (`a OR b OR …`):
/// a tree this deep is cloned, compared and dropped on any thread's stack.
pub const MAX_QUERY_DEPTH: usize = 1000;

/// The stack the parser runs on: a tree deeper than `MAX_QUERY_DEPTH` (or
/// one the parser gives up on half-built) is dropped there, recursively.
const PARSE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// A view's query: exactly one `SELECT` (or `WITH … SELECT`, `VALUES`, a set
/// operation of them), parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedQuery {
    query: Box<Query>,
    /// The query printed back from its parse tree.
    pub normalized: String,
}

impl ParsedQuery {
    /// What the query reads, names resolved against `default` (the view's
    /// own catalog and schema).
    pub fn reads(&self, default: &SchemaRef) -> Result<Reads, String> {
        reads::of_query(&self.query, default)
    }

    /// Its output column names, as far as the text tells them (`outputs`).
    pub fn outputs(&self) -> QueryOutputs {
        crate::outputs::of_query(&self.query)
    }
}

/// A SQL function's body: one expression (a scalar subquery is one), the
/// text after `RETURN`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedBody {
    expr: Expr,
    parameters: Vec<String>,
    /// The body printed back from its parse tree.
    pub normalized: String,
}

impl ParsedBody {
    /// What the body reads (its parameters are not columns), names resolved
    /// against `default` (the function's own catalog and schema).
    pub fn reads(&self, default: &SchemaRef) -> Result<Reads, String> {
        reads::of_expr(&self.expr, &self.parameters, default)
    }
}

/// Parses a view's query, or says why it is not exactly one query.
pub fn parse_query(text: &str) -> Result<ParsedQuery, String> {
    sized(text)?;
    let text = text.to_string();
    on_parse_stack(move || query_of(&text))
}

/// Runs `f` on a thread of its own with a stack large enough to drop what
/// the parser builds from `MAX_QUERY_BYTES` of text (a left-deep chain of
/// tens of thousands of operators), so no caller's stack overflows.
fn on_parse_stack<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let worker = std::thread::Builder::new()
        .name("sql-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(f)
        .map_err(|e| format!("could not be parsed: no thread to parse it on ({e})"))?;
    worker
        .join()
        .unwrap_or_else(|_| Err("could not be parsed: the parser failed".into()))
}

fn query_of(text: &str) -> Result<ParsedQuery, String> {
    let dialect = DatabricksDialect {};
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(QUERY_RECURSION_LIMIT)
        .try_with_sql(text)
        .map_err(|e| format!("is not SQL: {e}"))?;
    let query = parser.parse_query().map_err(|e| not_parsed(e, "query"))?;
    at_end(&mut parser, "query")?;
    checked(&*query)?;
    let normalized = query.to_string();
    Ok(ParsedQuery { query, normalized })
}

/// Parses a function body (its parameters named, in any case), or says why
/// it is not exactly one expression.
pub fn parse_body(text: &str, parameters: &[String]) -> Result<ParsedBody, String> {
    sized(text)?;
    let text = text.to_string();
    let parameters = parameters.to_vec();
    on_parse_stack(move || body_of(&text, &parameters))
}

fn body_of(text: &str, parameters: &[String]) -> Result<ParsedBody, String> {
    let dialect = DatabricksDialect {};
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(QUERY_RECURSION_LIMIT)
        .try_with_sql(text)
        .map_err(|e| format!("is not SQL: {e}"))?;
    let expr = parser
        .parse_expr()
        .map_err(|e| not_parsed(e, "expression"))?;
    at_end(&mut parser, "expression")?;
    checked(&expr)?;
    let normalized = expr.to_string();
    Ok(ParsedBody {
        expr,
        parameters: parameters.iter().map(|p| p.to_lowercase()).collect(),
        normalized,
    })
}

/// A view's query printed back from its parse tree.
pub fn normalize_query(text: &str) -> Result<String, String> {
    parse_query(text).map(|q| q.normalized)
}

/// A function body printed back from its parse tree.
pub fn normalize_expression(text: &str) -> Result<String, String> {
    parse_body(text, &[]).map(|b| b.normalized)
}

fn sized(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("is empty".into());
    }
    if text.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "is {} bytes long; the limit is {MAX_QUERY_BYTES} (64 KiB)",
            text.len()
        ));
    }
    Ok(())
}

fn not_parsed(e: ParserError, what: &str) -> String {
    match e {
        ParserError::RecursionLimitExceeded => format!(
            "nests deeper than {QUERY_RECURSION_LIMIT} levels (subqueries, parentheses, calls); flatten it, e.g. with WITH"
        ),
        e => format!("is not one SQL {what}: {e}"),
    }
}

/// Nothing may follow the query or expression: not a `;`, not a second statement.
fn at_end(parser: &mut Parser, what: &str) -> Result<(), String> {
    let next = parser.peek_token();
    match next.token {
        Token::EOF => Ok(()),
        Token::SemiColon => Err(format!(
            "holds a ';' after the {what}; write exactly one {what}, without ';' and nothing after it"
        )),
        other => Err(format!(
            "is more than one {what}: '{other}' follows it; write exactly one {what}"
        )),
    }
}

/// Refuses statements inside the tree (`WITH … INSERT`), `SELECT … INTO`,
/// trees over `MAX_QUERY_NODES` and expressions deeper than `MAX_QUERY_DEPTH`.
fn checked<T: Visit>(tree: &T) -> Result<(), String> {
    struct Check {
        nodes: usize,
        depth: usize,
    }
    impl Visitor for Check {
        type Break = String;
        fn pre_visit_statement(&mut self, s: &Statement) -> ControlFlow<String> {
            let first = s.to_string();
            let word = first.split_whitespace().next().unwrap_or("a statement");
            ControlFlow::Break(format!(
                "holds a {word} statement; write one query (SELECT or WITH … SELECT) that changes nothing"
            ))
        }
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<String> {
            match &*q.body {
                SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => {
                    ControlFlow::Break(
                        "holds a statement that changes data; write one query (SELECT or WITH … SELECT)".into(),
                    )
                }
                _ => ControlFlow::Continue(()),
            }
        }
        fn pre_visit_select(&mut self, s: &sqlparser::ast::Select) -> ControlFlow<String> {
            if s.into.is_some() {
                return ControlFlow::Break(
                    "holds SELECT … INTO, which writes a table; leave INTO out".into(),
                );
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<String> {
            self.depth += 1;
            if self.depth > MAX_QUERY_DEPTH {
                return ControlFlow::Break(format!(
                    "nests expressions more than {MAX_QUERY_DEPTH} deep (a long chain of operators such as a OR b OR …); use IN (…) or split it"
                ));
            }
            self.nodes += 1;
            if self.nodes > MAX_QUERY_NODES {
                return ControlFlow::Break(format!(
                    "holds more than {MAX_QUERY_NODES} expressions; split it (e.g. into views over views)"
                ));
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<String> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
    }
    let mut c = Check { nodes: 0, depth: 0 };
    match tree.visit(&mut c) {
        ControlFlow::Break(why) => Err(why),
        ControlFlow::Continue(()) => Ok(()),
    }
}
