//! Names and literals in statements, and the privilege keywords.
//!
//! Quoting rules (Databricks SQL language manual, which Spark SQL shares):
//! - identifiers go in backticks, an inner backtick doubled;
//! - string literals go in single quotes with `\` and `'` escaped by a
//!   backslash (regular literals treat `\` as the escape character; doubling
//!   `''` was once seen to swallow apostrophes); newlines and unicode are kept;
//! - `${` inside a literal is written `$\{`: Spark's variable substitution
//!   (and notebook widgets) rewrite `${…}` in the raw text before parsing,
//!   and `\{` unescapes to `{`, so the value reads back exactly.

use std::collections::BTreeMap;

use delta_operator_core::model::{Privilege, TableRef};

use crate::SqlError;

/// Table privileges that may be granted or revoked. They are SQL keywords and
/// cannot be quoted, so only these are ever written into a statement.
pub use delta_operator_core::model::privilege::KNOWN as PRIVILEGES;

/// `` `name` `` with inner backticks doubled.
pub fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `` `catalog`.`schema`.`table` ``: a table as Unity Catalog names it.
pub fn table_name(t: &TableRef) -> String {
    format!(
        "{}.{}.{}",
        ident(&t.catalog),
        ident(&t.schema),
        ident(&t.table)
    )
}

/// How statements name a table: by Unity Catalog's three parts (Databricks),
/// or as a Delta table at a path under a root (OSS Delta on Spark, where a
/// table is the folder `<root>/<catalog>/<schema>/<table>`, the lake's layout,
/// so delta-rs reads what Spark writes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Names {
    #[default]
    Catalog,
    /// `` delta.`<root>/<catalog>/<schema>/<table>` ``; `root` as Spark spells it
    /// (`s3a://bucket/lake`, `/data/lake`), without a trailing slash.
    Paths { root: String },
}

impl Names {
    /// The table's name in a statement.
    pub fn table(&self, t: &TableRef) -> String {
        match self {
            Names::Catalog => table_name(t),
            Names::Paths { root } => format!(
                "delta.{}",
                ident(&format!("{root}/{}/{}/{}", t.catalog, t.schema, t.table))
            ),
        }
    }
}

/// A nested field path: `` `a`.`b`.`c` ``.
pub fn field_path(path: &[String]) -> String {
    path.iter().map(|p| ident(p)).collect::<Vec<_>>().join(".")
}

/// A dotted name written by a user (`cat.sch.fn`), each part quoted.
pub fn dotted(name: &str) -> String {
    name.split('.')
        .map(|p| ident(p.trim().trim_matches('`')))
        .collect::<Vec<_>>()
        .join(".")
}

/// A string literal that reads back as exactly `s` (see the module comment).
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    let mut prev_dollar = false;
    for c in s.chars() {
        match c {
            '\'' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '{' if prev_dollar => out.push_str("\\{"),
            c => out.push(c),
        }
        prev_dollar = c == '$';
    }
    out.push('\'');
    out
}

/// A privilege as SQL: its canonical spelling (model::privilege), checked
/// against the allow-list.
pub fn privilege(p: &Privilege) -> Result<&'static str, SqlError> {
    PRIVILEGES
        .iter()
        .copied()
        .find(|k| *k == p.as_str())
        .ok_or_else(|| SqlError::UnknownPrivilege(p.to_string()))
}

pub(crate) fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| ident(i))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn props(p: &BTreeMap<String, String>) -> String {
    p.iter()
        .map(|(k, v)| format!("{} = {}", literal(k), literal(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn keys(k: &[String]) -> String {
    k.iter().map(|k| literal(k)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a literal back the way Databricks does (regular literal rules).
    fn unliteral(s: &str) -> String {
        let inner = &s[1..s.len() - 1];
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(o) => out.push(o),
                    None => {}
                }
            } else {
                assert_ne!(c, '\'', "an unescaped quote ends the literal early: {s}");
                out.push(c);
            }
        }
        out
    }

    const HOSTILE: &[&str] = &[
        "O'Reilly",
        "back\\slash",
        "tick`tock",
        "${x} and ${env:HOME}",
        "line1\nline2",
        "ünïcødé ✓ 表",
        "\\'",
        "'; DROP TABLE x; --",
        "$",
        "${",
        "\\${y}",
    ];

    #[test]
    fn literals_round_trip_and_hide_substitution() {
        for h in HOSTILE {
            let l = literal(h);
            assert_eq!(unliteral(&l), *h, "{l}");
            assert!(!l.contains("${"), "raw ${{ would be substituted: {l}");
        }
        assert_eq!(literal("O'Reilly"), r"'O\'Reilly'");
        assert_eq!(literal("a\\b"), r"'a\\b'");
        assert_eq!(literal("${x}"), r"'$\{x}'");
        assert_eq!(literal("a\nb"), "'a\nb'");
    }

    #[test]
    fn identifiers_double_backticks() {
        assert_eq!(ident("a`b"), "`a``b`");
        assert_eq!(ident("O'Reilly"), "`O'Reilly`");
        assert_eq!(
            table_name(&TableRef::new("c", "s", "t`x")),
            "`c`.`s`.`t``x`"
        );
        assert_eq!(
            field_path(&["a".into(), "b c".into(), "d`".into()]),
            "`a`.`b c`.`d```"
        );
    }
}
