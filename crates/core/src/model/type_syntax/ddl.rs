//! The string (Spark DDL) notation of types: `decimal(18,2)`,
//! `map<string, array<int>>`, `struct<a:int not null comment 'x'>`.
//!
//! The printer emits one canonical lower-case form; the parser accepts what
//! Spark DDL accepts (aliases, any case, optional `:` in struct fields) and
//! reads the canonical form back exactly. Nullability of array elements and
//! map values is not part of the string form: it always parses as true.

use std::fmt;

use super::suggest::nearest_type_name;
use super::{MAX_TYPE_BYTES, MAX_TYPE_NESTING, TypeError, too_deep};
use crate::model::types::{DataType, StructField};

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

/// Parse a type in Spark DDL notation, e.g. `map<string, array<decimal(18,2)>>`.
pub fn parse_type(s: &str) -> Result<DataType, TypeError> {
    parse_at_depth(s, 0)
}

/// Parse a whole type string that already sits `depth` containers deep: the
/// nested notation's type strings count the levels around them, so the
/// nesting limit holds across both notations.
pub(super) fn parse_at_depth(s: &str, depth: usize) -> Result<DataType, TypeError> {
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use proptest::prelude::*;

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
        fn upper_case_keywords_parse_the_same(t in arb_type(false)) {
            // Names and comments would change case too: make them plain first.
            let t = with_plain_names(t);
            let upper = t.to_string().to_uppercase();
            prop_assert_eq!(parse_type(&upper), Ok(t), "{}", upper);
        }
    }
}
