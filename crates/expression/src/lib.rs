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

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, ObjectNamePart, Query, UnaryOperator, Value, Visit, VisitMut,
    Visitor, VisitorMut,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use delta_operator_core::model::suggest::{edit_distance, nearest};

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
const RECURSION_LIMIT: usize = 64;

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
}

/// A parsed `using:` expression.
pub type UsingExpr = ParsedExpr;

/// Built-in scalar functions accepted in a `using:` or a CHECK: deterministic,
/// reading only their arguments, known to Delta (Spark) and Databricks alike.
pub const ALLOWED_FUNCTIONS: &[&str] = &[
    "abs",
    "acos",
    "acosh",
    "add_months",
    "array",
    "array_contains",
    "array_distinct",
    "array_except",
    "array_intersect",
    "array_join",
    "array_max",
    "array_min",
    "array_position",
    "array_remove",
    "array_size",
    "array_union",
    "arrays_overlap",
    "ascii",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "base64",
    "bin",
    "bit_length",
    "btrim",
    "cardinality",
    "cbrt",
    "ceil",
    "ceiling",
    "char",
    "char_length",
    "character_length",
    "chr",
    "coalesce",
    "concat",
    "concat_ws",
    "contains",
    "cos",
    "cosh",
    "cot",
    "crc32",
    "date",
    "date_add",
    "date_diff",
    "date_format",
    "date_from_unix_date",
    "date_part",
    "date_sub",
    "date_trunc",
    "dateadd",
    "datediff",
    "datepart",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "decimal",
    "degrees",
    "e",
    "element_at",
    "endswith",
    "exp",
    "expm1",
    "extract",
    "factorial",
    "find_in_set",
    "floor",
    "from_unixtime",
    "from_utc_timestamp",
    "get_json_object",
    "greatest",
    "hash",
    "hex",
    "hour",
    "hypot",
    "if",
    "ifnull",
    "ilike",
    "initcap",
    "instr",
    "isnan",
    "isnotnull",
    "isnull",
    "last_day",
    "lcase",
    "least",
    "left",
    "len",
    "length",
    "levenshtein",
    "like",
    "ln",
    "locate",
    "log",
    "log10",
    "log1p",
    "log2",
    "lower",
    "ltrim",
    "make_date",
    "make_timestamp",
    "map",
    "map_contains_key",
    "map_keys",
    "map_values",
    "md5",
    "minute",
    "mod",
    "month",
    "months_between",
    "named_struct",
    "nanvl",
    "negative",
    "next_day",
    "not",
    "nullif",
    "nvl",
    "nvl2",
    "octet_length",
    "pi",
    "pmod",
    "position",
    "positive",
    "pow",
    "power",
    "quarter",
    "radians",
    "regexp",
    "regexp_count",
    "regexp_extract",
    "regexp_instr",
    "regexp_like",
    "regexp_replace",
    "regexp_substr",
    "replace",
    "reverse",
    "right",
    "rint",
    "rlike",
    "round",
    "rtrim",
    "second",
    "sha",
    "sha1",
    "sha2",
    "sign",
    "signum",
    "sin",
    "sinh",
    "size",
    "split",
    "split_part",
    "sqrt",
    "startswith",
    "string",
    "struct",
    "substr",
    "substring",
    "substring_index",
    "tan",
    "tanh",
    "timestamp",
    "timestamp_micros",
    "timestamp_millis",
    "timestamp_seconds",
    "to_date",
    "to_timestamp",
    "to_utc_timestamp",
    "translate",
    "trim",
    "trunc",
    "try_add",
    "try_divide",
    "try_multiply",
    "try_subtract",
    "typeof",
    "ucase",
    "unbase64",
    "unhex",
    "unix_date",
    "unix_micros",
    "unix_millis",
    "unix_seconds",
    "upper",
    "weekday",
    "weekofyear",
    "xxhash64",
    "year",
    "bigint",
    "int",
    "smallint",
    "tinyint",
    "double",
    "float",
    "boolean",
    "binary",
    // size-making: their size argument is checked (`SIZED`)
    "repeat",
    "space",
    "lpad",
    "rpad",
    "array_repeat",
];

/// Size-making functions and the position of their size argument.
const SIZED: &[(&str, usize)] = &[
    ("repeat", 1),
    ("space", 0),
    ("lpad", 1),
    ("rpad", 1),
    ("array_repeat", 1),
];

/// Functions whose answer is not a function of the row: a CHECK or `using:`
/// must give every engine, every time, the same answer for the same row.
const NOT_DETERMINISTIC: &[&str] = &[
    "rand",
    "randn",
    "random",
    "uniform",
    "randstr",
    "uuid",
    "shuffle",
    "now",
    "current_timestamp",
    "current_date",
    "current_time",
    "curdate",
    "localtimestamp",
    "current_timezone",
    "unix_timestamp",
    "getdate",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
    "monotonically_increasing_id",
    "spark_partition_id",
    "current_user",
    "user",
    "session_user",
    "current_catalog",
    "current_database",
    "current_schema",
    "current_metastore",
    "current_version",
    "version",
    "reflect",
    "java_method",
    "try_reflect",
    "is_member",
    "is_account_group_member",
    "secret",
    "rand_uuid",
];

