//! One expression: parsed, measured, and refused when it is not a condition.

use std::ops::ControlFlow;

use crate::check::Walk;
use crate::{MAX_EXPRESSION_BYTES, ParsedExpr, RECURSION_LIMIT};
use sqlparser::ast::{BinaryOperator, DataType as SqlType, Expr, UnaryOperator, Value, Visit};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

/// What kind of expression is parsed, for the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Using,
    Check,
    /// A generated column's expression: held to the `using:` rules.
    Generated,
    /// A column's default: no column, and the time and session functions a
    /// default is for (`current_timestamp()`) allowed.
    Default,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Using => "a `using:`",
            Kind::Check => "a CHECK",
            Kind::Generated => "a generation expression",
            Kind::Default => "a default",
        }
    }
}

/// The one expression `text` holds, and the parser's complaint otherwise.
pub(super) fn parse_one(text: &str) -> Result<(Expr, ()), String> {
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

pub(super) fn parse(text: &str, kind: Kind) -> Result<(Expr, ParsedExpr), String> {
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
    if matches!(kind, Kind::Generated | Kind::Default) {
        // these are stored and compared as written, not printed back: a comment
        // would reach the DDL and could swallow the rest of its line
        refuse_comments(text)?;
    }
    let mut v = Walk {
        kind,
        columns: Vec::new(),
        depth: 0,
        nodes: 0,
        repeats: Vec::new(),
        row_bytes: 0,
        functions: Vec::new(),
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
            row_bytes: v.row_bytes,
            functions: v.functions,
        },
    ))
}

/// A comment anywhere in the text (outside string literals) is refused.
fn refuse_comments(text: &str) -> Result<(), String> {
    use sqlparser::tokenizer::{Tokenizer, Whitespace};
    let tokens = Tokenizer::new(&GenericDialect {}, text)
        .tokenize()
        .map_err(|e| format!("is not SQL: {e}"))?;
    let comment = tokens.iter().any(|t| {
        matches!(
            t,
            Token::Whitespace(
                Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_)
            )
        )
    });
    if comment {
        return Err("holds a comment ('--' or '/* */'); write the expression alone".into());
    }
    Ok(())
}

pub(super) fn strip_nested(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// What the top of a CHECK is, when it is certainly not true or false.
pub(super) fn not_a_condition(expr: &Expr) -> Option<String> {
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
