//! Plan steps compiled to Databricks SQL. Pure: text in, text out.
//!
//! Quoting rules (Databricks SQL language manual):
//! - identifiers go in backticks, an inner backtick doubled;
//! - string literals go in single quotes with `\` and `'` escaped by a
//!   backslash (regular literals treat `\` as the escape character; `''`
//!   once swallowed apostrophes in stevin); newlines and unicode are kept;
//! - `${` inside a literal is written `$\{`: Spark's variable substitution
//!   (and notebook widgets) rewrite `${…}` in the raw text before parsing,
//!   and `\{` unescapes to `{`, so the value reads back exactly.

use std::collections::BTreeMap;

use crate::model::{DataType, DesiredColumn, DesiredTable, ObservedTable, StructField, TableRef, OWNER_PROPERTY};
use crate::plan::change::FieldPath;
use crate::plan::steps::{Action, Rewrite, RewritePhase};

/// Why a step has no SQL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    #[error("{0}")]
    Unsupported(String),
    #[error("'{0}' is not a table privilege Databricks knows; use one of {allowed}", allowed = PRIVILEGES.join(", "))]
    UnknownPrivilege(String),
    #[error("{0} is empty")]
    Empty(&'static str),
}

/// Table privileges that may be granted or revoked. They are SQL keywords and
/// cannot be quoted, so only these are ever written into a statement.
pub const PRIVILEGES: &[&str] = &["SELECT", "MODIFY", "ALL PRIVILEGES", "APPLY TAG", "MANAGE", "BROWSE", "READ METADATA"];

/// Characters Delta allows in column names only with column mapping.
const NEEDS_MAPPING: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];

/// `` `name` `` with inner backticks doubled.
pub fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `` `catalog`.`schema`.`table` ``.
pub fn table_name(t: &TableRef) -> String {
    format!("{}.{}.{}", ident(&t.catalog), ident(&t.schema), ident(&t.table))
}

/// A nested field path: `` `a`.`b`.`c` ``.
pub fn field_path(path: &[String]) -> String {
    path.iter().map(|p| ident(p)).collect::<Vec<_>>().join(".")
}

/// A dotted name written by a user (`cat.sch.fn`), each part quoted.
pub fn dotted(name: &str) -> String {
    name.split('.').map(|p| ident(p.trim().trim_matches('`'))).collect::<Vec<_>>().join(".")
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

/// A privilege as SQL: upper case, `_` as a space, checked against the allow-list.
pub fn privilege(p: &str) -> Result<&'static str, SqlError> {
    let norm = p.trim().replace('_', " ").split_whitespace().collect::<Vec<_>>().join(" ").to_uppercase();
    PRIVILEGES.iter().copied().find(|k| *k == norm).ok_or_else(|| SqlError::UnknownPrivilege(p.to_string()))
}

/// A type in DDL: like the model's notation, but every struct field name in
/// backticks and comments escaped as literals.
pub fn sql_type(t: &DataType) -> String {
    match t {
        DataType::Array { element, .. } => format!("array<{}>", sql_type(element)),
        DataType::Map { key, value, .. } => format!("map<{}, {}>", sql_type(key), sql_type(value)),
        DataType::Struct { fields } => {
            let fs: Vec<String> = fields
                .iter()
                .map(|f| {
                    let mut s = format!("{}: {}", ident(&f.name), sql_type(&f.data_type));
                    if !f.nullable {
                        s.push_str(" NOT NULL");
                    }
                    if let Some(c) = &f.comment {
                        s.push_str(&format!(" COMMENT {}", literal(c)));
                    }
                    s
                })
                .collect();
            format!("struct<{}>", fs.join(", "))
        }
        // scalars print as their keyword (decimal(p,s), varchar(n), ...)
        other => other.to_string(),
    }
}

fn list(items: &[String]) -> String {
    items.iter().map(|i| ident(i)).collect::<Vec<_>>().join(", ")
}

