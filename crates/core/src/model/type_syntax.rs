//! The string notation of Delta/Spark types (`decimal(18,2)`,
//! `struct<a:int not null comment 'x'>`) and the nested YAML/JSON notation
//! (`{"array": {"element": "int", "containsNull": false}}`).
//!
//! The printer emits one canonical lower-case form; the parser accepts what
//! Spark DDL accepts (aliases, any case, optional `:` in struct fields) and
//! reads the canonical form back exactly. Nullability of array elements and
//! map values is not part of the string form: it always parses as true.

use std::fmt;

use serde_json::{Map, Value};

use super::names;
use super::types::{DataType, StructField};

/// A type that failed to parse. `offset` is a byte offset into the parsed
/// string (for the nested notation: into the innermost type string, else 0).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", did_you_mean(.suggestion))]
pub struct TypeError {
    pub message: String,
    pub offset: usize,
    pub suggestion: Option<String>,
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean '{s}'?"),
        None => String::new(),
    }
}

impl TypeError {
    fn new(offset: usize, message: impl Into<String>) -> Self {
        TypeError {
            message: message.into(),
            offset,
            suggestion: None,
        }
    }

    /// Prefix the message with where in a nested type the error sits.
    fn within(self, context: &str) -> Self {
        TypeError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

/// The deepest nesting of struct, array and map a type may have. Measured
/// (docs/reliability.md): delta-rs cannot open a table whose structs nest 42
/// deep (serde_json's recursion limit on the schema), pyarrow cannot read
/// maps nested 32 deep or arrays 50 deep, and Spark overflows its stack past
/// about 117 nested structs. 30 leaves room for every reader. The parsers
/// stop here instead of recursing further, so no input can exhaust the stack.
pub const MAX_TYPE_NESTING: usize = 30;

/// The longest type string read (bytes): a struct of thousands of fields fits.
pub const MAX_TYPE_BYTES: usize = 256 * 1024;

fn too_deep(offset: usize) -> TypeError {
    TypeError::new(
        offset,
        format!(
            "the type nests struct, array and map deeper than {MAX_TYPE_NESTING} levels, more than Delta readers can read back"
        ),
    )
}

// ---------------------------------------------------------------------------
// Printing

/// Words that would be misread as field modifiers, so are always quoted.
const RESERVED: &[&str] = &["not", "null", "comment"];

/// `name` as written in a struct type: bare when it is a plain identifier,
/// else in backticks with inner backticks doubled.
pub fn quote_identifier_if_needed(name: &str) -> String {
    let mut chars = name.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name));
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

/// A Spark string literal: single quotes, only `'` and `\` escaped, so every
/// other character (newlines, unicode) is kept verbatim and reads back as is.
fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Decimal { precision, scale } => write!(f, "decimal({precision},{scale})"),
            DataType::Char { length } => write!(f, "char({length})"),
            DataType::Varchar { length } => write!(f, "varchar({length})"),
            DataType::Array { element, .. } => write!(f, "array<{element}>"),
            DataType::Map { key, value, .. } => write!(f, "map<{key},{value}>"),
            DataType::Struct { fields } => {
                f.write_str("struct<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(
                        f,
                        "{}:{}",
                        quote_identifier_if_needed(&field.name),
                        field.data_type
                    )?;
                    if !field.nullable {
                        f.write_str(" not null")?;
                    }
                    if let Some(comment) = &field.comment {
                        write!(f, " comment {}", quote_string(comment))?;
                    }
                }
                f.write_str(">")
            }
            // Every other variant is a bare keyword.
            scalar => f.write_str(scalar.kind_name()),
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing

/// Every type word the parser knows: canonical names first, so they win ties
/// when suggesting, then aliases.
#[rustfmt::skip]
const TYPE_WORDS: &[&str] = &[
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "char",
    "varchar", "string", "binary", "date", "timestamp", "timestamp_ntz", "variant", "void",
    "array", "map", "struct", "bool", "byte", "short", "integer", "long", "real", "dec",
    "numeric", "timestamp_ltz",
];

/// The known type word closest to `word` (case-insensitive): within 2 edits
/// (at most half the word's length, so `a` suggests nothing), or else a known
/// word that `word` (3+ characters) is a prefix of.
pub fn nearest_type_name(word: &str) -> Option<&'static str> {
    let word = word.to_ascii_lowercase();
    let max = 2.min(word.chars().count() / 2);
    let by_distance = TYPE_WORDS
        .iter()
        .map(|&known| (edit_distance(&word, known), known))
        .filter(|&(d, _)| d <= max)
        .min_by_key(|&(d, _)| d) // min_by_key keeps the first of equals
        .map(|(_, known)| known);
    by_distance.or_else(|| {
        (word.len() >= 3).then(|| TYPE_WORDS.iter().copied().find(|k| k.starts_with(&word)))?
    })
}

/// The shared Levenshtein distance, with a swap of two adjacent characters
/// counting as one edit (`bigitn` → `bigint` is 1, `itn` → `int` is 1): the
/// least of the plain distance and, after one or two adjacent swaps, the swaps
/// plus the distance left. Two swaps suffice, as suggestions are at most 2 edits
/// away; past that (or when the lengths differ by more) the plain distance is
/// returned.
fn edit_distance(a: &str, b: &str) -> usize {
    let plain = names::edit_distance(a, b);
    if plain <= 1 || a.chars().count().abs_diff(b.chars().count()) > 2 {
        return plain;
    }
    let mut best = plain;
    for once in adjacent_swaps(a) {
        best = best.min(1 + names::edit_distance(&once, b));
        for twice in adjacent_swaps(&once) {
            best = best.min(2 + names::edit_distance(&twice, b));
        }
    }
    best
}

