//! User SQL expressions (`using:` and CHECK constraints), parsed, never
//! spliced: exactly one expression over the row's columns, printed back from
//! the parse tree, so what a backend runs and stores is what the plan shows and
//! nothing a user wrote can close a parenthesis and add select items.
//!
//! Both kinds are held to the same rules (`parse_using`, `parse_check`): only
//! built-in, deterministic scalar functions from an allow list (no aggregates,
//! window functions, generators, subqueries, lambdas or user functions), a
//! literal size under `MAX_SIZE_ARGUMENT` for the functions that make a value
//! as large as an argument says, at most `MAX_EXPRESSION_DEPTH` levels and
//! `MAX_EXPRESSION_NODES` nodes of the parsed tree.
//!
//! One file per step: parse.rs (one expression, parsed and measured),
//! allow.rs (the allow list and the lists of what is refused), check.rs (the
//! walk over the parse tree that applies them), compare.rs (`same_expression`),
//! lake.rs (what of the allow list the lake's engine, DataFusion, lacks).
//!
//! A view's query and a SQL function's body are held to other rules
//! (query.rs: one query or one expression, no statement, bounded; printed
//! back as the normalised form plans compare) and say what they read
//! (reads.rs: relations, user functions and columns, three-part resolved).

mod allow;
mod check;
mod compare;
mod lake;
mod outputs;
mod parse;
mod query;
#[cfg(test)]
mod query_tests;
mod reads;
#[cfg(test)]
mod tests;

pub use allow::ALLOWED_FUNCTIONS;
pub use compare::same_expression;
pub use lake::{
    LAKE_ALIASES, LAKE_EQUIVALENTS, LAKE_MISSING_FUNCTIONS, LakeFunctionProblem, LakeUse,
    lake_function_problem,
};
use parse::{Kind, not_a_condition, parse};
pub use query::{
    MAX_QUERY_BYTES, MAX_QUERY_NODES, ParsedBody, ParsedQuery, QUERY_RECURSION_LIMIT,
    normalize_expression, normalize_query, parse_body, parse_query,
};
pub use reads::{ColumnRead, Reads};

/// The longest expression accepted (bytes).
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// How deep the parsed tree of an expression may be (each operator, call,
/// parenthesis and operand is one level).
pub const MAX_EXPRESSION_DEPTH: usize = 32;

/// How many nodes the parsed tree of an expression may hold.
pub const MAX_EXPRESSION_NODES: usize = 1000;

/// The largest size a size-making function (`repeat`, `lpad`, …) may be given.
pub const MAX_SIZE_ARGUMENT: u64 = 1_000_000;

/// How deep the parser itself may recurse (above `MAX_EXPRESSION_DEPTH`, so
/// that the tree's depth is what is reported).
pub(crate) const RECURSION_LIMIT: usize = 64;

/// A parsed expression: a `using:` or a CHECK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedExpr {
    /// The expression printed back from its parse tree.
    pub sql: String,
    /// The columns it reads (the first part of each identifier), as written.
    pub columns: Vec<String>,
    /// The column the whole expression is, when it is a bare column (a CHECK
    /// over a column that is not boolean is refused by validation, which
    /// knows the types).
    pub bare_column: Option<String>,
    /// What its size-making calls (`repeat`, `lpad`, …) may make for one row: the
    /// sum of their sizes, each times the repeats around it (per byte of the value
    /// repeated, for `repeat` of a column). 0 when it has none. A lake rewrite
    /// sizes its batches by it, so such an expression never builds a batch over
    /// its memory budget.
    pub row_bytes: u64,
    /// The functions it calls, lowercase, each once, in the order first called
    /// (what a lake target refuses by name: `lake_function_problem`).
    pub functions: Vec<String>,
}

/// A parsed `using:` expression.
pub type UsingExpr = ParsedExpr;

/// Parses a `using:` expression, or says why it is not exactly one
/// deterministic, bounded expression over columns.
pub fn parse_using(text: &str) -> Result<ParsedExpr, String> {
    parse(text, Kind::Using).map(|(_, p)| p)
}

/// Parses a generated column's expression by the rules of `parse_using`.
pub fn parse_generated(text: &str) -> Result<ParsedExpr, String> {
    parse(text, Kind::Generated).map(|(_, p)| p)
}

/// Parses a column's default: one expression by the rules of `parse_using`,
/// reading no column, where the time and session functions a default is for
/// (`current_timestamp()`, `current_user()`, …) are allowed.
pub fn parse_default(text: &str) -> Result<ParsedExpr, String> {
    let (_, parsed) = parse(text, Kind::Default)?;
    if let Some(c) = parsed.columns.first() {
        return Err(format!(
            "reads the column {c}; a default is a value of its own (a literal or a function such as current_timestamp()), never another column"
        ));
    }
    Ok(parsed)
}

/// Parses a CHECK constraint's expression by the rules of `parse_using`, and
/// refuses what is certainly not a condition (a number, a string, arithmetic).
pub fn parse_check(text: &str) -> Result<ParsedExpr, String> {
    let (expr, parsed) = parse(text, Kind::Check)?;
    if let Some(why) = not_a_condition(&expr) {
        return Err(format!(
            "is {why}, not a condition; a CHECK must be true or false for each row"
        ));
    }
    Ok(parsed)
}