fn props(p: &BTreeMap<String, String>) -> String {
    p.iter().map(|(k, v)| format!("{} = {}", literal(k), literal(v))).collect::<Vec<_>>().join(", ")
}

fn keys(k: &[String]) -> String {
    k.iter().map(|k| literal(k)).collect::<Vec<_>>().join(", ")
}

fn alter(t: &TableRef, rest: impl AsRef<str>) -> String {
    format!("ALTER TABLE {} {}", table_name(t), rest.as_ref())
}

fn needs_mapping(name: &str) -> bool {
    name.chars().any(|c| NEEDS_MAPPING.contains(&c))
}

fn type_needs_mapping(t: &DataType) -> bool {
    match t {
        DataType::Struct { fields } => fields.iter().any(|f| needs_mapping(&f.name) || type_needs_mapping(&f.data_type)),
        DataType::Array { element, .. } => type_needs_mapping(element),
        DataType::Map { key, value, .. } => type_needs_mapping(key) || type_needs_mapping(value),
        _ => false,
    }
}

fn prop_num(live: Option<&ObservedTable>, key: &str) -> Option<u32> {
    live.and_then(|l| l.properties.get(key)).and_then(|v| v.parse().ok())
}

/// The statements that carry out one action, in order. `live` is the table as
/// last read: it decides prerequisites inside a step (protocol versions, the
/// defaults feature, a primary key to replace); `None` means unknown.
pub fn compile(t: &TableRef, action: &Action, live: Option<&ObservedTable>) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    match action {
        Action::CreateTable { table } => one(create_table(table)),
        Action::Claim { marker } => one(alter(t, format!("SET TBLPROPERTIES ({} = {})", literal(OWNER_PROPERTY), literal(marker)))),
        Action::SetTableComment { comment } if comment.is_empty() => one(format!("COMMENT ON TABLE {} IS NULL", table_name(t))),
        Action::SetTableComment { comment } => one(format!("COMMENT ON TABLE {} IS {}", table_name(t), literal(comment))),
        Action::SetProperties { properties } => nonempty(properties.is_empty(), "SET TBLPROPERTIES")
            .and_then(|_| one(alter(t, format!("SET TBLPROPERTIES ({})", props(properties))))),
        Action::UnsetProperties { keys: k } => {
            nonempty(k.is_empty(), "UNSET TBLPROPERTIES").and_then(|_| one(alter(t, format!("UNSET TBLPROPERTIES IF EXISTS ({})", keys(k)))))
        }
        Action::SetTableTags { tags } => nonempty(tags.is_empty(), "SET TAGS").and_then(|_| one(alter(t, format!("SET TAGS ({})", props(tags))))),
        Action::UnsetTableTags { keys: k } => nonempty(k.is_empty(), "UNSET TAGS").and_then(|_| one(alter(t, format!("UNSET TAGS ({})", keys(k))))),
        Action::EnableColumnMapping => one(enable_column_mapping(t, live)),
        Action::EnableTypeWidening => one(alter(t, format!("SET TBLPROPERTIES ({} = 'true')", literal("delta.enableTypeWidening")))),
        Action::EnableTimestampNtz => one(alter(t, format!("SET TBLPROPERTIES ({} = 'supported')", literal("delta.feature.timestampNtz")))),
        Action::AddColumn { path, field } => one(alter(t, format!("ADD COLUMN {}", field_def(path, field)))),
        Action::RenameColumn { from, to } => one(alter(t, format!("RENAME COLUMN {} TO {}", ident(from), ident(to)))),
        Action::DropColumn { name } => one(alter(t, format!("DROP COLUMN {}", ident(name)))),
        Action::AlterColumnType { path, to } => one(alter(t, format!("ALTER COLUMN {} TYPE {}", field_path(path), sql_type(to)))),
        Action::DropNotNull { path } => one(alter(t, format!("ALTER COLUMN {} DROP NOT NULL", field_path(path)))),
        Action::SetNotNull { path } => one(alter(t, format!("ALTER COLUMN {} SET NOT NULL", field_path(path)))),
        // ALTER COLUMN … COMMENT works on nested fields too (COMMENT ON COLUMN does not);
        // warehouses reject UNSET COMMENT, so a cleared comment is ''
        Action::SetColumnComment { path, comment } => one(alter(t, format!("ALTER COLUMN {} COMMENT {}", field_path(path), literal(comment)))),
        Action::SetColumnTags { column, tags } => nonempty(tags.is_empty(), "SET TAGS")
            .and_then(|_| one(alter(t, format!("ALTER COLUMN {} SET TAGS ({})", ident(column), props(tags))))),
        Action::UnsetColumnTags { column, keys: k } => {
            nonempty(k.is_empty(), "UNSET TAGS").and_then(|_| one(alter(t, format!("ALTER COLUMN {} UNSET TAGS ({})", ident(column), keys(k)))))
        }
        Action::SetMask { column, mask } => {
            let using = if mask.using_columns.is_empty() { String::new() } else { format!(" USING COLUMNS ({})", list(&mask.using_columns)) };
            one(alter(t, format!("ALTER COLUMN {} SET MASK {}{using}", ident(column), dotted(&mask.function))))
        }
        Action::SetDefault { column, expression } => {
            let mut out = Vec::new();
            let enabled = live.is_some_and(|l| l.properties.contains_key(DEFAULTS_FEATURE));
            if !enabled {
                out.push(alter(t, format!("SET TBLPROPERTIES ({} = 'supported')", literal(DEFAULTS_FEATURE))));
            }
            out.push(alter(t, format!("ALTER COLUMN {} SET DEFAULT {expression}", ident(column))));
            Ok(out)
        }
        Action::AddCheck { check } => one(alter(t, format!("ADD CONSTRAINT {} CHECK ({})", ident(&check.name), check.expression))),
        Action::DropCheck { name } => one(alter(t, format!("DROP CONSTRAINT IF EXISTS {}", ident(name)))),
        Action::SetPrimaryKey { key } => {
            nonempty(key.columns.is_empty(), "PRIMARY KEY")?;
            let mut out = Vec::new();
            // a table has one primary key: a different one goes first (RESTRICT: fails while FKs reference it)
            if live.is_none_or(|l| l.primary_key.is_some()) {
                out.push(alter(t, "DROP PRIMARY KEY IF EXISTS"));
            }
            let name = key.name.clone().unwrap_or_else(|| format!("{}_pk", t.table));
            out.push(alter(t, format!("ADD CONSTRAINT {} PRIMARY KEY ({})", ident(&name), list(&key.columns))));
            Ok(out)
        }
        Action::AddForeignKey { key } => {
            nonempty(key.columns.is_empty(), "FOREIGN KEY")?;
            let name = key.name.clone().unwrap_or_else(|| format!("{}_{}_fk", t.table, key.columns.join("_")));
            one(alter(
                t,
                format!("ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})", ident(&name), list(&key.columns), table_name(&key.references), list(&key.referenced_columns)),
            ))
        }
        Action::DropForeignKey { key } => one(alter(t, format!("DROP FOREIGN KEY IF EXISTS ({})", list(&key.columns)))),
        Action::SetClustering { keys: k } if k.is_empty() => one(alter(t, "CLUSTER BY NONE")),
        Action::SetClustering { keys: k } => one(alter(t, format!("CLUSTER BY ({})", list(k)))),
        Action::Rewrite { rewrite, phase } => rewrite_sql(t, rewrite, *phase),
        Action::CloneTable { name } => Err(SqlError::Unsupported(format!("a shallow clone of {t} as {name} is not built for Databricks yet (issue #5)"))),
        Action::Grant { principal, privileges } => {
            nonempty(privileges.is_empty(), "GRANT")?;
            let p = privileges.iter().map(|p| privilege(p)).collect::<Result<Vec<_>, _>>()?;
            one(format!("GRANT {} ON TABLE {} TO {}", p.join(", "), table_name(t), ident(principal)))
        }
        Action::Revoke { principal, privileges } => {
            nonempty(privileges.is_empty(), "REVOKE")?;
            let p = privileges.iter().map(|p| privilege(p)).collect::<Result<Vec<_>, _>>()?;
            one(format!("REVOKE {} ON TABLE {} FROM {}", p.join(", "), table_name(t), ident(principal)))
        }
        Action::SetOwner { owner } => one(alter(t, format!("SET OWNER TO {}", ident(owner)))),
        Action::DropTable => one(format!("DROP TABLE IF EXISTS {}", table_name(t))),
    }
}

