//! The walk over the parse tree: column references, depth and size, and
//! what an expression over one row cannot hold.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectNamePart, Query,
    UnaryOperator, Value, Visitor,
};

use crate::allow::{
    AGGREGATES, ALLOWED_FUNCTIONS, DEFAULT_ONLY, GENERATORS, NOT_DETERMINISTIC, SIZED,
    WINDOW_FUNCTIONS,
};
use crate::parse::{Kind, strip_nested};
use crate::{MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_NODES, MAX_SIZE_ARGUMENT};
use delta_operator_core::model::suggest::{edit_distance, nearest};

/// Walks the parse tree: collects column references, measures it, and stops
/// at what an expression over one row cannot hold.
pub(super) struct Walk {
    pub(super) kind: Kind,
    pub(super) columns: Vec<String>,
    pub(super) depth: usize,
    pub(super) nodes: usize,
    /// The enclosing calls that repeat the value inside them (`repeat`,
    /// `array_repeat`): the depth of each and its size. A value made inside is
    /// made that many times over, so the sizes multiply.
    pub(super) repeats: Vec<(usize, u64)>,
    /// The bytes the size-making calls may make for one row, in all (`ParsedExpr::row_bytes`).
    pub(super) row_bytes: u64,
    /// The functions it calls, lowercase, each once, in order (`ParsedExpr::functions`).
    pub(super) functions: Vec<String>,
}