/// `s` with each pair of adjacent, differing characters swapped in turn.
fn adjacent_swaps(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    (1..chars.len())
        .filter(|&i| chars[i - 1] != chars[i])
        .map(|i| {
            let mut swapped = chars.clone();
            swapped.swap(i - 1, i);
            swapped.into_iter().collect()
        })
        .collect()
}

/// Parse a type in Spark DDL notation, e.g. `map<string, array<decimal(18,2)>>`.
pub fn parse_type(s: &str) -> Result<DataType, TypeError> {
    if s.len() > MAX_TYPE_BYTES {
        return Err(TypeError::new(
            0,
            format!(
                "the type is {} bytes long; the limit is {MAX_TYPE_BYTES}",
                s.len()
            ),
        ));
    }
    let mut p = Parser {
        src: s,
        pos: 0,
        depth: 0,
    };
    let t = p.data_type()?;
    p.skip_ws();
    if p.pos < s.len() {
        return Err(p.error(format!("unexpected {} after the type", p.found())));
    }
    Ok(t)
}

/// A recursive-descent parser over `src`; `pos` is a byte offset.
struct Parser<'a> {
    src: &'a str,
    pos: usize,
    /// How many types enclose the one being parsed.
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// What is at the cursor, for messages.
    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("'{c}'"),
            None => "end of input".to_string(),
        }
    }

    fn error(&self, message: impl Into<String>) -> TypeError {
        TypeError::new(self.pos, message)
    }

    /// Consume `c` (after whitespace) if it is next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        let hit = self.peek() == Some(c);
        if hit {
            self.bump();
        }
        hit
    }

    fn expect(&mut self, c: char) -> Result<(), TypeError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{c}' but found {}", self.found())))
        }
    }

    /// A run of `[A-Za-z0-9_]` (Spark's bare identifier), possibly empty.
    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.bump();
        }
        &self.src[start..self.pos]
    }

    /// Consume the keyword `kw` (any case) if it is the next word.
    fn eat_keyword(&mut self, kw: &str) -> bool {
        let save = self.pos;
        self.skip_ws();
        if self.word().eq_ignore_ascii_case(kw) {
            return true;
        }
        self.pos = save;
        false
    }

    fn number(&mut self) -> Result<(u32, usize), TypeError> {
        self.skip_ws();
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        let digits = &self.src[start..self.pos];
        if digits.is_empty() {
            return Err(self.error(format!("expected a number but found {}", self.found())));
        }
        let n = digits
            .parse()
            .map_err(|_| TypeError::new(start, format!("number {digits} is too large")))?;
        Ok((n, start))
    }

    /// A type, at most `MAX_TYPE_NESTING` containers deep.
    fn data_type(&mut self) -> Result<DataType, TypeError> {
        if self.depth > MAX_TYPE_NESTING {
            return Err(too_deep(self.pos));
        }
        self.depth += 1;
        let t = self.data_type_here();
        self.depth -= 1;
        t
    }

    fn data_type_here(&mut self) -> Result<DataType, TypeError> {
        self.skip_ws();
        let start = self.pos;
        let word = self.word();
        if word.is_empty() {
            return Err(self.error(format!("expected a type but found {}", self.found())));
        }
        Ok(match word.to_ascii_lowercase().as_str() {
            "boolean" | "bool" => DataType::Boolean,
            "tinyint" | "byte" => DataType::Byte,
            "smallint" | "short" => DataType::Short,
            "int" | "integer" => DataType::Int,
            "bigint" | "long" => DataType::Long,
            "float" | "real" => DataType::Float,
            "double" => DataType::Double,
            "decimal" | "dec" | "numeric" => self.decimal_args()?,
            "char" => DataType::Char {
                length: self.length_arg("char")?,
            },
            "varchar" => DataType::Varchar {
                length: self.length_arg("varchar")?,
            },
            "string" => DataType::String,
            "binary" => DataType::Binary,
            "date" => DataType::Date,
            "timestamp" | "timestamp_ltz" => DataType::Timestamp,
            "timestamp_ntz" => DataType::TimestampNtz,
            "variant" => DataType::Variant,
            "void" => DataType::Void,
            "array" => {
                self.expect('<')?;
                let element = self.data_type()?;
                self.expect('>')?;
                DataType::Array {
                    element: Box::new(element),
                    contains_null: true,
                }
            }
            "map" => {
                self.expect('<')?;
                let key = self.data_type()?;
                self.expect(',')?;
                let value = self.data_type()?;
                self.expect('>')?;
                DataType::Map {
                    key: Box::new(key),
                    value: Box::new(value),
                    value_contains_null: true,
                }
            }
            "struct" => self.struct_body()?,
            _ => {
                let mut e = TypeError::new(start, format!("unknown type '{word}'"));
                e.suggestion = nearest_type_name(word).map(str::to_string);
                return Err(e);
            }
        })
    }

    /// `[(p[,s])]` after `decimal`; Spark's default is decimal(10,0).
    fn decimal_args(&mut self) -> Result<DataType, TypeError> {
        if !self.eat('(') {
            return Ok(DataType::Decimal {
                precision: 10,
                scale: 0,
            });
        }
        let (precision, p_at) = self.number()?;
        let (scale, s_at) = if self.eat(',') {
            self.number()?
        } else {
            (0, self.pos)
        };
        self.expect(')')?;
        if !(1..=38).contains(&precision) {
            let msg = format!("decimal precision must be between 1 and 38, not {precision}");
            return Err(TypeError::new(p_at, msg));
        }
        if scale > precision {
            let msg = format!("decimal scale {scale} exceeds its precision {precision}");
            return Err(TypeError::new(s_at, msg));
        }
        Ok(DataType::Decimal {
            precision: precision as u8,
            scale: scale as u8,
        })
    }

    /// The mandatory `(n)` after `char`/`varchar`.
    fn length_arg(&mut self, kind: &str) -> Result<u32, TypeError> {
        if !self.eat('(') {
            return Err(self.error(format!("{kind} needs a length, e.g. {kind}(10)")));
        }
        let (length, at) = self.number()?;
        self.expect(')')?;
        if length == 0 {
            return Err(TypeError::new(
                at,
                format!("{kind} length must be at least 1"),
            ));
        }
        Ok(length)
    }

    /// `<field, ...>` after `struct`; `struct<>` is the empty struct.
    fn struct_body(&mut self) -> Result<DataType, TypeError> {
        self.expect('<')?;
        let mut fields = Vec::new();
        if self.eat('>') {
            return Ok(DataType::Struct { fields });
        }
        loop {
            fields.push(self.field()?);
            if self.eat('>') {
                return Ok(DataType::Struct { fields });
            }
            if !self.eat(',') {
                return Err(self.error(format!("expected ',' or '>' but found {}", self.found())));
            }
        }
    }

    /// `name[:] type [not null] [comment 'text']`, modifiers in either order.
    fn field(&mut self) -> Result<StructField, TypeError> {
        self.skip_ws();
        let name = if self.peek() == Some('`') {
            self.quoted_identifier()?
        } else {
            let word = self.word();
            if word.is_empty() {
                return Err(self.error(format!("expected a field name but found {}", self.found())));
            }
            word.to_string()
        };
        self.eat(':'); // optional, as in Spark
        let data_type = self.data_type()?;
        let (mut nullable, mut comment) = (true, None);
        loop {
            let at = self.pos;
            if self.eat_keyword("not") {
                if !self.eat_keyword("null") {
                    self.skip_ws();
                    return Err(self.error(format!(
                        "expected NULL after NOT but found {}",
                        self.found()
                    )));
                }
                if !nullable {
                    return Err(TypeError::new(at, "NOT NULL given twice"));
                }
                nullable = false;
            } else if self.eat_keyword("comment") {
                if comment.is_some() {
                    return Err(TypeError::new(at, "COMMENT given twice"));
                }
                comment = Some(self.string_literal()?);
            } else {
                break;
            }
        }
        Ok(StructField {
            name,
            data_type,
            nullable,
            comment,
        })
    }

    /// A backticked name; a doubled backtick stands for one.
    fn quoted_identifier(&mut self) -> Result<String, TypeError> {
        let start = self.pos;
        self.bump();
        let mut name = String::new();
        loop {
            match self.bump() {
                None => return Err(TypeError::new(start, "unterminated quoted identifier")),
                Some('`') if self.peek() == Some('`') => {
                    self.bump();
                    name.push('`');
                }
                Some('`') => return Ok(name),
                Some(c) => name.push(c),
            }
        }
    }

    /// A single- or double-quoted string with Spark's backslash escapes.
    fn string_literal(&mut self) -> Result<String, TypeError> {
        self.skip_ws();
        let start = self.pos;
        let quote = match self.peek() {
            Some(q @ ('\'' | '"')) => q,
            _ => {
                return Err(self.error(format!(
                    "expected a quoted string but found {}",
                    self.found()
                )));
            }
        };
        self.bump();
        let unterminated = || TypeError::new(start, "unterminated string");
        let mut out = String::new();
        loop {
            match self.bump().ok_or_else(unterminated)? {
                c if c == quote => return Ok(out),
                '\\' => {
                    let at = self.pos - 1;
                    out.push(match self.bump().ok_or_else(unterminated)? {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        '0' => '\0',
                        'u' => self.unicode_escape(at)?,
                        other => other, // \' \" \\ and anything else: the character itself
                    });
                }
                c => out.push(c),
            }
        }
    }

    /// The four hex digits of a `\uXXXX` escape.
    fn unicode_escape(&mut self, at: usize) -> Result<char, TypeError> {
        let hex = self.src.get(self.pos..self.pos + 4).unwrap_or("");
        let c = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
        let c = c.ok_or_else(|| TypeError::new(at, "invalid \\u escape: expected 4 hex digits"))?;
        self.pos += 4;
        Ok(c)
    }
}