fn nonempty(empty: bool, what: &'static str) -> Result<(), SqlError> {
    if empty { Err(SqlError::Empty(what)) } else { Ok(()) }
}

/// The writer feature a column DEFAULT needs (Databricks spells its value `supported`).
pub const DEFAULTS_FEATURE: &str = "delta.feature.allowColumnDefaults";

/// Column mapping by name. Databricks upgrades the protocol implicitly when
/// only the mode is set; the versions are added when the live protocol is
/// known to be older than reader 2 / writer 5 (never lowered: a table on
/// table features, reader 3 / writer 7, needs nothing more).
fn enable_column_mapping(t: &TableRef, live: Option<&ObservedTable>) -> String {
    let mut p = BTreeMap::new();
    let reader = prop_num(live, "delta.minReaderVersion");
    let writer = prop_num(live, "delta.minWriterVersion");
    if reader.is_some_and(|r| r < 2) {
        p.insert("delta.minReaderVersion".to_string(), "2".to_string());
    }
    if writer.is_some_and(|w| w < 5) {
        p.insert("delta.minWriterVersion".to_string(), "5".to_string());
    }
    p.insert("delta.columnMapping.mode".to_string(), "name".to_string());
    alter(t, format!("SET TBLPROPERTIES ({})", props(&p)))
}