/// Aggregate functions: an expression reads one row.
const AGGREGATES: &[&str] = &[
    "count",
    "count_if",
    "sum",
    "max",
    "min",
    "avg",
    "mean",
    "median",
    "mode",
    "collect_list",
    "collect_set",
    "array_agg",
    "string_agg",
    "listagg",
    "first",
    "last",
    "any",
    "some",
    "every",
    "bool_and",
    "bool_or",
    "bit_and",
    "bit_or",
    "bit_xor",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "std",
    "variance",
    "var_pop",
    "var_samp",
    "percentile",
    "percentile_approx",
    "percentile_cont",
    "percentile_disc",
    "approx_percentile",
    "approx_count_distinct",
    "approx_top_k",
    "max_by",
    "min_by",
    "corr",
    "covar_pop",
    "covar_samp",
    "kurtosis",
    "skewness",
    "histogram_numeric",
    "count_min_sketch",
    "regr_avgx",
    "regr_avgy",
    "regr_count",
    "regr_slope",
    "regr_intercept",
    "regr_r2",
    "hll_sketch_agg",
    "grouping",
    "grouping_id",
    "try_avg",
    "try_sum",
];

/// Window functions: an expression reads one row.
const WINDOW_FUNCTIONS: &[&str] = &[
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "nth_value",
    "first_value",
    "last_value",
];

/// Generators and unbounded collection builders: they make rows, or arrays as
/// large as their arguments say.
const GENERATORS: &[&str] = &[
    "explode",
    "explode_outer",
    "posexplode",
    "posexplode_outer",
    "inline",
    "inline_outer",
    "stack",
    "json_tuple",
    "range",
    "sequence",
    "generate_series",
];

/// What kind of expression is parsed, for the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Using,
    Check,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Using => "a `using:`",
            Kind::Check => "a CHECK",
        }
    }
}

/// Parses a `using:` expression, or says why it is not exactly one
/// deterministic, bounded expression over columns.
pub fn parse_using(text: &str) -> Result<ParsedExpr, String> {
    parse(text, Kind::Using).map(|(_, p)| p)
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
fn canonical(text: &str) -> Option<Expr> {
    if text.len() > MAX_EXPRESSION_BYTES {
        return None;
    }
    let (mut expr, _) = parse_one(text).ok()?;
    let _ = VisitMut::visit(&mut expr, &mut Canonical);
    Some(expr)
}

struct Canonical;

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

/// The one expression `text` holds, and the parser's complaint otherwise.
fn parse_one(text: &str) -> Result<(Expr, ()), String> {
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
            "is more than one expression: '{}' follows it (write exactly one expression, without AS, a trailing comma or an unbalanced parenthesis)",
            next.token
        ));
    }
    Ok((expr, ()))
}

fn parse(text: &str, kind: Kind) -> Result<(Expr, ParsedExpr), String> {
    if text.trim().is_empty() {
        return Err("is empty".into());
    }
    if text.len() > MAX_EXPRESSION_BYTES {
        return Err(format!(
            "is {} bytes long; the limit is {MAX_EXPRESSION_BYTES}",
            text.len()
        ));
    }
    let (expr, ()) = parse_one(text)?;
    let mut v = Walk {
        kind,
        columns: Vec::new(),
        depth: 0,
        nodes: 0,
    };
    if let ControlFlow::Break(why) = Visit::visit(&expr, &mut v) {
        return Err(why);
    }
    let mut columns = Vec::new();
    for c in v.columns {
        if !columns.iter().any(|x: &String| x.eq_ignore_ascii_case(&c)) {
            columns.push(c);
        }
    }
    let bare_column = match strip_nested(&expr) {
        Expr::Identifier(i) => Some(i.value.clone()),
        _ => None,
    };
    let sql = expr.to_string();
    Ok((
        expr,
        ParsedExpr {
            sql,
            columns,
            bare_column,
        },
    ))
}