// ---------------------------------------------------------------------------
// Nested notation (YAML/JSON)

/// Read a type in the nested notation: a string in DDL notation, or
/// `{"struct": [fields]}`, `{"array": type}`,
/// `{"array": {"element": type, "containsNull": bool}}` or
/// `{"map": {"key": type, "value": type, "valueContainsNull": bool}}`.
pub fn type_from_value(v: &Value) -> Result<DataType, TypeError> {
    value_at(v, 0)
}

/// A type in the nested notation `depth` containers deep; a type string
/// inside it is parsed with the depth already used.
fn value_at(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    if depth > MAX_TYPE_NESTING {
        return Err(too_deep(0));
    }
    let obj = match v {
        Value::String(s) => {
            if s.len() > MAX_TYPE_BYTES {
                return Err(TypeError::new(
                    0,
                    format!(
                        "the type is {} bytes long; the limit is {MAX_TYPE_BYTES}",
                        s.len()
                    ),
                ));
            }
            let mut p = Parser {
                src: s,
                pos: 0,
                depth,
            };
            let t = p.data_type()?;
            p.skip_ws();
            if p.pos < s.len() {
                return Err(p.error(format!("unexpected {} after the type", p.found())));
            }
            return Ok(t);
        }
        Value::Object(obj) => obj,
        other => {
            let msg = format!(
                "expected a type string or object, found {}",
                json_kind(other)
            );
            return Err(TypeError::new(0, msg));
        }
    };
    let mut entries = obj.iter();
    let (Some((kind, inner)), None) = (entries.next(), entries.next()) else {
        let keys = obj
            .keys()
            .map(|k| format!("'{k}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!(
            "a nested type needs exactly one key of 'struct', 'array' or 'map', found [{keys}]"
        );
        return Err(TypeError::new(0, msg));
    };
    match kind.as_str() {
        "struct" => struct_from_value(inner, depth + 1),
        "array" => array_from_value(inner, depth + 1).map_err(|e| e.within("array")),
        "map" => map_from_value(inner, depth + 1).map_err(|e| e.within("map")),
        other => Err(TypeError::new(
            0,
            format!("unknown key '{other}' in a nested type; expected 'struct', 'array' or 'map'"),
        )),
    }
}

fn struct_from_value(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    let Value::Array(items) = v else {
        return Err(TypeError::new(
            0,
            format!("struct: expected a list of fields, found {}", json_kind(v)),
        ));
    };
    let fields = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            field_from_value(item, depth).map_err(|e| e.within(&format!("struct field #{}", i + 1)))
        })
        .collect::<Result<_, _>>()?;
    Ok(DataType::Struct { fields })
}