/// `` `a`.`b` type [NOT NULL] [COMMENT '…'] `` for ADD COLUMN.
fn field_def(path: &FieldPath, f: &StructField) -> String {
    let mut s = format!("{} {}", field_path(path), sql_type(&f.data_type));
    if !f.nullable {
        s.push_str(" NOT NULL");
    }
    if let Some(c) = &f.comment {
        s.push_str(&format!(" COMMENT {}", literal(c)));
    }
    s
}

fn column_def(c: &DesiredColumn) -> String {
    let mut s = format!("{} {}", ident(&c.name), sql_type(&c.data_type));
    if !c.nullable {
        s.push_str(" NOT NULL");
    }
    if let Some(g) = &c.generated {
        s.push_str(&format!(" GENERATED ALWAYS AS ({g})"));
    }
    if let Some(i) = &c.identity {
        let how = if i.always { "ALWAYS" } else { "BY DEFAULT" };
        s.push_str(&format!(" GENERATED {how} AS IDENTITY (START WITH {} INCREMENT BY {})", i.start, i.increment));
    }
    if let Some(d) = &c.default {
        s.push_str(&format!(" DEFAULT {d}"));
    }
    if let Some(cm) = c.comment.as_ref().filter(|cm| !cm.is_empty()) {
        s.push_str(&format!(" COMMENT {}", literal(cm)));
    }
    s
}