impl Visitor for Walk {
    type Break = String;

    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<String> {
        ControlFlow::Break(format!(
            "holds a subquery; {} may only read the row's own columns",
            self.kind.name()
        ))
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<String> {
        self.nodes += 1;
        self.depth += 1;
        if self.depth > MAX_EXPRESSION_DEPTH {
            return ControlFlow::Break(format!(
                "nests more than {MAX_EXPRESSION_DEPTH} levels deep; simplify it (split a CHECK into several)"
            ));
        }
        if self.nodes > MAX_EXPRESSION_NODES {
            return ControlFlow::Break(format!(
                "has more than {MAX_EXPRESSION_NODES} parts; simplify it (split a CHECK into several)"
            ));
        }
        match expr {
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                ControlFlow::Break(format!(
                    "holds a subquery; {} may only read the row's own columns",
                    self.kind.name()
                ))
            }
            Expr::Wildcard(_) | Expr::QualifiedWildcard(_, _) => {
                ControlFlow::Break("holds '*'; name the columns it reads".into())
            }
            Expr::Lambda(_) => ControlFlow::Break(format!(
                "holds a lambda ('->'); {} may not use higher-order functions",
                self.kind.name()
            )),
            Expr::Function(f) => match function_problem(f, self.kind) {
                Some(why) => ControlFlow::Break(why),
                None => {
                    let name = match f.name.0.as_slice() {
                        [ObjectNamePart::Identifier(i)] => i.value.to_lowercase(),
                        _ => f.name.to_string().to_lowercase(),
                    };
                    if !self.functions.contains(&name) {
                        self.functions.push(name);
                    }
                    self.sized_call(f)
                }
            },
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(text) if text.contains(['\'', '\\']) => {
                    ControlFlow::Break(format!(
                        "holds the string '{}' with a quote or backslash, which Spark and DataFusion read differently (Spark joins 'a''b' into 'ab' and reads backslash escapes); build it with chr(39) for ' and chr(92) for \\, e.g. concat('it', chr(39), 's')",
                        v.value
                    ))
                }
                Value::SingleQuotedString(_)
                | Value::Number(..)
                | Value::Boolean(_)
                | Value::Null => ControlFlow::Continue(()),
                other => ControlFlow::Break(format!(
                    "holds the literal {other}, a form {} does not accept; write strings in single quotes",
                    self.kind.name()
                )),
            },
            Expr::Identifier(id) if id.quote_style == Some('"') => double_quoted(id),
            Expr::CompoundIdentifier(ids) if ids.iter().any(|i| i.quote_style == Some('"')) => {
                double_quoted(&ids[0])
            }
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

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<String> {
        if self.repeats.last().is_some_and(|(d, _)| *d == self.depth) {
            self.repeats.pop();
        }
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

impl Walk {
    /// A size-making call (its size already checked on its own) inside calls that
    /// repeat it: `repeat(repeat('x', 1000000), 1000000)` makes 10^12 bytes a row
    /// though each size is under the cap, so the sizes along the nesting multiply,
    /// and their product is held to the same cap.
    fn sized_call(&mut self, f: &Function) -> ControlFlow<String> {
        let name = f.name.to_string().to_lowercase();
        let Some(size) = sized_argument(f, &name) else {
            return ControlFlow::Continue(());
        };
        let product = self
            .repeats
            .iter()
            .fold(size, |p, (_, s)| p.saturating_mul((*s).max(1)));
        if product > MAX_SIZE_ARGUMENT {
            return ControlFlow::Break(format!(
                "nests {name} (size {size}) inside repeat or array_repeat, whose sizes multiply to {product}; together they may make at most {MAX_SIZE_ARGUMENT} (each repeats the value made inside it)"
            ));
        }
        self.row_bytes = self.row_bytes.saturating_add(product);
        if REPEATING.contains(&name.as_str()) {
            self.repeats.push((self.depth, size));
        }
        ControlFlow::Continue(())
    }
}

/// The functions whose value is the one inside them, repeated (the others cut or pad to their size).
const REPEATING: &[&str] = &["repeat", "array_repeat"];

/// The literal size of a size-making call (`SIZED`), if `f` is one.
fn sized_argument(f: &Function, name: &str) -> Option<u64> {
    let (_, at) = SIZED.iter().find(|(s, _)| *s == name)?;
    let FunctionArguments::List(l) = &f.args else {
        return None;
    };
    match l.args.get(*at)? {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e))
        | FunctionArg::Named {
            arg: FunctionArgExpr::Expr(e),
            ..
        }
        | FunctionArg::ExprNamed {
            arg: FunctionArgExpr::Expr(e),
            ..
        } => literal_size(e),
        _ => None,
    }
}

/// `"name"`: a string to Spark, a column to DataFusion.
pub(super) fn double_quoted(id: &Ident) -> ControlFlow<String> {
    ControlFlow::Break(format!(
        "holds \"{}\" in double quotes, which Spark reads as a string and DataFusion as a column; quote a column name with backticks (`{}`), a string with single quotes",
        id.value, id.value
    ))
}

/// Why a function call cannot be in an expression, if it cannot.
pub(super) fn function_problem(f: &Function, kind: Kind) -> Option<String> {
    let what = kind.name();
    let shown = f.name.to_string();
    let [ObjectNamePart::Identifier(ident)] = f.name.0.as_slice() else {
        return Some(format!(
            "calls '{shown}', a qualified (user-defined) function; {what} may call only built-in functions"
        ));
    };
    let name = ident.value.to_lowercase();
    let n = name.as_str();
    if f.over.is_some() || WINDOW_FUNCTIONS.contains(&n) {
        return Some(format!(
            "calls the window function {shown}; {what} reads one row, not a window of rows"
        ));
    }
    if AGGREGATES.contains(&n) || f.filter.is_some() || !f.within_group.is_empty() {
        return Some(format!(
            "calls the aggregate {shown}; {what} reads one row, not a group of rows"
        ));
    }
    if kind == Kind::Default && DEFAULT_ONLY.contains(&n) {
        return None;
    }
    if NOT_DETERMINISTIC.contains(&n) {
        return Some(format!(
            "calls {shown}, which is not deterministic (its answer depends on when, where or by whom the row is read, not on the row); {what} must give the same answer for the same row every time (delta-rs evaluates a CHECK on every write, Databricks on every insert)"
        ));
    }
    if GENERATORS.contains(&n) {
        return Some(format!(
            "calls the generator {shown}, which makes rows or arrays as large as its arguments say; {what} may not use generators"
        ));
    }
    if !ALLOWED_FUNCTIONS.contains(&n) {
        let hint = match nearest(
            ALLOWED_FUNCTIONS.iter().copied(),
            |k| edit_distance(k, n),
            |_| 2,
        ) {
            Some(k) => format!(" (did you mean {k}?)"),
            None => String::new(),
        };
        return Some(format!(
            "calls '{shown}', which is not among the functions accepted in {what}{hint}: only built-in, deterministic scalar functions that both Delta and Databricks evaluate (see the README)"
        ));
    }
    let args = match &f.args {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::Subquery(_) => {
            return Some(format!(
                "holds a subquery; {what} may only read the row's own columns"
            ));
        }
        FunctionArguments::List(l) => {
            if !l.clauses.is_empty() || l.duplicate_treatment.is_some() {
                return Some(format!(
                    "calls {shown} with clauses ({}); {what} calls functions with plain arguments",
                    l
                ));
            }
            l.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(x)
                    | FunctionArg::Named { arg: x, .. }
                    | FunctionArg::ExprNamed { arg: x, .. } => x,
                })
                .collect()
        }
    };
    if args.iter().any(|a| !matches!(a, FunctionArgExpr::Expr(_))) {
        return Some(format!("calls {shown} with '*'; name the columns it reads"));
    }
    if let Some((_, at)) = SIZED.iter().find(|(s, _)| *s == n) {
        let size = match args.get(*at) {
            Some(FunctionArgExpr::Expr(e)) => literal_size(e),
            _ => None,
        };
        match size {
            Some(s) if s <= MAX_SIZE_ARGUMENT => {}
            Some(s) => {
                return Some(format!(
                    "calls {shown} with size {s}; the size argument of {n} may be at most {MAX_SIZE_ARGUMENT} (it makes a value that large for every row)"
                ));
            }
            None => {
                return Some(format!(
                    "calls {shown} with a size that is not a literal number; the size argument (argument {}) of {n} must be a literal number of at most {MAX_SIZE_ARGUMENT}, so the value it makes is bounded",
                    at + 1
                ));
            }
        }
    }
    None
}

/// A literal whole number (a negative one counts as 0: the value is empty).
pub(super) fn literal_size(e: &Expr) -> Option<u64> {
    match strip_nested(e) {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse::<u64>().ok().or_else(|| {
                // digits too many for u64 are certainly over the cap
                n.chars().all(|c| c.is_ascii_digit()).then_some(u64::MAX)
            }),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => literal_size(expr).map(|_| 0),
        _ => None,
    }
}