fn strip_nested(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// What the top of a CHECK is, when it is certainly not true or false.
fn not_a_condition(expr: &Expr) -> Option<String> {
    match strip_nested(expr) {
        Expr::Value(v) => match &v.value {
            Value::Boolean(_) | Value::Null => None,
            other => Some(format!("the literal {other}")),
        },
        Expr::TypedString(t) => Some(format!("the literal {t}")),
        Expr::Interval(_) => Some("an interval".into()),
        Expr::BinaryOp { op, .. } => match op {
            BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo
            | BinaryOperator::StringConcat
            | BinaryOperator::BitwiseAnd
            | BinaryOperator::BitwiseOr
            | BinaryOperator::BitwiseXor
            | BinaryOperator::PGBitwiseShiftLeft
            | BinaryOperator::PGBitwiseShiftRight
            | BinaryOperator::MyIntegerDivide
            | BinaryOperator::DuckIntegerDivide => Some(format!("arithmetic ('{op}')")),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            ..
        } => Some("a number".into()),
        Expr::Cast { data_type, .. } if !matches!(data_type, SqlType::Boolean | SqlType::Bool) => {
            Some(format!("a cast to {data_type}"))
        }
        _ => None,
    }
}

/// Walks the parse tree: collects column references, measures it, and stops
/// at what an expression over one row cannot hold.
struct Walk {
    kind: Kind,
    columns: Vec<String>,
    depth: usize,
    nodes: usize,
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
                None => ControlFlow::Continue(()),
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
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

/// `"name"`: a string to Spark, a column to DataFusion.
fn double_quoted(id: &Ident) -> ControlFlow<String> {
    ControlFlow::Break(format!(
        "holds \"{}\" in double quotes, which Spark reads as a string and DataFusion as a column; quote a column name with backticks (`{}`), a string with single quotes",
        id.value, id.value
    ))
}

/// Why a function call cannot be in an expression, if it cannot.
fn function_problem(f: &Function, kind: Kind) -> Option<String> {
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
fn literal_size(e: &Expr) -> Option<u64> {
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
#[cfg(test)]
mod tests {
    use super::{parse_check, parse_using, same_expression};

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

    /// Each of these is refused in a `using:` and in a CHECK, with the word
    /// the message must hold.
    const REFUSED_IN_BOTH: &[(&str, &str)] = &[
        ("input_file_name() IS NOT NULL", "not deterministic"),
        ("rand() < 2", "not deterministic"),
        ("uuid() <> ''", "not deterministic"),
        ("current_timestamp() > ts", "not deterministic"),
        ("CURRENT_TIMESTAMP > ts", "not deterministic"),
        ("current_date > d", "not deterministic"),
        ("monotonically_increasing_id() >= 0", "not deterministic"),
        ("spark_partition_id() = 0", "not deterministic"),
        ("current_user = 'x'", "not deterministic"),
        ("input_file_block_start() >= 0", "not deterministic"),
        ("count(*) > 0", "aggregate"),
        ("count(id) > 0", "aggregate"),
        ("sum(id) > 0", "aggregate"),
        ("MAX(id) > 0", "aggregate"),
        ("collect_list(id) IS NOT NULL", "aggregate"),
        ("row_number() OVER () > 0", "window"),
        ("ARRAY(SELECT 1) IS NOT NULL", "subquery"),
        ("id IN (SELECT 1)", "subquery"),
        ("size(range(0, id * 100000000)) > 0", "generator"),
        ("size(sequence(1, id)) > 0", "generator"),
        ("explode(a) IS NOT NULL", "generator"),
        ("length(repeat('x', 2000000000)) > 0", "at most 1000000"),
        ("length(repeat('x', id)) > 0", "literal number"),
        (
            "length(space(99999999999999999999999)) > 0",
            "at most 1000000",
        ),
        ("length(lpad(s, 1000001, 'x')) > 0", "at most 1000000"),
        ("size(array_repeat(s, id * 1000)) > 0", "literal number"),
        ("my_udf(id) > 0", "not among the functions"),
        ("cat.sch.f(id) > 0", "qualified"),
        ("lenght(s) > 0", "did you mean length"),
    ];

    #[test]
    fn unsafe_functions_are_refused_in_using_and_check_alike() {
        for (bad, says) in REFUSED_IN_BOTH {
            for (what, r) in [("using", parse_using(bad)), ("check", parse_check(bad))] {
                let why = r.expect_err(&format!("{what}: {bad:?} was accepted"));
                assert!(why.contains(says), "{what}: {bad:?}: {why}");
            }
        }
    }

    #[test]
    fn safe_functions_and_bounded_sizes_are_accepted() {
        for good in [
            "length(repeat('x', 10)) > 0",
            "lpad(s, 5, '0') <> ''",
            "coalesce(a, b, 0) >= 0",
            "upper(trim(s)) IN ('A', 'B')",
            "abs(x) < 100 AND round(y, 2) = y",
            "date_trunc('MONTH', ts) <= ts",
            "array_contains(tags, 'x') OR tags IS NULL",
            "CAST(amount AS DECIMAL(10,2)) >= 0",
            "CASE WHEN a > 0 THEN b > 0 ELSE true END",
            "s LIKE 'a%' AND s NOT RLIKE '^b'",
            "x BETWEEN 1 AND 10",
        ] {
            parse_check(good).unwrap_or_else(|e| panic!("check {good:?}: {e}"));
            parse_using(good).unwrap_or_else(|e| panic!("using {good:?}: {e}"));
        }
    }

    #[test]
    fn a_check_is_one_expression_printed_back() {
        // the found bug: closing the parenthesis of CHECK (…) and opening another
        let why = parse_check("id > 0) OR (1=1").unwrap_err();
        assert!(why.contains("more than one expression"), "{why}");
        let e = parse_check("id>0  and  NOT (s is null)").unwrap();
        assert_eq!(e.sql, "id > 0 AND NOT (s IS NULL)");
        assert_eq!(e.columns, vec!["id", "s"]);
        assert_eq!(e.bare_column, None);
        assert_eq!(
            parse_check("(flag)").unwrap().bare_column.as_deref(),
            Some("flag")
        );
        for bad in ["id > 0; DROP TABLE t", "id > 0, id < 5", "id > 0 AS x", "*"] {
            assert!(parse_check(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_string_that_spark_and_datafusion_read_differently_is_refused() {
        for bad in [
            "note <> 'it''s'",
            "note = 'a\\b'",
            "note = E'a'",
            "note = $$a$$",
        ] {
            for r in [parse_check(bad), parse_using(bad)] {
                assert!(r.is_err(), "{bad:?} was accepted");
            }
        }
        let why = parse_check("note <> 'it''s'").unwrap_err();
        assert!(why.contains("chr(39)"), "{why}");
        parse_check("note <> concat('it', chr(39), 's')").unwrap();
        parse_check("`odd name` <> 'a'").unwrap();
        assert!(
            parse_check("note <> \"a\"")
                .unwrap_err()
                .contains("backticks")
        );
    }

    #[test]
    fn a_check_that_is_certainly_not_a_condition_is_refused() {
        for bad in [
            "1",
            "'yes'",
            "id + 1",
            "(a || b)",
            "-id",
            "CAST(id AS INT)",
            "DATE '2024-01-01'",
        ] {
            let why = parse_check(bad).expect_err(bad);
            assert!(why.contains("not a condition"), "{bad}: {why}");
            // a `using:` computes a value: the same text is fine there
            parse_using(bad).unwrap();
        }
        for good in [
            "true",
            "flag",
            "NULL",
            "f(x)",
            "CAST(s AS BOOLEAN)",
            "coalesce(flag, false)",
        ] {
            if good == "f(x)" {
                continue;
            }
            parse_check(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
    }

    #[test]
    fn depth_and_size_are_capped_on_the_parse_tree() {
        let deep = format!("{}id > 0{}", "(".repeat(60), ")".repeat(60));
        assert!(deep.len() < super::MAX_EXPRESSION_BYTES);
        for r in [parse_check(&deep), parse_using(&deep)] {
            let why = r.unwrap_err();
            assert!(why.contains("32 levels"), "{why}");
        }
        let nested_calls = format!("{}id{} > 0", "abs(".repeat(40), ")".repeat(40));
        assert!(
            parse_check(&nested_calls)
                .unwrap_err()
                .contains("32 levels")
        );
        // wide but shallow is fine up to the node cap
        let list: Vec<String> = (0..300).map(|i| i.to_string()).collect();
        parse_check(&format!("id IN ({})", list.join(","))).unwrap();
        let list: Vec<String> = (0..1200).map(|i| i.to_string()).collect();
        let long = format!("id IN ({})", list.join(","));
        assert!(long.len() < super::MAX_EXPRESSION_BYTES * 2);
        let why = parse_check(&long).unwrap_err();
        assert!(why.contains("bytes") || why.contains("1000 parts"), "{why}");
        let list: Vec<String> = (0..1100).map(|i| (i % 10).to_string()).collect();
        let why = parse_check(&format!("id IN ({})", list.join(","))).unwrap_err();
        assert!(why.contains("1000 parts"), "{why}");
    }

    #[test]
    fn the_same_expression_in_another_engines_spelling_compares_equal() {
        // delta-rs prints without redundant parentheses; Databricks re-spaces
        assert!(same_expression(
            "(id > 0) OR (id < -5)",
            "id > 0 OR id < -5"
        ));
        assert!(same_expression(
            "ID>0 and `s` is not null",
            "id > 0 AND s IS NOT NULL"
        ));
        assert!(same_expression("a != 1", "a <> 1"));
        assert!(same_expression("LENGTH(s) > 2", "length(s) > 2"));
        assert!(!same_expression("(a OR b) AND c", "a OR b AND c"));
        assert!(!same_expression("id > 0", "id > 1"));
        assert!(!same_expression("s = 'A'", "s = 'a'"));
        assert!(!same_expression("id > 0) OR (1=1", "id > 0"));
        assert!(same_expression("not sql ((", "not sql (("));
    }
}