/// CREATE TABLE with everything Databricks takes inline: identity, generated
/// and default columns, comments, partitioning or clustering, properties
/// (with the owner marker, and the features the columns need). CHECKs, keys,
/// tags, masks, grants and the owner are their own steps (a CHECK cannot be
/// declared inside CREATE TABLE).
pub fn create_table(d: &DesiredTable) -> String {
    let cols: Vec<String> = d.columns.iter().map(|c| format!("  {}", column_def(c))).collect();
    let mut s = format!("CREATE TABLE {} (\n{}\n) USING DELTA", table_name(&d.table), cols.join(",\n"));
    if let Some(p) = d.partitioned_by.as_ref().filter(|p| !p.is_empty()) {
        s.push_str(&format!("\nPARTITIONED BY ({})", list(p)));
    }
    if let Some(k) = d.cluster_by.as_ref().filter(|k| !k.is_empty()) {
        s.push_str(&format!("\nCLUSTER BY ({})", list(k)));
    }
    if let Some(c) = d.comment.as_ref().filter(|c| !c.is_empty()) {
        s.push_str(&format!("\nCOMMENT {}", literal(c)));
    }
    let mut p: BTreeMap<String, String> = d.properties.iter().filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v))).collect();
    if d.columns.iter().any(|c| c.default.is_some()) {
        p.entry(DEFAULTS_FEATURE.into()).or_insert_with(|| "supported".into());
    }
    if d.columns.iter().any(|c| needs_mapping(&c.name) || type_needs_mapping(&c.data_type)) {
        p.entry("delta.columnMapping.mode".into()).or_insert_with(|| "name".into());
    }
    p.insert(OWNER_PROPERTY.into(), d.owner_marker.clone());
    s.push_str(&format!("\nTBLPROPERTIES ({})", props(&p)));
    s
}

/// Rewrites on Databricks (CREATE OR REPLACE … AS SELECT with put-backs and
/// the staged check) are issue #5; until then they are refused, never faked.
fn rewrite_sql(t: &TableRef, _rw: &Rewrite, phase: RewritePhase) -> Result<Vec<String>, SqlError> {
    let what = match phase {
        RewritePhase::WriteOnce => "a rebuild of the table from itself",
        RewritePhase::Stage => "staging a rewritten copy",
        RewritePhase::Replace => "replacing the table from its staging copy",
        RewritePhase::DropStaging => "dropping the staging copy",
    };
    Err(SqlError::Unsupported(format!("{what} of {t} is not built for Databricks yet (rewrites are issue #5)")))
}

/// How to undo a step, as SQL a person can run: UNDROP for a dropped table,
/// RESTORE to the recorded version for steps that change data or drop columns.
pub fn undo(t: &TableRef, action: &Action, version_before: Option<u64>) -> Option<String> {
    match action {
        Action::DropTable => Some(format!("UNDROP TABLE {}", table_name(t))),
        Action::DropColumn { .. } | Action::Rewrite { .. } | Action::SetNotNull { .. } => {
            version_before.map(|v| format!("RESTORE TABLE {} TO VERSION AS OF {v}", table_name(t)))
        }
        _ => None,
    }
}

/// The table's current Delta version (the restore point).
pub fn history_head(t: &TableRef) -> String {
    format!("DESCRIBE HISTORY {} LIMIT 1", table_name(t))
}