fn field_from_value(v: &Value, depth: usize) -> Result<StructField, TypeError> {
    let obj = as_object(v, &["name", "type", "nullable", "comment"])?;
    let name = match obj.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(TypeError::new(
                0,
                format!("'name' must be a string, found {}", json_kind(other)),
            ));
        }
        None => return Err(TypeError::new(0, "missing 'name'")),
    };
    let in_field = |e: TypeError| e.within(&format!("field '{name}'"));
    let data_type = value_at(required(obj, "type")?, depth).map_err(in_field)?;
    let nullable = optional_bool(obj, "nullable")?.unwrap_or(true);
    let comment = match obj.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(in_field(TypeError::new(
                0,
                format!("'comment' must be a string, found {}", json_kind(other)),
            )));
        }
    };
    Ok(StructField {
        name,
        data_type,
        nullable,
        comment,
    })
}

fn array_from_value(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    // The long form is recognised by its keys; anything else is the element type.
    let long_form = matches!(v, Value::Object(o) if o.contains_key("element") || o.contains_key("containsNull"));
    if !long_form {
        let element = value_at(v, depth)?;
        return Ok(DataType::Array {
            element: Box::new(element),
            contains_null: true,
        });
    }
    let obj = as_object(v, &["element", "containsNull"])?;
    let element = value_at(required(obj, "element")?, depth).map_err(|e| e.within("element"))?;
    let contains_null = optional_bool(obj, "containsNull")?.unwrap_or(true);
    Ok(DataType::Array {
        element: Box::new(element),
        contains_null,
    })
}

fn map_from_value(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    let obj = as_object(v, &["key", "value", "valueContainsNull"])?;
    let key = value_at(required(obj, "key")?, depth).map_err(|e| e.within("key"))?;
    let value = value_at(required(obj, "value")?, depth).map_err(|e| e.within("value"))?;
    let value_contains_null = optional_bool(obj, "valueContainsNull")?.unwrap_or(true);
    Ok(DataType::Map {
        key: Box::new(key),
        value: Box::new(value),
        value_contains_null,
    })
}

/// `v` as an object whose keys are all in `allowed`; unknown keys are named.
fn as_object<'v>(v: &'v Value, allowed: &[&str]) -> Result<&'v Map<String, Value>, TypeError> {
    let Value::Object(obj) = v else {
        return Err(TypeError::new(
            0,
            format!("expected an object, found {}", json_kind(v)),
        ));
    };
    let unknown: Vec<String> = obj
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| format!("'{k}'"))
        .collect();
    if !unknown.is_empty() {
        let msg = format!(
            "unknown key(s) {}; expected {}",
            unknown.join(", "),
            allowed.join(", ")
        );
        return Err(TypeError::new(0, msg));
    }
    Ok(obj)
}

fn required<'v>(obj: &'v Map<String, Value>, key: &str) -> Result<&'v Value, TypeError> {
    obj.get(key)
        .ok_or_else(|| TypeError::new(0, format!("missing '{key}'")))
}