/// A statement that only reads: safe to send again when a connection drops.
pub fn is_read_only(statement: &str) -> bool {
    let first = statement.trim_start().split(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    ["SELECT", "DESCRIBE", "SHOW", "WITH", "DESC", "EXPLAIN"].iter().any(|k| k.eq_ignore_ascii_case(first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Check, ForeignKey, Identity, Mask, PrimaryKey};
    use crate::model::type_syntax::parse_type;

    fn t() -> TableRef {
        TableRef::new("main", "sales", "orders")
    }

    fn sql(a: Action) -> Vec<String> {
        compile(&t(), &a, None).expect("compiles")
    }

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

    const HOSTILE: &[&str] = &["O'Reilly", "back\\slash", "tick`tock", "${x} and ${env:HOME}", "line1\nline2", "ünïcødé ✓ 表", "\\'", "'; DROP TABLE x; --", "$", "${", "\\${y}"];

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
        assert_eq!(table_name(&TableRef::new("c", "s", "t`x")), "`c`.`s`.`t``x`");
        assert_eq!(field_path(&["a".into(), "b c".into(), "d`".into()]), "`a`.`b c`.`d```");
    }

    #[test]
    fn comments_and_properties() {
        assert_eq!(sql(Action::SetTableComment { comment: "it's \\ ${x}".into() }), vec![r"COMMENT ON TABLE `main`.`sales`.`orders` IS 'it\'s \\ $\{x}'"]);
        assert_eq!(sql(Action::SetTableComment { comment: String::new() }), vec!["COMMENT ON TABLE `main`.`sales`.`orders` IS NULL"]);
        assert_eq!(
            sql(Action::SetColumnComment { path: vec!["a".into(), "b".into()], comment: "x\ny".into() }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a`.`b` COMMENT 'x\ny'"]
        );
        let p = BTreeMap::from([("k'".to_string(), "v\\".to_string())]);
        assert_eq!(sql(Action::SetProperties { properties: p }), vec![r"ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('k\'' = 'v\\')"]);
        assert_eq!(sql(Action::UnsetProperties { keys: vec!["a".into(), "b".into()] }), vec!["ALTER TABLE `main`.`sales`.`orders` UNSET TBLPROPERTIES IF EXISTS ('a', 'b')"]);
        assert_eq!(
            sql(Action::Claim { marker: "ns/orders".into() }),
            vec!["ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders')"]
        );
    }

    #[test]
    fn tags() {
        let tags = BTreeMap::from([("pii".to_string(), "e'mail".to_string())]);
        assert_eq!(sql(Action::SetTableTags { tags: tags.clone() }), vec![r"ALTER TABLE `main`.`sales`.`orders` SET TAGS ('pii' = 'e\'mail')"]);
        assert_eq!(sql(Action::UnsetTableTags { keys: vec!["pii".into()] }), vec!["ALTER TABLE `main`.`sales`.`orders` UNSET TAGS ('pii')"]);
        assert_eq!(
            sql(Action::SetColumnTags { column: "e`mail".into(), tags }),
            vec![r"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `e``mail` SET TAGS ('pii' = 'e\'mail')"]
        );
        assert_eq!(
            sql(Action::UnsetColumnTags { column: "c".into(), keys: vec!["a".into()] }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `c` UNSET TAGS ('a')"]
        );
        assert_eq!(compile(&t(), &Action::SetTableTags { tags: BTreeMap::new() }, None), Err(SqlError::Empty("SET TAGS")));
    }

    #[test]
    fn grants_use_the_allow_list() {
        assert_eq!(
            sql(Action::Grant { principal: "data `team`".into(), privileges: vec!["select".into(), "all_privileges".into(), "APPLY TAG".into()] }),
            vec!["GRANT SELECT, ALL PRIVILEGES, APPLY TAG ON TABLE `main`.`sales`.`orders` TO `data ``team```"]
        );
        assert_eq!(
            sql(Action::Revoke { principal: "a@b.com".into(), privileges: vec!["MODIFY".into()] }),
            vec!["REVOKE MODIFY ON TABLE `main`.`sales`.`orders` FROM `a@b.com`"]
        );
        let bad = compile(&t(), &Action::Grant { principal: "x".into(), privileges: vec!["SELECT; DROP TABLE y".into()] }, None);
        assert!(matches!(bad, Err(SqlError::UnknownPrivilege(_))));
    }

    #[test]
    fn columns() {
        let ty = parse_type("struct<`a b`:int not null comment 'it\\'s',c:array<string>>").expect("a type");
        let f = StructField { name: "s".into(), data_type: ty, nullable: true, comment: Some("c'".into()) };
        assert_eq!(
            sql(Action::AddColumn { path: vec!["p".into(), "s".into()], field: f }),
            vec![r"ALTER TABLE `main`.`sales`.`orders` ADD COLUMN `p`.`s` struct<`a b`: int NOT NULL COMMENT 'it\'s', `c`: array<string>> COMMENT 'c\''"]
        );
        assert_eq!(sql(Action::RenameColumn { from: "a`".into(), to: "b".into() }), vec!["ALTER TABLE `main`.`sales`.`orders` RENAME COLUMN `a``` TO `b`"]);
        assert_eq!(sql(Action::DropColumn { name: "x".into() }), vec!["ALTER TABLE `main`.`sales`.`orders` DROP COLUMN `x`"]);
        assert_eq!(
            sql(Action::AlterColumnType { path: vec!["a".into()], to: DataType::Decimal { precision: 18, scale: 2 } }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a` TYPE decimal(18,2)"]
        );
        assert_eq!(sql(Action::SetNotNull { path: vec!["s".into(), "f".into()] }), vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `s`.`f` SET NOT NULL"]);
        assert_eq!(sql(Action::DropNotNull { path: vec!["a".into()] }), vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a` DROP NOT NULL"]);
    }

    #[test]
    fn prerequisites() {
        assert_eq!(
            sql(Action::EnableColumnMapping),
            vec!["ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"]
        );
        let mut live = ObservedTable::new(t(), vec![]);
        live.properties.insert("delta.minReaderVersion".into(), "1".into());
        live.properties.insert("delta.minWriterVersion".into(), "2".into());
        assert_eq!(
            compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default(),
            vec!["ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"]
        );
        live.properties.insert("delta.minReaderVersion".into(), "3".into());
        live.properties.insert("delta.minWriterVersion".into(), "7".into());
        assert_eq!(compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default().len(), 1);
        assert!(!compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default()[0].contains("Version"));
        assert_eq!(
            sql(Action::EnableTypeWidening),
            vec!["ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"]
        );
        assert_eq!(
            sql(Action::SetDefault { column: "c".into(), expression: "current_date()".into() }),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
                "ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `c` SET DEFAULT current_date()",
            ]
        );
        live.properties.insert(DEFAULTS_FEATURE.into(), "supported".into());
        assert_eq!(compile(&t(), &Action::SetDefault { column: "c".into(), expression: "1".into() }, Some(&live)).unwrap_or_default().len(), 1);
    }

    #[test]
    fn constraints_masks_clustering() {
        assert_eq!(
            sql(Action::AddCheck { check: Check { name: "pos".into(), expression: "amount >= 0".into() } }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `pos` CHECK (amount >= 0)"]
        );
        assert_eq!(sql(Action::DropCheck { name: "pos".into() }), vec!["ALTER TABLE `main`.`sales`.`orders` DROP CONSTRAINT IF EXISTS `pos`"]);
        let live = ObservedTable::new(t(), vec![]);
        assert_eq!(
            compile(&t(), &Action::SetPrimaryKey { key: PrimaryKey { name: None, columns: vec!["id".into()] } }, Some(&live)).unwrap_or_default(),
            vec!["ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `orders_pk` PRIMARY KEY (`id`)"]
        );
        assert_eq!(sql(Action::SetPrimaryKey { key: PrimaryKey { name: Some("pk".into()), columns: vec!["a".into(), "b".into()] } }).len(), 2);
        let fk = ForeignKey { name: Some("fk".into()), columns: vec!["cid".into()], references: TableRef::new("main", "sales", "customers"), referenced_columns: vec!["id".into()] };
        assert_eq!(
            sql(Action::AddForeignKey { key: fk.clone() }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `fk` FOREIGN KEY (`cid`) REFERENCES `main`.`sales`.`customers` (`id`)"]
        );
        assert_eq!(sql(Action::DropForeignKey { key: fk }), vec!["ALTER TABLE `main`.`sales`.`orders` DROP FOREIGN KEY IF EXISTS (`cid`)"]);
        assert_eq!(
            sql(Action::SetMask { column: "email".into(), mask: Mask { function: "main.sec.mask_email".into(), using_columns: vec!["region".into()] } }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `email` SET MASK `main`.`sec`.`mask_email` USING COLUMNS (`region`)"]
        );
        assert_eq!(sql(Action::SetClustering { keys: vec![] }), vec!["ALTER TABLE `main`.`sales`.`orders` CLUSTER BY NONE"]);
        assert_eq!(sql(Action::SetClustering { keys: vec!["a".into(), "b".into()] }), vec!["ALTER TABLE `main`.`sales`.`orders` CLUSTER BY (`a`, `b`)"]);
        assert_eq!(sql(Action::SetOwner { owner: "team`x".into() }), vec!["ALTER TABLE `main`.`sales`.`orders` SET OWNER TO `team``x`"]);
        assert_eq!(sql(Action::DropTable), vec!["DROP TABLE IF EXISTS `main`.`sales`.`orders`"]);
    }

    #[test]
    fn create_table_inline() {
        let mut id = DesiredColumn::new("id", DataType::Long, false);
        id.identity = Some(Identity { always: true, start: 1, increment: 1 });
        let mut day = DesiredColumn::new("day", DataType::Date, true);
        day.generated = Some("CAST(ts AS DATE)".into());
        let mut st = DesiredColumn::new("odd name", DataType::String, true);
        st.default = Some("'new'".into());
        st.comment = Some("it's ${x}\nok".into());
        let mut d = DesiredTable::new(t(), "ns/orders", vec![id, day, st]);
        d.cluster_by = Some(vec!["id".into()]);
        d.comment = Some("Orders ✓".into());
        d.properties.insert("delta.enableChangeDataFeed".into(), Some("true".into()));
        d.properties.insert("gone".into(), None);
        let s = create_table(&d);
        assert_eq!(
            s,
            "CREATE TABLE `main`.`sales`.`orders` (\n  `id` bigint NOT NULL GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1),\n  `day` date GENERATED ALWAYS AS (CAST(ts AS DATE)),\n  `odd name` string DEFAULT 'new' COMMENT 'it\\'s $\\{x}\nok'\n) USING DELTA\nCLUSTER BY (`id`)\nCOMMENT 'Orders ✓'\nTBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders', 'delta.columnMapping.mode' = 'name', 'delta.enableChangeDataFeed' = 'true', 'delta.feature.allowColumnDefaults' = 'supported')"
        );
        let mut by_default = DesiredColumn::new("n", DataType::Long, true);
        by_default.identity = Some(Identity { always: false, start: 10, increment: 5 });
        let mut d2 = DesiredTable::new(t(), "ns/o", vec![by_default, DesiredColumn::new("p", DataType::Date, true)]);
        d2.partitioned_by = Some(vec!["p".into()]);
        let s2 = create_table(&d2);
        assert!(s2.contains("GENERATED BY DEFAULT AS IDENTITY (START WITH 10 INCREMENT BY 5)"), "{s2}");
        assert!(s2.contains("\nPARTITIONED BY (`p`)\n"), "{s2}");
        assert!(!s2.contains("columnMapping"), "{s2}");
    }

    #[test]
    fn rewrites_are_refused_for_now() {
        let rw = Rewrite { columns: vec![], partitioned_by: vec![], drops: vec![] };
        assert!(matches!(compile(&t(), &Action::Rewrite { rewrite: rw, phase: RewritePhase::WriteOnce }, None), Err(SqlError::Unsupported(_))));
    }

    #[test]
    fn undo_hints() {
        assert_eq!(undo(&t(), &Action::DropTable, None).as_deref(), Some("UNDROP TABLE `main`.`sales`.`orders`"));
        assert_eq!(undo(&t(), &Action::DropColumn { name: "x".into() }, Some(7)).as_deref(), Some("RESTORE TABLE `main`.`sales`.`orders` TO VERSION AS OF 7"));
        assert_eq!(undo(&t(), &Action::EnableTypeWidening, Some(7)), None);
    }

    #[test]
    fn read_only_statements() {
        assert!(is_read_only("  select 1"));
        assert!(is_read_only("DESCRIBE HISTORY t LIMIT 1"));
        assert!(is_read_only("SHOW TABLES"));
        assert!(!is_read_only("ALTER TABLE t ADD COLUMN x int"));
        assert!(!is_read_only("CREATE TABLE t (a int)"));
        assert!(!is_read_only("selective"));
    }
}