fn optional_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, TypeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(TypeError::new(
            0,
            format!("'{key}' must be true or false, found {}", json_kind(other)),
        )),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn p(s: &str) -> DataType {
        parse_type(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn err(s: &str) -> TypeError {
        parse_type(s).expect_err(s)
    }

    fn dec(precision: u8, scale: u8) -> DataType {
        DataType::Decimal { precision, scale }
    }

    fn array(element: DataType) -> DataType {
        DataType::Array {
            element: Box::new(element),
            contains_null: true,
        }
    }

    fn map(key: DataType, value: DataType) -> DataType {
        DataType::Map {
            key: Box::new(key),
            value: Box::new(value),
            value_contains_null: true,
        }
    }

    fn field(name: &str, data_type: DataType) -> StructField {
        StructField {
            name: name.into(),
            data_type,
            nullable: true,
            comment: None,
        }
    }

    fn strukt(fields: Vec<StructField>) -> DataType {
        DataType::Struct { fields }
    }

    /// The nested notation of `t`: the DDL string whenever that says everything
    /// (no struct inside, all null flags true), else nested objects, omitting
    /// `nullable`/`containsNull`/`valueContainsNull` when true. Test-only: nothing
    /// in the operator writes this notation (`import` writes DDL strings), but
    /// it feeds `nested_notation_round_trips`, which checks that
    /// `type_from_value` reads every type back, null flags and mixed forms included.
    fn type_to_value(t: &DataType) -> Value {
        if string_form_is_enough(t) {
            return Value::String(t.to_string());
        }
        match t {
            DataType::Struct { fields } => {
                let fields = fields
                    .iter()
                    .map(|f| {
                        let mut obj = Map::new();
                        obj.insert("name".into(), json!(f.name));
                        obj.insert("type".into(), type_to_value(&f.data_type));
                        if !f.nullable {
                            obj.insert("nullable".into(), json!(false));
                        }
                        if let Some(c) = &f.comment {
                            obj.insert("comment".into(), json!(c));
                        }
                        Value::Object(obj)
                    })
                    .collect();
                json!({ "struct": Value::Array(fields) })
            }
            DataType::Array {
                element,
                contains_null: true,
            } => json!({ "array": type_to_value(element) }),
            DataType::Array {
                element,
                contains_null: false,
            } => {
                json!({ "array": { "element": type_to_value(element), "containsNull": false } })
            }
            DataType::Map {
                key,
                value,
                value_contains_null,
            } => {
                let mut obj = Map::new();
                obj.insert("key".into(), type_to_value(key));
                obj.insert("value".into(), type_to_value(value));
                if !value_contains_null {
                    obj.insert("valueContainsNull".into(), json!(false));
                }
                json!({ "map": Value::Object(obj) })
            }
            scalar => Value::String(scalar.to_string()),
        }
    }

    fn string_form_is_enough(t: &DataType) -> bool {
        match t {
            DataType::Struct { .. } => false,
            DataType::Array {
                element,
                contains_null,
            } => *contains_null && string_form_is_enough(element),
            DataType::Map {
                key,
                value,
                value_contains_null,
            } => *value_contains_null && string_form_is_enough(key) && string_form_is_enough(value),
            _ => true,
        }
    }

    /// The primitives with their canonical spelling.
    fn primitives() -> Vec<(DataType, &'static str)> {
        vec![
            (DataType::Boolean, "boolean"),
            (DataType::Byte, "tinyint"),
            (DataType::Short, "smallint"),
            (DataType::Int, "int"),
            (DataType::Long, "bigint"),
            (DataType::Float, "float"),
            (DataType::Double, "double"),
            (dec(18, 2), "decimal(18,2)"),
            (DataType::Char { length: 3 }, "char(3)"),
            (DataType::Varchar { length: 255 }, "varchar(255)"),
            (DataType::String, "string"),
            (DataType::Binary, "binary"),
            (DataType::Date, "date"),
            (DataType::Timestamp, "timestamp"),
            (DataType::TimestampNtz, "timestamp_ntz"),
            (DataType::Variant, "variant"),
            (DataType::Void, "void"),
        ]
    }

    #[test]
    fn every_primitive_prints_and_parses() {
        for (t, s) in primitives() {
            assert_eq!(t.to_string(), s);
            assert_eq!(p(s), t);
            assert_eq!(p(&s.to_uppercase()), t, "upper-case {s}");
            assert_eq!(p(&format!("  {s}\n")), t, "padded {s}");
        }
    }

    #[test]
    fn every_alias_folds_to_its_canonical_type() {
        let cases = [
            ("long", DataType::Long),
            ("integer", DataType::Int),
            ("short", DataType::Short),
            ("byte", DataType::Byte),
            ("real", DataType::Float),
            ("bool", DataType::Boolean),
            ("dec", dec(10, 0)),
            ("numeric", dec(10, 0)),
            ("dec(5,1)", dec(5, 1)),
            ("NUMERIC(38, 38)", dec(38, 38)),
            ("timestamp_ltz", DataType::Timestamp),
            ("Long", DataType::Long),
        ];
        for (s, t) in cases {
            assert_eq!(p(s), t, "{s}");
        }
    }

    #[test]
    fn decimal_defaults_and_bounds() {
        assert_eq!(p("decimal"), dec(10, 0));
        assert_eq!(p("decimal(7)"), dec(7, 0));
        assert_eq!(p("decimal ( 7 , 3 )"), dec(7, 3));
        assert_eq!(p("decimal(1,0)"), dec(1, 0));
        assert_eq!(p("decimal(38,0)"), dec(38, 0));

        let e = err("decimal(0,0)");
        assert_eq!(e.offset, 8);
        assert!(e.message.contains("precision"), "{e}");
        assert_eq!(err("decimal(39)").offset, 8);
        let e = err("decimal(5,6)");
        assert_eq!(e.offset, 10);
        assert!(e.message.contains("scale 6 exceeds"), "{e}");
        assert_eq!(
            err("decimal(99999999999)").message,
            "number 99999999999 is too large"
        );
        assert_eq!(err("decimal(5,)").offset, 10);
        assert_eq!(
            err("decimal(5").message,
            "expected ')' but found end of input"
        );
    }

    #[test]
    fn char_and_varchar_need_a_positive_length() {
        assert_eq!(p("CHAR( 10 )"), DataType::Char { length: 10 });
        assert_eq!(p("varchar(1)"), DataType::Varchar { length: 1 });
        assert!(err("char").message.contains("needs a length"));
        assert!(err("varchar(0)").message.contains("at least 1"));
    }

    #[test]
    fn nested_types() {
        let t = p("map<string, array<struct<a:int, b string not null comment 'x'>>>");
        let mut b = field("b", DataType::String);
        b.nullable = false;
        b.comment = Some("x".into());
        assert_eq!(
            t,
            map(
                DataType::String,
                array(strukt(vec![field("a", DataType::Int), b]))
            )
        );
        assert_eq!(
            t.to_string(),
            "map<string,array<struct<a:int,b:string not null comment 'x'>>>"
        );
        assert_eq!(
            p(" ARRAY < Map < INT , Long > > "),
            array(map(DataType::Int, DataType::Long))
        );
        assert_eq!(p("struct<>"), strukt(vec![]));
        assert_eq!(p("struct< >").to_string(), "struct<>");
        assert_eq!(
            p("array<array<array<void>>>").to_string(),
            "array<array<array<void>>>"
        );
    }

    #[test]
    fn field_modifiers() {
        let t = p(
            "struct<A: INT NOT NULL COMMENT \"dq\", b:int comment 'c' not null, c:decimal not null>",
        );
        let fields = t.struct_fields().unwrap();
        assert_eq!(fields[0].name, "A", "names keep their case");
        assert!(!fields[0].nullable);
        assert_eq!(fields[0].comment.as_deref(), Some("dq"));
        assert!(!fields[1].nullable);
        assert_eq!(fields[1].comment.as_deref(), Some("c"));
        assert_eq!(fields[2].data_type, dec(10, 0));
        assert!(!fields[2].nullable);
        assert!(
            err("struct<a:int not>")
                .message
                .contains("expected NULL after NOT")
        );
        assert!(
            err("struct<a:int not null not null>")
                .message
                .contains("twice")
        );
        assert!(
            err("struct<a:int comment>")
                .message
                .contains("expected a quoted string")
        );
    }

    #[test]
    fn identifier_quoting() {
        for plain in ["a", "_", "A_1", "snake_case", "int", "struct"] {
            assert_eq!(quote_identifier_if_needed(plain), plain);
        }
        let quoted = [
            ("", "``"),
            ("1a", "`1a`"),
            ("a b", "`a b`"),
            ("a`b", "`a``b`"),
            ("`", "````"),
            ("not", "`not`"),
            ("NULL", "`NULL`"),
            ("Comment", "`Comment`"),
            ("é", "`é`"),
            ("a-b", "`a-b`"),
        ];
        for (name, want) in quoted {
            assert_eq!(quote_identifier_if_needed(name), want);
        }
        // Spark also accepts bare digit-leading names.
        assert_eq!(p("struct<1a:int>").struct_fields().unwrap()[0].name, "1a");
    }

    #[test]
    fn hostile_names_and_comments_round_trip() {
        let names = [
            "a`b",
            "``",
            "",
            " ",
            "x:y",
            "a,b",
            "<>",
            "it's",
            "\"q\"",
            "\\",
            "${x}",
            "line\nbreak",
            "日本語",
            "not",
            "comment",
        ];
        let comments = [
            "it's",
            "back\\slash",
            "\\'",
            "\"",
            "${x}",
            "multi\nline\r\n",
            "tab\t",
            "日本語 ✓",
            "",
            "'",
            "`",
            "\0",
        ];
        let fields: Vec<StructField> = names
            .iter()
            .zip(comments.iter().cycle())
            .map(|(n, c)| StructField {
                comment: Some(c.to_string()),
                ..field(n, DataType::Int)
            })
            .collect();
        let t = strukt(fields);
        let printed = t.to_string();
        assert_eq!(p(&printed), t, "{printed}");
    }

    #[test]
    fn comment_escapes() {
        let t = strukt(vec![StructField {
            comment: Some("it's a \\ test".into()),
            ..field("a", DataType::Int)
        }]);
        assert_eq!(t.to_string(), r"struct<a:int comment 'it\'s a \\ test'>");
        let c = |s: &str| p(s).struct_fields().unwrap()[0].comment.clone().unwrap();
        assert_eq!(c(r"struct<a:int comment 'x\ny\tz'>"), "x\ny\tz");
        assert_eq!(c(r#"struct<a:int comment "say \"hi\"">"#), "say \"hi\"");
        assert_eq!(c(r"struct<a:int comment '\u00e9\q'>"), "éq");
        let e = err(r"struct<a:int comment 'x\u12'>");
        assert!(e.message.contains("\\u escape"), "{e}");
        let e = err("struct<a:int comment 'open>");
        assert_eq!((e.message.as_str(), e.offset), ("unterminated string", 21));
        let e = err("struct<`open:int>");
        assert_eq!(
            (e.message.as_str(), e.offset),
            ("unterminated quoted identifier", 7)
        );
    }

    #[test]
    fn syntax_errors_carry_offsets() {
        let cases = [
            ("", 0, "expected a type but found end of input"),
            ("int int", 4, "unexpected 'i' after the type"),
            ("array<int>>", 10, "unexpected '>' after the type"),
            ("array<int", 9, "expected '>' but found end of input"),
            ("array int", 6, "expected '<' but found 'i'"),
            ("map<int>", 7, "expected ',' but found '>'"),
            (
                "struct<a:int b:int>",
                13,
                "expected ',' or '>' but found 'b'",
            ),
            ("struct<a:int,>", 13, "expected a field name but found '>'"),
            ("struct<:int>", 7, "expected a field name but found ':'"),
            ("array<>", 6, "expected a type but found '>'"),
            ("map<string, strng>", 12, "unknown type 'strng'"),
        ];
        for (s, offset, message) in cases {
            let e = err(s);
            assert_eq!((e.message.as_str(), e.offset), (message, offset), "{s:?}");
        }
    }

    #[test]
    fn unknown_types_suggest_the_nearest_name() {
        let e = err("strng");
        assert_eq!(e.suggestion.as_deref(), Some("string"));
        assert_eq!(
            e.to_string(),
            "unknown type 'strng'; did you mean 'string'?"
        );
        let e = err("array<bigitn>");
        assert_eq!((e.offset, e.suggestion.as_deref()), (6, Some("bigint")));
        assert_eq!(
            err("timestamp_nz").suggestion.as_deref(),
            Some("timestamp_ntz")
        );
        assert_eq!(err("Integr").suggestion.as_deref(), Some("integer"));

        assert_eq!(nearest_type_name("timest"), Some("timestamp"), "prefix");
        assert_eq!(nearest_type_name("varc"), Some("varchar"), "prefix");
        assert_eq!(nearest_type_name("doubel"), Some("double"));
        assert_eq!(nearest_type_name("in"), Some("int"));
        assert_eq!(nearest_type_name("STRIN"), Some("string"));
        assert_eq!(nearest_type_name("a"), None, "too short to guess");
        assert_eq!(nearest_type_name("geography"), None);
        assert_eq!(nearest_type_name("interval"), None);
        let e = err("geography");
        assert_eq!(e.suggestion, None);
        assert_eq!(e.to_string(), "unknown type 'geography'");
    }

    #[test]
    fn adjacent_swaps_count_as_one_edit() {
        assert_eq!(edit_distance("bigitn", "bigint"), 1);
        assert_eq!(edit_distance("itn", "int"), 1);
        assert_eq!(edit_distance("srtnig", "string"), 2, "two swaps");
        assert_eq!(edit_distance("dobule", "double"), 1);
        assert_eq!(edit_distance("strng", "string"), 1);
        assert_eq!(edit_distance("date", "date"), 0);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("abc", "abcdefgh"), 5, "plain past 2 edits");
        // plain Levenshtein would make these 2 edits away, too far for 3 letters
        assert_eq!(nearest_type_name("itn"), Some("int"));
        assert_eq!(nearest_type_name("mpa"), Some("map"));
        assert_eq!(nearest_type_name("srtnig"), Some("string"));
    }

    #[test]
    fn nested_notation() {
        let v = json!({"struct": [
            {"name": "id", "type": "bigint", "nullable": false, "comment": "key"},
            {"name": "tags", "type": {"array": {"element": "string", "containsNull": false}}},
            {"name": "attrs", "type": {"map": {"key": "string", "value": "array<int>", "valueContainsNull": false}}},
            {"name": "inner", "type": {"struct": [{"name": "x", "type": "decimal(5,2)"}]}},
        ]});
        let t = type_from_value(&v).unwrap();
        let want = strukt(vec![
            StructField {
                nullable: false,
                comment: Some("key".into()),
                ..field("id", DataType::Long)
            },
            field(
                "tags",
                DataType::Array {
                    element: Box::new(DataType::String),
                    contains_null: false,
                },
            ),
            field(
                "attrs",
                DataType::Map {
                    key: Box::new(DataType::String),
                    value: Box::new(array(DataType::Int)),
                    value_contains_null: false,
                },
            ),
            field("inner", strukt(vec![field("x", dec(5, 2))])),
        ]);
        assert_eq!(t, want);
        assert_eq!(type_to_value(&t), v);
        assert_eq!(type_to_value(&array(DataType::Int)), json!("array<int>"));
        assert_eq!(
            type_from_value(&json!({"array": "int"})).unwrap(),
            array(DataType::Int)
        );
        assert_eq!(
            type_from_value(&json!({"array": {"element": "int"}})).unwrap(),
            array(DataType::Int)
        );
        assert_eq!(
            type_from_value(&json!({"array": {"array": "int"}})).unwrap(),
            array(array(DataType::Int))
        );
    }

    #[test]
    fn nesting_is_capped_without_recursing_past_the_cap() {
        let deep = |n: usize| format!("{}int{}", "struct<a:".repeat(n), ">".repeat(n));
        assert!(parse_type(&deep(MAX_TYPE_NESTING)).is_ok());
        assert!(
            err(&deep(MAX_TYPE_NESTING + 1))
                .message
                .contains("deeper than")
        );
        // far past the cap, as a hostile manifest would: an error, not a stack overflow
        assert!(err(&deep(20_000)).message.contains("deeper than"));
        assert!(err(&deep(100_000)).message.contains("bytes long"));
        assert!(
            err(&format!(
                "{}int{}",
                "array<".repeat(30_000),
                ">".repeat(30_000)
            ))
            .message
            .contains("deeper than")
        );
        let mut v = json!("int");
        for _ in 0..MAX_TYPE_NESTING + 1 {
            v = json!({ "array": v });
        }
        assert!(
            type_from_value(&v)
                .unwrap_err()
                .message
                .contains("deeper than")
        );
        // a string inside the nested notation counts the levels around it
        let mixed = json!({ "array": deep(MAX_TYPE_NESTING) });
        assert!(
            type_from_value(&mixed)
                .unwrap_err()
                .message
                .contains("deeper than")
        );
    }

    #[test]
    fn nested_notation_errors() {
        let msg = |v: Value| type_from_value(&v).unwrap_err().to_string();
        assert!(msg(json!({"strct": []})).contains("unknown key 'strct'"));
        assert!(msg(json!({"struct": [], "array": "int"})).contains("exactly one key"));
        assert!(msg(json!({"array": {"element": "int", "nullable": true}})).contains("'nullable'"));
        assert!(
            msg(json!({"map": {"key": "int", "val": "int", "extra": 1}}))
                .contains("'val', 'extra'")
        );
        assert!(msg(json!({"map": {"key": "int"}})).contains("missing 'value'"));
        assert!(
            msg(json!({"struct": [{"name": "a", "typ": "int"}]})).contains("unknown key(s) 'typ'")
        );
        assert!(
            msg(json!({"struct": [{"name": "a", "type": "int", "nullable": "no"}]}))
                .contains("true or false")
        );
        assert!(msg(json!({"struct": {"a": "int"}})).contains("list of fields"));
        assert!(msg(json!(42)).contains("found a number"));
        let e = type_from_value(&json!({"struct": [{"name": "a", "type": {"array": "strng"}}]}))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "struct field #1: field 'a': array: unknown type 'strng'; did you mean 'string'?"
        );
    }

    // ---- property tests

    fn arb_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[A-Za-z_][A-Za-z0-9_]{0,6}",
            "[`'\" \\\\:,<>()\n${}a-z0-9é日]{0,6}",
            Just("not".to_string()),
            Just("Comment".to_string()),
            any::<String>(),
        ]
    }

    fn arb_comment() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(prop_oneof![
            "[`'\"\\\\\n\r\t ${}a-zé✓]{0,8}",
            any::<String>()
        ])
    }

    /// Any type up to depth 3; null flags of arrays/maps are arbitrary only
    /// when `any_flags` (the string notation cannot carry them).
    fn arb_type(any_flags: bool) -> impl Strategy<Value = DataType> {
        let flag = any::<bool>().prop_map(move |b| b || !any_flags);
        let leaf = prop_oneof![
            Just(DataType::Boolean),
            Just(DataType::Byte),
            Just(DataType::Short),
            Just(DataType::Int),
            Just(DataType::Long),
            Just(DataType::Float),
            Just(DataType::Double),
            (1u8..=38)
                .prop_flat_map(|p| (Just(p), 0..=p))
                .prop_map(|(p, s)| dec(p, s)),
            (1u32..).prop_map(|length| DataType::Char { length }),
            (1u32..).prop_map(|length| DataType::Varchar { length }),
            Just(DataType::String),
            Just(DataType::Binary),
            Just(DataType::Date),
            Just(DataType::Timestamp),
            Just(DataType::TimestampNtz),
            Just(DataType::Variant),
            Just(DataType::Void),
        ];
        leaf.prop_recursive(3, 32, 4, move |inner| {
            prop_oneof![
                (inner.clone(), flag.clone()).prop_map(|(e, contains_null)| DataType::Array {
                    element: Box::new(e),
                    contains_null
                }),
                (inner.clone(), inner.clone(), flag.clone()).prop_map(
                    |(k, v, value_contains_null)| {
                        DataType::Map {
                            key: Box::new(k),
                            value: Box::new(v),
                            value_contains_null,
                        }
                    }
                ),
                proptest::collection::vec((arb_name(), inner, any::<bool>(), arb_comment()), 0..4)
                    .prop_map(|fs| {
                        let fields = fs
                            .into_iter()
                            .map(|(name, data_type, nullable, comment)| StructField {
                                name,
                                data_type,
                                nullable,
                                comment,
                            })
                            .collect();
                        DataType::Struct { fields }
                    }),
            ]
        })
    }

    /// `t` with fields renamed `F0`, `F1`, ... and comments dropped.
    fn with_plain_names(t: DataType) -> DataType {
        match t {
            DataType::Array {
                element,
                contains_null,
            } => DataType::Array {
                element: Box::new(with_plain_names(*element)),
                contains_null,
            },
            DataType::Map {
                key,
                value,
                value_contains_null,
            } => DataType::Map {
                key: Box::new(with_plain_names(*key)),
                value: Box::new(with_plain_names(*value)),
                value_contains_null,
            },
            DataType::Struct { fields } => DataType::Struct {
                fields: fields
                    .into_iter()
                    .enumerate()
                    .map(|(i, f)| StructField {
                        name: format!("F{i}"), // unchanged by upper-casing
                        data_type: with_plain_names(f.data_type),
                        nullable: f.nullable,
                        comment: None,
                    })
                    .collect(),
            },
            scalar => scalar,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn print_then_parse_round_trips(t in arb_type(false)) {
            let printed = t.to_string();
            prop_assert_eq!(parse_type(&printed), Ok(t), "{}", printed);
        }

        #[test]
        fn nested_notation_round_trips(t in arb_type(true)) {
            let v = type_to_value(&t);
            prop_assert_eq!(type_from_value(&v), Ok(t), "{}", v);
        }

        #[test]
        fn upper_case_keywords_parse_the_same(t in arb_type(false)) {
            // Names and comments would change case too: make them plain first.
            let t = with_plain_names(t);
            let upper = t.to_string().to_uppercase();
            prop_assert_eq!(parse_type(&upper), Ok(t), "{}", upper);
        }
    }
}
