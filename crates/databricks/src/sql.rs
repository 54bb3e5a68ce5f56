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

use delta_operator_core::model::names::{
    needs_column_mapping as needs_mapping, type_needs_column_mapping as type_needs_mapping,
};
use delta_operator_core::model::{
    DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedTable, Privilege, SchemaRef,
    StructField, TableRef,
};
use delta_operator_core::plan::SchemaAction;
use delta_operator_core::plan::change::FieldPath;
use delta_operator_core::plan::compile;
use delta_operator_core::plan::steps::{
    Action, Projection, Rewrite, RewritePhase, Source, bound_clone_name, staging_name,
};

/// Why a step has no SQL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    #[error("{0}")]
    Unsupported(String),
    #[error("'{0}' is not a table privilege Databricks knows; use one of {allowed}", allowed = PRIVILEGES.join(", "))]
    UnknownPrivilege(String),
    #[error("'{0}' is not a schema privilege Databricks knows; use one of {allowed}", allowed = SCHEMA_KNOWN.join(", "))]
    UnknownSchemaPrivilege(String),
    #[error("{0} is empty")]
    Empty(&'static str),
}

/// Table privileges that may be granted or revoked. They are SQL keywords and
/// cannot be quoted, so only these are ever written into a statement.
pub use delta_operator_core::model::privilege::KNOWN as PRIVILEGES;
use delta_operator_core::model::privilege::SCHEMA_KNOWN;

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
    items
        .iter()
        .map(|i| ident(i))
        .collect::<Vec<_>>()
        .join(", ")
}

fn props(p: &BTreeMap<String, String>) -> String {
    p.iter()
        .map(|(k, v)| format!("{} = {}", literal(k), literal(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn keys(k: &[String]) -> String {
    k.iter().map(|k| literal(k)).collect::<Vec<_>>().join(", ")
}

fn alter(names: &Names, t: &TableRef, rest: impl AsRef<str>) -> String {
    format!("ALTER TABLE {} {}", names.table(t), rest.as_ref())
}

fn prop_num(live: Option<&ObservedTable>, key: &str) -> Option<u32> {
    live.and_then(|l| l.properties.get(key))
        .and_then(|v| v.parse().ok())
}

/// The statements that carry out one action, in order. `live` is the table as
/// last read: it decides prerequisites inside a step (protocol versions, the
/// defaults feature, a primary key to replace); `None` means unknown.
pub fn compile(
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
) -> Result<Vec<String>, SqlError> {
    compile_for(&Names::Catalog, t, action, live, "")
}

/// The statements of a step in one run (the run names its staging copy).
pub fn compile_for(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
    run: &str,
) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    match action {
        Action::CreateTable { table } => one(create_table(names, table)),
        Action::Claim {
            marker,
            constraints,
        } => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({})",
                props(&delta_operator_core::plan::steps::claim_properties(
                    marker,
                    constraints.as_deref()
                ))
            ),
        )),
        Action::SetTableComment { comment } if comment.is_empty() => {
            one(format!("COMMENT ON TABLE {} IS NULL", names.table(t)))
        }
        Action::SetTableComment { comment } => one(format!(
            "COMMENT ON TABLE {} IS {}",
            names.table(t),
            literal(comment)
        )),
        Action::SetProperties { properties } => {
            nonempty(properties.is_empty(), "SET TBLPROPERTIES").and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("SET TBLPROPERTIES ({})", props(properties)),
                ))
            })
        }
        Action::UnsetProperties { keys: k } => nonempty(k.is_empty(), "UNSET TBLPROPERTIES")
            .and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("UNSET TBLPROPERTIES IF EXISTS ({})", keys(k)),
                ))
            }),
        Action::SetTableTags { tags } => nonempty(tags.is_empty(), "SET TAGS")
            .and_then(|_| one(alter(names, t, format!("SET TAGS ({})", props(tags))))),
        Action::UnsetTableTags { keys: k } => nonempty(k.is_empty(), "UNSET TAGS")
            .and_then(|_| one(alter(names, t, format!("UNSET TAGS ({})", keys(k))))),
        Action::EnableColumnMapping => one(enable_column_mapping(names, t, live)),
        Action::EnableTypeWidening => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({} = 'true')",
                literal("delta.enableTypeWidening")
            ),
        )),
        Action::EnableTimestampNtz => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({} = 'supported')",
                literal("delta.feature.timestampNtz")
            ),
        )),
        Action::AddColumn { path, field } => one(alter(
            names,
            t,
            format!("ADD COLUMN {}", field_def(path, field)),
        )),
        Action::RenameColumn { from, to } => one(alter(
            names,
            t,
            format!("RENAME COLUMN {} TO {}", ident(from), ident(to)),
        )),
        Action::DropColumn { name } => one(alter(names, t, format!("DROP COLUMN {}", ident(name)))),
        Action::DropField { path } => {
            one(alter(names, t, format!("DROP COLUMN {}", field_path(path))))
        }
        Action::AlterColumnType { path, to } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} TYPE {}", field_path(path), sql_type(to)),
        )),
        Action::DropNotNull { path } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} DROP NOT NULL", field_path(path)),
        )),
        Action::SetNotNull { path } => one(alter(
            names,
            t,
            format!("ALTER COLUMN {} SET NOT NULL", field_path(path)),
        )),
        // ALTER COLUMN … COMMENT works on nested fields too (COMMENT ON COLUMN does not);
        // warehouses reject UNSET COMMENT, so a cleared comment is ''
        Action::SetColumnComment { path, comment } => one(alter(
            names,
            t,
            format!(
                "ALTER COLUMN {} COMMENT {}",
                field_path(path),
                literal(comment)
            ),
        )),
        Action::SetColumnTags { column, tags } => {
            nonempty(tags.is_empty(), "SET TAGS").and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("ALTER COLUMN {} SET TAGS ({})", ident(column), props(tags)),
                ))
            })
        }
        Action::UnsetColumnTags { column, keys: k } => nonempty(k.is_empty(), "UNSET TAGS")
            .and_then(|_| {
                one(alter(
                    names,
                    t,
                    format!("ALTER COLUMN {} UNSET TAGS ({})", ident(column), keys(k)),
                ))
            }),
        Action::SetMask { column, mask } => {
            let using = if mask.using_columns.is_empty() {
                String::new()
            } else {
                format!(" USING COLUMNS ({})", list(&mask.using_columns))
            };
            one(alter(
                names,
                t,
                format!(
                    "ALTER COLUMN {} SET MASK {}{using}",
                    ident(column),
                    dotted(&mask.function)
                ),
            ))
        }
        Action::SetDefault { column, expression } => {
            let mut out = Vec::new();
            let enabled = live.is_some_and(|l| l.properties.contains_key(DEFAULTS_FEATURE));
            if !enabled {
                out.push(alter(
                    names,
                    t,
                    format!(
                        "SET TBLPROPERTIES ({} = 'supported')",
                        literal(DEFAULTS_FEATURE)
                    ),
                ));
            }
            out.push(alter(
                names,
                t,
                format!("ALTER COLUMN {} SET DEFAULT {expression}", ident(column)),
            ));
            Ok(out)
        }
        Action::AddCheck { check } => one(alter(
            names,
            t,
            format!(
                "ADD CONSTRAINT {} CHECK ({})",
                ident(&check.name),
                check.expression
            ),
        )),
        Action::DropCheck { name } => one(alter(
            names,
            t,
            format!("DROP CONSTRAINT IF EXISTS {}", ident(name)),
        )),
        // not planned here (one commit per ALTER: `checks_in_one_commit` is false), compiled as what it would run
        Action::AddChecks { checks } => Ok(checks
            .iter()
            .map(|check| {
                alter(
                    names,
                    t,
                    format!(
                        "ADD CONSTRAINT {} CHECK ({})",
                        ident(&check.name),
                        check.expression
                    ),
                )
            })
            .collect()),
        Action::DropChecks { names: dropped } => Ok(dropped
            .iter()
            .map(|name| {
                alter(
                    names,
                    t,
                    format!("DROP CONSTRAINT IF EXISTS {}", ident(name)),
                )
            })
            .collect()),
        Action::SetPrimaryKey { key, .. } => {
            nonempty(key.columns.is_empty(), "PRIMARY KEY")?;
            let mut out = Vec::new();
            // a table has one primary key: a different one goes first (RESTRICT: fails while FKs reference it)
            if live.is_none_or(|l| l.primary_key.is_some()) {
                out.push(alter(names, t, "DROP PRIMARY KEY IF EXISTS"));
            }
            let name = key
                .name
                .clone()
                .unwrap_or_else(|| format!("{}_pk", t.table));
            out.push(alter(
                names,
                t,
                format!(
                    "ADD CONSTRAINT {} PRIMARY KEY ({})",
                    ident(&name),
                    list(&key.columns)
                ),
            ));
            Ok(out)
        }
        Action::AddForeignKey { key } => {
            nonempty(key.columns.is_empty(), "FOREIGN KEY")?;
            let name = key
                .name
                .clone()
                .unwrap_or_else(|| format!("{}_{}_fk", t.table, key.columns.join("_")));
            one(alter(
                names,
                t,
                format!(
                    "ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})",
                    ident(&name),
                    list(&key.columns),
                    names.table(&key.references),
                    list(&key.referenced_columns)
                ),
            ))
        }
        Action::DropForeignKey { key } => one(alter(
            names,
            t,
            format!("DROP FOREIGN KEY IF EXISTS ({})", list(&key.columns)),
        )),
        Action::SetClustering { keys: k } if k.is_empty() => {
            one(alter(names, t, "CLUSTER BY NONE"))
        }
        Action::SetClustering { keys: k } => {
            one(alter(names, t, format!("CLUSTER BY ({})", list(k))))
        }
        Action::Rewrite { rewrite, phase } => rewrite_sql(names, t, rewrite, *phase, live, run),
        Action::CloneTable { name } => Ok(clone_table(
            names,
            t,
            &bound_clone_name(name, live.and_then(|l| l.version)),
        )),
        Action::Grant {
            principal,
            privileges,
        } => {
            nonempty(privileges.is_empty(), "GRANT")?;
            let p = privileges
                .iter()
                .map(|p| privilege(p))
                .collect::<Result<Vec<_>, _>>()?;
            one(format!(
                "GRANT {} ON TABLE {} TO {}",
                p.join(", "),
                names.table(t),
                ident(principal)
            ))
        }
        Action::Revoke {
            principal,
            privileges,
        } => {
            nonempty(privileges.is_empty(), "REVOKE")?;
            let p = privileges
                .iter()
                .map(|p| privilege(p))
                .collect::<Result<Vec<_>, _>>()?;
            one(format!(
                "REVOKE {} ON TABLE {} FROM {}",
                p.join(", "),
                names.table(t),
                ident(principal)
            ))
        }
        Action::SetOwner { owner } => {
            one(alter(names, t, format!("SET OWNER TO {}", ident(owner))))
        }
        Action::DropTable => one(format!("DROP TABLE IF EXISTS {}", names.table(t))),
        // only the NULLs: a rerun after an interruption fills what is left, nothing more
        Action::Backfill { column, expression } => one(format!(
            "UPDATE {} SET {c} = ({expression}) WHERE {c} IS NULL",
            names.table(t),
            c = ident(column)
        )),
        // staging copies of runs that stopped: each its own DROP
        Action::RemoveLeftovers { leftovers } => Ok(leftovers
            .iter()
            .map(|l| {
                format!(
                    "DROP TABLE IF EXISTS {}",
                    names.table(&staging_table(t, &l.run))
                )
            })
            .collect()),
    }
}

/// A shallow clone of the table beside it. The clone copies the table's
/// properties, the owner marker included, which would make it a table of the
/// same resource without a spec: an orphan a strict schema drops. So the
/// marker is removed from the clone; it is left as an unmanaged table.
fn clone_table(names: &Names, t: &TableRef, name: &str) -> Vec<String> {
    let clone = names.table(&TableRef::new(&t.catalog, &t.schema, name));
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {clone} SHALLOW CLONE {}",
            names.table(t)
        ),
        format!(
            "ALTER TABLE {clone} UNSET TBLPROPERTIES IF EXISTS ({})",
            literal(OWNER_PROPERTY)
        ),
    ]
}

fn nonempty(empty: bool, what: &'static str) -> Result<(), SqlError> {
    if empty {
        Err(SqlError::Empty(what))
    } else {
        Ok(())
    }
}

/// The writer feature a column DEFAULT needs (Databricks spells its value `supported`).
pub const DEFAULTS_FEATURE: &str = "delta.feature.allowColumnDefaults";

/// Column mapping by name. Databricks upgrades the protocol implicitly when
/// only the mode is set; the versions are added when the live protocol is
/// known to be older than reader 2 / writer 5 (never lowered: a table on
/// table features, reader 3 / writer 7, needs nothing more).
fn enable_column_mapping(names: &Names, t: &TableRef, live: Option<&ObservedTable>) -> String {
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
    alter(names, t, format!("SET TBLPROPERTIES ({})", props(&p)))
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
        s.push_str(&format!(
            " GENERATED {how} AS IDENTITY (START WITH {} INCREMENT BY {})",
            i.start, i.increment
        ));
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
pub fn create_table(names: &Names, d: &DesiredTable) -> String {
    let cols: Vec<String> = d
        .columns
        .iter()
        .map(|c| format!("  {}", column_def(c)))
        .collect();
    let mut s = format!(
        "CREATE TABLE {} (\n{}\n) USING DELTA",
        names.table(&d.table),
        cols.join(",\n")
    );
    if let Some(p) = d.partitioned_by.as_ref().filter(|p| !p.is_empty()) {
        s.push_str(&format!("\nPARTITIONED BY ({})", list(p)));
    }
    if let Some(k) = d.cluster_by.as_ref().filter(|k| !k.is_empty()) {
        s.push_str(&format!("\nCLUSTER BY ({})", list(k)));
    }
    if let Some(c) = d.comment.as_ref().filter(|c| !c.is_empty()) {
        s.push_str(&format!("\nCOMMENT {}", literal(c)));
    }
    let mut p: BTreeMap<String, String> = d
        .properties
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    if d.columns.iter().any(|c| c.default.is_some()) {
        p.entry(DEFAULTS_FEATURE.into())
            .or_insert_with(|| "supported".into());
    }
    if d.columns
        .iter()
        .any(|c| needs_mapping(&c.name) || type_needs_mapping(&c.data_type))
    {
        p.entry("delta.columnMapping.mode".into())
            .or_insert_with(|| "name".into());
    }
    // the owner marker, and the record of the constraints it declares
    p.extend(d.marker_properties());
    s.push_str(&format!("\nTBLPROPERTIES ({})", props(&p)));
    s
}

/// A type as CAST writes it: struct fields by backticked name, no NOT NULL
/// or comments (a cast target carries neither).
pub fn cast_type(t: &DataType) -> String {
    match t {
        DataType::Array { element, .. } => format!("array<{}>", cast_type(element)),
        DataType::Map { key, value, .. } => {
            format!("map<{}, {}>", cast_type(key), cast_type(value))
        }
        DataType::Struct { fields } => {
            format!(
                "struct<{}>",
                fields
                    .iter()
                    .map(|f| format!("{}: {}", ident(&f.name), cast_type(&f.data_type)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        other => other.to_string(),
    }
}

/// How a cast is written: strict `CAST` when writing once (only lossless
/// casts are written once), `try_cast` into the staging copy, so a value
/// that does not convert becomes NULL there whatever the warehouse's ANSI
/// mode, and the check names it instead of the statement failing halfway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastMode {
    Strict,
    Try,
}

/// The SQL expression for one projected value. `scope` is the expression
/// the source's `from` is a field of (None: a top-level column); `depth`
/// numbers lambda variables so nested `transform`s do not shadow each other.
pub fn source_expr(
    src: &Source,
    to: &DataType,
    scope: Option<&str>,
    depth: usize,
    mode: CastMode,
) -> String {
    let at = |from: &str| match scope {
        Some(s) => format!("{s}.{}", ident(from)),
        None => ident(from),
    };
    match src {
        Source::Copy { from } => at(from),
        Source::Cast { from, .. } => {
            let f = if mode == CastMode::Try {
                "try_cast"
            } else {
                "CAST"
            };
            format!("{f}({} AS {})", at(from), cast_type(to))
        }
        Source::Using { expression } => format!("({expression})"),
        Source::Null => format!("CAST(NULL AS {})", cast_type(to)),
        Source::Struct { from, fields } => {
            let x = at(from);
            let DataType::Struct { fields: tf } = to else {
                return format!("CAST(NULL AS {})", cast_type(to));
            };
            format!(
                "CASE WHEN {x} IS NULL THEN NULL ELSE {} END",
                named_struct(&x, fields, tf, depth, mode)
            )
        }
        Source::Transform { from, fields } => {
            let DataType::Array { element, .. } = to else {
                return format!("CAST(NULL AS {})", cast_type(to));
            };
            let DataType::Struct { fields: tf } = &**element else {
                return format!("CAST(NULL AS {})", cast_type(to));
            };
            let e = format!("__e{depth}");
            format!(
                "transform({}, {e} -> CASE WHEN {e} IS NULL THEN NULL ELSE {} END)",
                at(from),
                named_struct(&e, fields, tf, depth + 1, mode)
            )
        }
    }
}

/// `named_struct('f', <value of x.f>, …)`: every target field by NAME.
fn named_struct(
    x: &str,
    fields: &[Projection],
    _target: &[StructField],
    depth: usize,
    mode: CastMode,
) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|p| {
            format!(
                "{}, {}",
                literal(&p.field.name),
                source_expr(&p.source, &p.field.data_type, Some(x), depth, mode)
            )
        })
        .collect();
    format!("named_struct({})", parts.join(", "))
}

/// The SELECT list of a rewrite: each target column from its source.
pub fn projection(rw: &Rewrite, mode: CastMode) -> String {
    rw.columns
        .iter()
        .map(|p| {
            format!(
                "{} AS {}",
                source_expr(&p.source, &p.field.data_type, None, 0, mode),
                ident(&p.field.name)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The staging copy's property naming the Delta version of the table it was made from.
pub const STAGED_FROM: &str = "delta-operator.io/staged-from-version";

/// The staging copy of a table for one run: a sibling in the same schema,
/// `<table>__delta_operator_staging_<8 hex digits of the run>`, so two runs
/// never share one.
pub fn staging_table(t: &TableRef, run: &str) -> TableRef {
    let tail: String = run
        .chars()
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    TableRef::new(
        &t.catalog,
        &t.schema,
        &format!("{}_{tail}", staging_name(&t.table)),
    )
}

/// Properties a replace carries in the same statement: those the planner
/// lists (`Rewrite::properties`: every live one, the spec's changes made),
/// and always the owner marker (so the table is never, even for a moment,
/// without its owner), the constraints record and column mapping (names
/// that need it cannot be written without it).
fn replace_properties(rw: &Rewrite, live: Option<&ObservedTable>) -> BTreeMap<String, String> {
    let keep = [
        OWNER_PROPERTY,
        delta_operator_core::model::CONSTRAINTS_PROPERTY,
        "delta.columnMapping.mode",
    ];
    let mut p: BTreeMap<String, String> = live
        .map(|l| {
            l.properties
                .iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    p.extend(rw.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
    p
}

/// What the staging copy needs of the table's features to hold its rows: a
/// copied column keeps its DEFAULT in its metadata, which Delta refuses
/// without the defaults feature (WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED,
/// measured on Delta 4.4), and names that need column mapping need it there too.
fn stage_properties(live: Option<&ObservedTable>) -> BTreeMap<String, String> {
    let keep = [DEFAULTS_FEATURE, "delta.columnMapping.mode"];
    live.map(|l| {
        l.properties
            .iter()
            .filter(|(k, _)| keep.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
    .unwrap_or_default()
}

/// `CREATE OR REPLACE TABLE t USING DELTA [PARTITIONED BY | CLUSTER BY] [TBLPROPERTIES] AS <query>`:
/// Delta's replace keeps the table's log and history (RESTORE can go back).
fn replace_as(
    names: &Names,
    t: &TableRef,
    rw: &Rewrite,
    live: Option<&ObservedTable>,
    query: &str,
) -> String {
    let mut s = format!("CREATE OR REPLACE TABLE {} USING DELTA", names.table(t));
    if !rw.partitioned_by.is_empty() {
        s.push_str(&format!(" PARTITIONED BY ({})", list(&rw.partitioned_by)));
    } else if !rw.cluster_by.is_empty() {
        s.push_str(&format!(" CLUSTER BY ({})", list(&rw.cluster_by)));
    }
    if let Some(c) = &rw.comment {
        s.push_str(&format!(" COMMENT {}", literal(c)));
    }
    let p = replace_properties(rw, live);
    if !p.is_empty() {
        s.push_str(&format!(" TBLPROPERTIES ({})", props(&p)));
    }
    s.push_str(&format!(" AS {query}"));
    s
}

/// The query of a replace that checks every row as the stage checked the
/// copy: a converted value that turns into NULL where the live value was
/// not, or a NULL in a NOT NULL column, raises an error, so the statement
/// fails with nothing replaced (whatever the warehouse's ANSI setting:
/// conversions use try_cast, and the check is explicit). The checks are in
/// the WHERE clause, each `true` or an error, so every copied column stays
/// a bare column reference: an alias of an expression carries no column
/// metadata (measured on Delta 4.4: a NOT NULL column selected through a
/// CASE lost its comment in the replace).
pub fn checked_query(rw: &Rewrite, live: Option<&ObservedTable>, from: &str) -> String {
    let mut checks = Vec::new();
    let select = rw
        .columns
        .iter()
        .map(|p| {
            let e = source_expr(&p.source, &p.field.data_type, None, 0, CastMode::Try);
            if let (true, Some(b)) = (p.converts(), baseline(p, live)) {
                let why = literal(&format!("converting {b} to {} ({}) would turn a value into NULL; nothing was replaced", p.field.name, p.field.data_type));
                checks.push(format!("CASE WHEN {} IS NOT NULL AND ({e}) IS NULL THEN raise_error({why}) ELSE true END", ident(b)));
            }
            if !p.field.nullable {
                let why = literal(&format!("column {} is declared NOT NULL but a row has no value; nothing was replaced", p.field.name));
                checks.push(format!("CASE WHEN ({e}) IS NULL THEN raise_error({why}) ELSE true END"));
            }
            format!("{e} AS {}", ident(&p.field.name))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut q = format!("SELECT {select} FROM {from}");
    if !checks.is_empty() {
        q.push_str(&format!(" WHERE {}", checks.join(" AND ")));
    }
    q
}

/// Rewrites as `CREATE … AS SELECT`. STAGE writes the converted rows of the
/// version read to a staging copy of this run, created only if absent (the
/// check is `stage_check`, run by the backend after it); the replace then
/// rebuilds the table from itself with every row checked (REPLACE from the
/// copy would silently drop rows appended after it was made: measured on
/// Delta 4.4, see docs/reliability.md); a write-once rewrite replaces the
/// table from itself (probe `replace_reads_itself`). Delta refuses either
/// replace if another writer commits while it runs. The replace carries the
/// table comment, properties and clustering itself; what it loses (NOT NULL, CHECKs,
/// keys, comments and defaults of converted columns) is put back by the
/// planner's following steps.
fn rewrite_sql(
    names: &Names,
    t: &TableRef,
    rw: &Rewrite,
    phase: RewritePhase,
    live: Option<&ObservedTable>,
    run: &str,
) -> Result<Vec<String>, SqlError> {
    nonempty(rw.columns.is_empty(), "the rewritten column list")?;
    let staging = names.table(&staging_table(t, run));
    Ok(vec![match phase {
        RewritePhase::WriteOnce => replace_as(names, t, rw, live, &format!("SELECT {} FROM {}", projection(rw, CastMode::Strict), names.table(t))),
        RewritePhase::Stage => {
            // pinned to the version read, so the check compares the copy with exactly what it copied
            // (unknown at plan time: the placeholder, bound when the step starts)
            let v = version_or_placeholder(live);
            let mut p = stage_properties(live);
            p.insert(STAGED_FROM.to_string(), v.clone());
            format!(
                "CREATE TABLE {staging} USING DELTA TBLPROPERTIES ({}) AS SELECT {} FROM {} VERSION AS OF {v}",
                props(&p),
                projection(rw, CastMode::Try),
                names.table(t)
            )
        }
        RewritePhase::ReplaceChecked => replace_as(names, t, rw, live, &checked_query(rw, live, &names.table(t))),
        RewritePhase::Replace => return Err(SqlError::Unsupported("REPLACE from the staging copy (it cannot be conditioned on the version the copy was made from)".into())),
        RewritePhase::DropStaging => format!("DROP TABLE IF EXISTS {staging}"),
    }])
}

/// The version a stage is made from: known when the step runs, the
/// placeholder when the plan is compiled.
fn version_or_placeholder(live: Option<&ObservedTable>) -> String {
    live.and_then(|l| l.version)
        .map_or_else(|| compile::VERSION.to_string(), |v| v.to_string())
}

/// The live column a converted projection is checked against: its source,
/// or for `using:` the live column of the same name (None: a new column).
fn baseline<'a>(p: &'a Projection, live: Option<&'a ObservedTable>) -> Option<&'a str> {
    match &p.source {
        Source::Using { .. } => live
            .and_then(|l| l.column(&p.field.name))
            .map(|c| c.name.as_str()),
        s => s.from(),
    }
}

/// One SELECT comparing the original with its staging copy: rows, non-NULL
/// values of every converted column (original vs copy), and non-NULL values
/// of every NOT NULL column in the copy. Columns `o_rows, o_c<i>…, s_rows,
/// s_c<i>…, s_n<i>…` (i: the projection's index).
pub fn stage_check(
    names: &Names,
    t: &TableRef,
    rw: &Rewrite,
    live: Option<&ObservedTable>,
    run: &str,
) -> String {
    let mut o = vec!["count(*) AS `o_rows`".to_string()];
    let mut s = vec!["count(*) AS `s_rows`".to_string()];
    for (i, p) in rw.columns.iter().enumerate() {
        if let Some(b) = baseline(p, live).filter(|_| p.converts()) {
            o.push(format!("count({}) AS `o_c{i}`", ident(b)));
            s.push(format!("count({}) AS `s_c{i}`", ident(&p.field.name)));
        }
        if !p.field.nullable {
            s.push(format!("count({}) AS `s_n{i}`", ident(&p.field.name)));
        }
    }
    let at = format!(" VERSION AS OF {}", version_or_placeholder(live));
    format!(
        "SELECT * FROM (SELECT {} FROM {}{at}) AS o CROSS JOIN (SELECT {} FROM {}) AS s",
        o.join(", "),
        names.table(t),
        s.join(", "),
        names.table(&staging_table(t, run))
    )
}

/// Why the staging copy does not match the original (from `stage_check`'s
/// one row), or None when it does.
pub fn stage_problem(
    rw: &Rewrite,
    live: Option<&ObservedTable>,
    columns: &[String],
    row: &[Option<String>],
) -> Result<Option<String>, String> {
    let get = |name: &str| -> Result<i64, String> {
        let i = columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
            .ok_or_else(|| format!("the check returned no column {name}"))?;
        row.get(i)
            .cloned()
            .flatten()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("the check returned no number for {name}"))
    };
    let (before, after) = (get("o_rows")?, get("s_rows")?);
    if before != after {
        return Ok(Some(format!(
            "the staging copy has {after} rows but the table has {before}"
        )));
    }
    for (i, p) in rw.columns.iter().enumerate() {
        if let (true, Some(b)) = (p.converts(), baseline(p, live)) {
            let (n, m) = (get(&format!("o_c{i}"))?, get(&format!("s_c{i}"))?);
            if m < n {
                return Ok(Some(format!(
                    "converting {b} to {} ({}) would turn {} values into NULL",
                    p.field.name,
                    p.field.data_type,
                    n - m
                )));
            }
        }
    }
    for (i, p) in rw.columns.iter().enumerate() {
        if !p.field.nullable {
            let m = get(&format!("s_n{i}"))?;
            if m < after {
                return Ok(Some(format!(
                    "column {} is declared NOT NULL but {} rows would have no value",
                    p.field.name,
                    after - m
                )));
            }
        }
    }
    Ok(None)
}

/// How to undo a step, as SQL a person can run where the plan runs: the
/// statements of its inverse steps (`undo::inverse`, compiled as any step
/// is: quoted, escaped), DROP PRIMARY KEY for a key that was not there,
/// UNDROP for a dropped table, RESTORE to the version the plan read for
/// steps that change data, drop columns or widen types. `live` is the table
/// before the step; None: no undo is known (the planner's hint stays).
pub fn undo(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
    version_before: Option<u64>,
) -> Option<String> {
    if let Some(steps) = live.and_then(|l| delta_operator_core::plan::undo::inverse(action, l)) {
        let mut out = Vec::new();
        for s in &steps {
            out.extend(compile_for(names, t, s, live, "").ok()?);
        }
        return Some(out.join(";\n"));
    }
    match action {
        Action::SetPrimaryKey { replaces: None, .. } => {
            Some(alter(names, t, "DROP PRIMARY KEY IF EXISTS"))
        }
        // a path-addressed table has no UNDROP: the lake's trash keeps it (`undo undrop`)
        Action::DropTable if *names == Names::Catalog => {
            Some(format!("UNDROP TABLE {}", names.table(t)))
        }
        Action::DropColumn { .. }
        | Action::DropField { .. }
        | Action::Rewrite { .. }
        | Action::AlterColumnType { .. } => {
            version_before.map(|v| format!("RESTORE TABLE {} TO VERSION AS OF {v}", names.table(t)))
        }
        _ => None,
    }
}

/// The table's size and file count (`sizeInBytes`), for a plan that rewrites or scans it.
pub fn describe_detail(names: &Names, t: &TableRef) -> String {
    format!("DESCRIBE DETAIL {}", names.table(t))
}

/// The table's current Delta version (the restore point).
pub fn history_head(names: &Names, t: &TableRef) -> String {
    format!("DESCRIBE HISTORY {} LIMIT 1", names.table(t))
}

/// `` `catalog`.`schema` ``.
pub fn schema_name(s: &SchemaRef) -> String {
    format!("{}.{}", ident(&s.catalog), ident(&s.schema))
}

/// A schema privilege as SQL: its canonical spelling, checked against the
/// schema allow-list (they are keywords and cannot be quoted).
pub fn schema_privilege(p: &Privilege) -> Result<&'static str, SqlError> {
    SCHEMA_KNOWN
        .iter()
        .copied()
        .find(|k| *k == p.as_str())
        .ok_or_else(|| SqlError::UnknownSchemaPrivilege(p.to_string()))
}

/// The statement of one schema step.
pub fn compile_schema(s: &SchemaRef, action: &SchemaAction) -> Result<String, SqlError> {
    let privileges = |ps: &[Privilege], what: &'static str| {
        nonempty(ps.is_empty(), what)?;
        let p = ps
            .iter()
            .map(schema_privilege)
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, SqlError>(p.join(", "))
    };
    Ok(match action {
        SchemaAction::SetComment { comment } if comment.is_empty() => {
            format!("COMMENT ON SCHEMA {} IS NULL", schema_name(s))
        }
        SchemaAction::SetComment { comment } => {
            format!(
                "COMMENT ON SCHEMA {} IS {}",
                schema_name(s),
                literal(comment)
            )
        }
        SchemaAction::SetProperties { properties } => {
            nonempty(properties.is_empty(), "SET DBPROPERTIES")?;
            format!(
                "ALTER SCHEMA {} SET DBPROPERTIES ({})",
                schema_name(s),
                props(properties)
            )
        }
        SchemaAction::Grant {
            principal,
            privileges: ps,
        } => format!(
            "GRANT {} ON SCHEMA {} TO {}",
            privileges(ps, "GRANT")?,
            schema_name(s),
            ident(principal)
        ),
        SchemaAction::Revoke {
            principal,
            privileges: ps,
        } => format!(
            "REVOKE {} ON SCHEMA {} FROM {}",
            privileges(ps, "REVOKE")?,
            schema_name(s),
            ident(principal)
        ),
        SchemaAction::SetOwner { owner } => {
            format!("ALTER SCHEMA {} OWNER TO {}", schema_name(s), ident(owner))
        }
    })
}

/// A statement that only reads: safe to send again when a connection drops.
pub fn is_read_only(statement: &str) -> bool {
    let first = statement
        .trim_start()
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    ["SELECT", "DESCRIBE", "SHOW", "WITH", "DESC", "EXPLAIN"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::type_syntax::parse_type;
    use delta_operator_core::model::{Check, ForeignKey, Identity, Mask, PrimaryKey};

    fn t() -> TableRef {
        TableRef::new("main", "sales", "orders")
    }

    fn sql(a: Action) -> Vec<String> {
        compile(&t(), &a, None).expect("compiles")
    }

    #[test]
    fn schema_steps_quote_every_name_and_escape_every_literal() {
        let s = SchemaRef {
            catalog: "ma`in".into(),
            schema: "sa les".into(),
        };
        let one = |a: SchemaAction| compile_schema(&s, &a).expect("compiles");
        assert_eq!(
            one(SchemaAction::SetComment {
                comment: "it's ${x}".into()
            }),
            r"COMMENT ON SCHEMA `ma``in`.`sa les` IS 'it\'s $\{x}'"
        );
        assert_eq!(
            one(SchemaAction::SetComment {
                comment: String::new()
            }),
            "COMMENT ON SCHEMA `ma``in`.`sa les` IS NULL"
        );
        assert_eq!(
            one(SchemaAction::SetProperties {
                properties: BTreeMap::from([("k'".into(), "v".into())])
            }),
            r"ALTER SCHEMA `ma``in`.`sa les` SET DBPROPERTIES ('k\'' = 'v')"
        );
        assert_eq!(
            one(SchemaAction::Grant {
                principal: "a`b".into(),
                privileges: vec![Privilege::new("use_schema"), Privilege::new("SELECT")],
            }),
            "GRANT USE SCHEMA, SELECT ON SCHEMA `ma``in`.`sa les` TO `a``b`"
        );
        assert_eq!(
            one(SchemaAction::Revoke {
                principal: "x".into(),
                privileges: vec![Privilege::new("MODIFY")],
            }),
            "REVOKE MODIFY ON SCHEMA `ma``in`.`sa les` FROM `x`"
        );
        assert_eq!(
            one(SchemaAction::SetOwner { owner: "o`".into() }),
            "ALTER SCHEMA `ma``in`.`sa les` OWNER TO `o```"
        );
        // a privilege outside the allow-list never reaches a statement
        let bad = SchemaAction::Grant {
            principal: "x".into(),
            privileges: vec![Privilege::new("SELECT ON CATALOG y TO z; --")],
        };
        assert!(matches!(
            compile_schema(&s, &bad),
            Err(SqlError::UnknownSchemaPrivilege(_))
        ));
        let none = SchemaAction::Revoke {
            principal: "x".into(),
            privileges: vec![],
        };
        assert_eq!(compile_schema(&s, &none), Err(SqlError::Empty("REVOKE")));
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

    #[test]
    fn comments_and_properties() {
        assert_eq!(
            sql(Action::SetTableComment {
                comment: "it's \\ ${x}".into()
            }),
            vec![r"COMMENT ON TABLE `main`.`sales`.`orders` IS 'it\'s \\ $\{x}'"]
        );
        assert_eq!(
            sql(Action::SetTableComment {
                comment: String::new()
            }),
            vec!["COMMENT ON TABLE `main`.`sales`.`orders` IS NULL"]
        );
        assert_eq!(
            sql(Action::SetColumnComment {
                path: vec!["a".into(), "b".into()].into(),
                comment: "x\ny".into()
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a`.`b` COMMENT 'x\ny'"]
        );
        let p = BTreeMap::from([("k'".to_string(), "v\\".to_string())]);
        assert_eq!(
            sql(Action::SetProperties { properties: p }),
            vec![r"ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('k\'' = 'v\\')"]
        );
        assert_eq!(
            sql(Action::UnsetProperties {
                keys: vec!["a".into(), "b".into()]
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` UNSET TBLPROPERTIES IF EXISTS ('a', 'b')"]
        );
        assert_eq!(
            sql(Action::Claim {
                marker: "ns/orders".into(),
                constraints: None,
            }),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders')"
            ]
        );
    }

    #[test]
    fn tags() {
        let tags = BTreeMap::from([("pii".to_string(), "e'mail".to_string())]);
        assert_eq!(
            sql(Action::SetTableTags { tags: tags.clone() }),
            vec![r"ALTER TABLE `main`.`sales`.`orders` SET TAGS ('pii' = 'e\'mail')"]
        );
        assert_eq!(
            sql(Action::UnsetTableTags {
                keys: vec!["pii".into()]
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` UNSET TAGS ('pii')"]
        );
        assert_eq!(
            sql(Action::SetColumnTags {
                column: "e`mail".into(),
                tags
            }),
            vec![
                r"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `e``mail` SET TAGS ('pii' = 'e\'mail')"
            ]
        );
        assert_eq!(
            sql(Action::UnsetColumnTags {
                column: "c".into(),
                keys: vec!["a".into()]
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `c` UNSET TAGS ('a')"]
        );
        assert_eq!(
            compile(
                &t(),
                &Action::SetTableTags {
                    tags: BTreeMap::new()
                },
                None
            ),
            Err(SqlError::Empty("SET TAGS"))
        );
    }

    #[test]
    fn grants_use_the_allow_list() {
        assert_eq!(
            sql(Action::Grant {
                principal: "data `team`".into(),
                privileges: vec!["select".into(), "all_privileges".into(), "APPLY TAG".into()]
            }),
            vec![
                "GRANT SELECT, ALL PRIVILEGES, APPLY TAG ON TABLE `main`.`sales`.`orders` TO `data ``team```"
            ]
        );
        assert_eq!(
            sql(Action::Revoke {
                principal: "a@b.com".into(),
                privileges: vec!["MODIFY".into()]
            }),
            vec!["REVOKE MODIFY ON TABLE `main`.`sales`.`orders` FROM `a@b.com`"]
        );
        let bad = compile(
            &t(),
            &Action::Grant {
                principal: "x".into(),
                privileges: vec!["SELECT; DROP TABLE y".into()],
            },
            None,
        );
        assert!(matches!(bad, Err(SqlError::UnknownPrivilege(_))));
    }

    #[test]
    fn columns() {
        let ty = parse_type("struct<`a b`:int not null comment 'it\\'s',c:array<string>>")
            .expect("a type");
        let f = StructField {
            name: "s".into(),
            data_type: ty,
            nullable: true,
            comment: Some("c'".into()),
        };
        assert_eq!(
            sql(Action::AddColumn {
                path: vec!["p".into(), "s".into()].into(),
                field: f
            }),
            vec![
                r"ALTER TABLE `main`.`sales`.`orders` ADD COLUMN `p`.`s` struct<`a b`: int NOT NULL COMMENT 'it\'s', `c`: array<string>> COMMENT 'c\''"
            ]
        );
        assert_eq!(
            sql(Action::RenameColumn {
                from: "a`".into(),
                to: "b".into()
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` RENAME COLUMN `a``` TO `b`"]
        );
        assert_eq!(
            sql(Action::DropColumn { name: "x".into() }),
            vec!["ALTER TABLE `main`.`sales`.`orders` DROP COLUMN `x`"]
        );
        assert_eq!(
            sql(Action::AlterColumnType {
                path: vec!["a".into()].into(),
                to: DataType::Decimal {
                    precision: 18,
                    scale: 2
                }
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a` TYPE decimal(18,2)"]
        );
        assert_eq!(
            sql(Action::SetNotNull {
                path: vec!["s".to_string(), "f".to_string()].into()
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `s`.`f` SET NOT NULL"]
        );
        assert_eq!(
            sql(Action::DropNotNull {
                path: vec!["a".to_string()].into()
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `a` DROP NOT NULL"]
        );
    }

    #[test]
    fn prerequisites() {
        assert_eq!(
            sql(Action::EnableColumnMapping),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
            ]
        );
        let mut live = ObservedTable::new(t(), vec![]);
        live.properties
            .insert("delta.minReaderVersion".into(), "1".into());
        live.properties
            .insert("delta.minWriterVersion".into(), "2".into());
        assert_eq!(
            compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default(),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
            ]
        );
        live.properties
            .insert("delta.minReaderVersion".into(), "3".into());
        live.properties
            .insert("delta.minWriterVersion".into(), "7".into());
        assert_eq!(
            compile(&t(), &Action::EnableColumnMapping, Some(&live))
                .unwrap_or_default()
                .len(),
            1
        );
        assert!(
            !compile(&t(), &Action::EnableColumnMapping, Some(&live)).unwrap_or_default()[0]
                .contains("Version")
        );
        assert_eq!(
            sql(Action::EnableTypeWidening),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
            ]
        );
        assert_eq!(
            sql(Action::SetDefault {
                column: "c".into(),
                expression: "current_date()".into()
            }),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
                "ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `c` SET DEFAULT current_date()",
            ]
        );
        live.properties
            .insert(DEFAULTS_FEATURE.into(), "supported".into());
        assert_eq!(
            compile(
                &t(),
                &Action::SetDefault {
                    column: "c".into(),
                    expression: "1".into()
                },
                Some(&live)
            )
            .unwrap_or_default()
            .len(),
            1
        );
    }

    #[test]
    fn constraints_masks_clustering() {
        assert_eq!(
            sql(Action::AddCheck {
                check: Check {
                    name: "pos".into(),
                    expression: "amount >= 0".into()
                }
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `pos` CHECK (amount >= 0)"]
        );
        assert_eq!(
            sql(Action::DropCheck { name: "pos".into() }),
            vec!["ALTER TABLE `main`.`sales`.`orders` DROP CONSTRAINT IF EXISTS `pos`"]
        );
        let live = ObservedTable::new(t(), vec![]);
        assert_eq!(
            compile(
                &t(),
                &Action::SetPrimaryKey {
                    key: PrimaryKey {
                        name: None,
                        columns: vec!["id".into()]
                    },
                    replaces: None,
                },
                Some(&live)
            )
            .unwrap_or_default(),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `orders_pk` PRIMARY KEY (`id`)"
            ]
        );
        assert_eq!(
            sql(Action::SetPrimaryKey {
                key: PrimaryKey {
                    name: Some("pk".into()),
                    columns: vec!["a".into(), "b".into()]
                },
                replaces: None,
            })
            .len(),
            2
        );
        let fk = ForeignKey {
            name: Some("fk".into()),
            columns: vec!["cid".into()],
            references: TableRef::new("main", "sales", "customers"),
            referenced_columns: vec!["id".into()],
        };
        assert_eq!(
            sql(Action::AddForeignKey { key: fk.clone() }),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` ADD CONSTRAINT `fk` FOREIGN KEY (`cid`) REFERENCES `main`.`sales`.`customers` (`id`)"
            ]
        );
        assert_eq!(
            sql(Action::DropForeignKey { key: fk }),
            vec!["ALTER TABLE `main`.`sales`.`orders` DROP FOREIGN KEY IF EXISTS (`cid`)"]
        );
        assert_eq!(
            sql(Action::SetMask {
                column: "email".into(),
                mask: Mask {
                    function: "main.sec.mask_email".into(),
                    using_columns: vec!["region".into()]
                }
            }),
            vec![
                "ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `email` SET MASK `main`.`sec`.`mask_email` USING COLUMNS (`region`)"
            ]
        );
        assert_eq!(
            sql(Action::SetClustering { keys: vec![] }),
            vec!["ALTER TABLE `main`.`sales`.`orders` CLUSTER BY NONE"]
        );
        assert_eq!(
            sql(Action::SetClustering {
                keys: vec!["a".into(), "b".into()]
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` CLUSTER BY (`a`, `b`)"]
        );
        assert_eq!(
            sql(Action::SetOwner {
                owner: "team`x".into()
            }),
            vec!["ALTER TABLE `main`.`sales`.`orders` SET OWNER TO `team``x`"]
        );
        assert_eq!(
            sql(Action::DropTable),
            vec!["DROP TABLE IF EXISTS `main`.`sales`.`orders`"]
        );
    }

    #[test]
    fn create_table_inline() {
        let mut id = DesiredColumn::new("id", DataType::Long, false);
        id.identity = Some(Identity {
            always: true,
            start: 1,
            increment: 1,
        });
        let mut day = DesiredColumn::new("day", DataType::Date, true);
        day.generated = Some("CAST(ts AS DATE)".into());
        let mut st = DesiredColumn::new("odd name", DataType::String, true);
        st.default = Some("'new'".into());
        st.comment = Some("it's ${x}\nok".into());
        let mut d = DesiredTable::new(t(), "ns/orders", vec![id, day, st]);
        d.cluster_by = Some(vec!["id".into()]);
        d.comment = Some("Orders ✓".into());
        d.properties
            .insert("delta.enableChangeDataFeed".into(), Some("true".into()));
        d.properties.insert("gone".into(), None);
        let s = create_table(&Names::Catalog, &d);
        assert_eq!(
            s,
            "CREATE TABLE `main`.`sales`.`orders` (\n  `id` bigint NOT NULL GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1),\n  `day` date GENERATED ALWAYS AS (CAST(ts AS DATE)),\n  `odd name` string DEFAULT 'new' COMMENT 'it\\'s $\\{x}\nok'\n) USING DELTA\nCLUSTER BY (`id`)\nCOMMENT 'Orders ✓'\nTBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders', 'delta.columnMapping.mode' = 'name', 'delta.enableChangeDataFeed' = 'true', 'delta.feature.allowColumnDefaults' = 'supported')"
        );
        let mut by_default = DesiredColumn::new("n", DataType::Long, true);
        by_default.identity = Some(Identity {
            always: false,
            start: 10,
            increment: 5,
        });
        let mut d2 = DesiredTable::new(
            t(),
            "ns/o",
            vec![by_default, DesiredColumn::new("p", DataType::Date, true)],
        );
        d2.partitioned_by = Some(vec!["p".into()]);
        let s2 = create_table(&Names::Catalog, &d2);
        assert!(
            s2.contains("GENERATED BY DEFAULT AS IDENTITY (START WITH 10 INCREMENT BY 5)"),
            "{s2}"
        );
        assert!(s2.contains("\nPARTITIONED BY (`p`)\n"), "{s2}");
        assert!(!s2.contains("columnMapping"), "{s2}");
    }

    fn proj(name: &str, ty: &str, nullable: bool, source: Source) -> Projection {
        Projection {
            field: StructField {
                name: name.into(),
                data_type: parse_type(ty).expect("a type"),
                nullable,
                comment: None,
            },
            source,
        }
    }

    /// Every projection kind, with names that need quoting.
    fn hostile_rewrite() -> Rewrite {
        let long = parse_type("bigint").expect("a type");
        Rewrite {
            columns: vec![
                proj("i`d", "bigint", false, Source::Copy { from: "i`d".into() }),
                proj(
                    "re mark",
                    "string",
                    true,
                    Source::Copy {
                        from: "no'te".into(),
                    },
                ),
                proj(
                    "n",
                    "int",
                    true,
                    Source::Cast {
                        from: "n`".into(),
                        from_type: long.clone(),
                    },
                ),
                proj(
                    "c",
                    "string",
                    true,
                    Source::Using {
                        expression: "upper(`c`)".into(),
                    },
                ),
                proj("new", "date", true, Source::Null),
                proj(
                    "a`ddr",
                    "struct<`ci'ty`:string,zip:bigint,country:string>",
                    true,
                    Source::Struct {
                        from: "a`ddr".into(),
                        fields: vec![
                            proj(
                                "ci'ty",
                                "string",
                                true,
                                Source::Copy {
                                    from: "ci'ty".into(),
                                },
                            ),
                            proj(
                                "zip",
                                "bigint",
                                true,
                                Source::Cast {
                                    from: "zip".into(),
                                    from_type: DataType::Int,
                                },
                            ),
                            proj("country", "string", true, Source::Null),
                        ],
                    },
                ),
                proj(
                    "items",
                    "array<struct<q:bigint,sku:string>>",
                    true,
                    Source::Transform {
                        from: "it`ems".into(),
                        fields: vec![
                            proj(
                                "q",
                                "bigint",
                                true,
                                Source::Cast {
                                    from: "q".into(),
                                    from_type: DataType::Int,
                                },
                            ),
                            proj("sku", "string", true, Source::Copy { from: "sku".into() }),
                        ],
                    },
                ),
            ],
            partitioned_by: vec!["p`x".into()],
            ..Rewrite::default()
        }
    }

    fn ht() -> TableRef {
        TableRef::new("ma`in", "s'ales", "or`ders")
    }

    #[test]
    fn rewrite_projection_names_every_field_and_quotes_hostile_names() {
        let rw = hostile_rewrite();
        assert_eq!(
            projection(&rw, CastMode::Strict),
            "`i``d` AS `i``d`, `no'te` AS `re mark`, CAST(`n``` AS int) AS `n`, (upper(`c`)) AS `c`, CAST(NULL AS date) AS `new`, \
             CASE WHEN `a``ddr` IS NULL THEN NULL ELSE named_struct('ci\\'ty', `a``ddr`.`ci'ty`, 'zip', CAST(`a``ddr`.`zip` AS bigint), 'country', CAST(NULL AS string)) END AS `a``ddr`, \
             transform(`it``ems`, __e0 -> CASE WHEN __e0 IS NULL THEN NULL ELSE named_struct('q', CAST(__e0.`q` AS bigint), 'sku', __e0.`sku`) END) AS `items`"
        );
        assert!(
            projection(&rw, CastMode::Try).contains("try_cast(`n``` AS int)"),
            "the stage never fails on a value: it becomes NULL and the check finds it"
        );
        assert_eq!(
            cast_type(
                &parse_type("array<struct<`a b`:int not null comment 'x'>>").expect("a type")
            ),
            "array<struct<`a b`: int>>"
        );
    }

    #[test]
    fn rewrite_phases_compile_to_create_or_replace() {
        let rw = hostile_rewrite();
        let mut live = ObservedTable::new(ht(), vec![]);
        live.properties
            .insert(OWNER_PROPERTY.into(), "ns/o'rders".into());
        live.properties.insert("other".into(), "x".into());
        live.version = Some(12);
        let c = |phase| {
            compile_for(
                &Names::Catalog,
                &ht(),
                &Action::Rewrite {
                    rewrite: rw.clone(),
                    phase,
                },
                Some(&live),
                "m1abc-0011aabb",
            )
            .expect("compiles")
        };
        let t = "`ma``in`.`s'ales`.`or``ders`";
        let st = "`ma``in`.`s'ales`.`or``ders__delta_operator_staging_0011aabb`";
        let once = c(RewritePhase::WriteOnce);
        assert_eq!(once.len(), 1);
        assert!(
            once[0].starts_with(&format!("CREATE OR REPLACE TABLE {t} USING DELTA PARTITIONED BY (`p``x`) TBLPROPERTIES ('delta-operator.io/owner' = 'ns/o\\'rders') AS SELECT `i``d` AS `i``d`,")),
            "{}",
            once[0]
        );
        assert!(
            once[0].ends_with(&format!(" FROM {t}")) && once[0].contains("CAST(`n``` AS int)"),
            "{}",
            once[0]
        );
        assert!(
            !once[0].contains("'other'"),
            "other properties are put back by their own step"
        );
        // the stage: a copy of this run only, created only if absent, of exactly the version read
        let stage = c(RewritePhase::Stage);
        assert!(stage[0].starts_with(&format!("CREATE TABLE {st} USING DELTA TBLPROPERTIES ('delta-operator.io/staged-from-version' = '12') AS SELECT ")), "{}", stage[0]);
        assert!(
            stage[0].ends_with(&format!(" FROM {t} VERSION AS OF 12"))
                && stage[0].contains("try_cast(`n``` AS int)"),
            "{}",
            stage[0]
        );
        // a copied column keeps its DEFAULT: the copy needs the feature (and column mapping) too
        let mut with_defaults = live.clone();
        with_defaults
            .properties
            .insert(DEFAULTS_FEATURE.into(), "supported".into());
        with_defaults
            .properties
            .insert("delta.columnMapping.mode".into(), "name".into());
        let stage = compile_for(
            &Names::Catalog,
            &ht(),
            &Action::Rewrite {
                rewrite: rw.clone(),
                phase: RewritePhase::Stage,
            },
            Some(&with_defaults),
            "m1abc-0011aabb",
        )
        .expect("compiles");
        assert!(stage[0].starts_with(&format!("CREATE TABLE {st} USING DELTA TBLPROPERTIES ('delta-operator.io/staged-from-version' = '12', 'delta.columnMapping.mode' = 'name', 'delta.feature.allowColumnDefaults' = 'supported') AS SELECT ")), "{}", stage[0]);
        // the replace: from the table itself (rows appended since the stage included), every row checked
        let replace = c(RewritePhase::ReplaceChecked);
        assert!(replace[0].starts_with(&format!("CREATE OR REPLACE TABLE {t} USING DELTA PARTITIONED BY (`p``x`) TBLPROPERTIES ('delta-operator.io/owner' = 'ns/o\\'rders') AS SELECT ")), "{}", replace[0]);
        // every copied column is a bare reference (it keeps its comment and
        // default); the checks are in the WHERE clause
        assert!(
            replace[0].contains(
                " AS SELECT `i``d` AS `i``d`, `no'te` AS `re mark`, try_cast(`n``` AS int) AS `n`, "
            ),
            "{}",
            replace[0]
        );
        assert!(
            replace[0].contains(&format!(" FROM {t} WHERE ")),
            "{}",
            replace[0]
        );
        assert!(replace[0].contains("CASE WHEN `n``` IS NOT NULL AND (try_cast(`n``` AS int)) IS NULL THEN raise_error('converting n` to n (int) would turn a value into NULL; nothing was replaced') ELSE true END"), "{}", replace[0]);
        assert!(
            replace[0].contains("raise_error('column i`d is declared NOT NULL"),
            "{}",
            replace[0]
        );
        assert!(
            compile_for(
                &Names::Catalog,
                &ht(),
                &Action::Rewrite {
                    rewrite: rw.clone(),
                    phase: RewritePhase::Replace
                },
                Some(&live),
                "r"
            )
            .is_err(),
            "never from the staging copy"
        );
        assert_eq!(
            c(RewritePhase::DropStaging),
            vec![format!("DROP TABLE IF EXISTS {st}")]
        );
        assert_ne!(
            staging_table(&ht(), "m1abc-0011aabb"),
            staging_table(&ht(), "m1abc-2233ccdd"),
            "two runs never share a staging copy"
        );
        live.version = None;
        // the replace writes the clustering the planner gives it (the
        // declared one, or the live one's surviving columns)
        let mut rw2 = rw.clone();
        rw2.partitioned_by.clear();
        rw2.cluster_by = vec!["i`d".into()];
        let s = compile(
            &ht(),
            &Action::Rewrite {
                rewrite: rw2,
                phase: RewritePhase::WriteOnce,
            },
            Some(&live),
        )
        .expect("compiles");
        assert!(
            s[0].contains(" USING DELTA CLUSTER BY (`i``d`) TBLPROPERTIES"),
            "{}",
            s[0]
        );
        assert_eq!(
            compile(
                &ht(),
                &Action::CloneTable {
                    name: "or`ders__delta_operator_clone_v3".into()
                },
                None
            )
            .expect("compiles"),
            vec![
                format!(
                    "CREATE TABLE IF NOT EXISTS `ma``in`.`s'ales`.`or``ders__delta_operator_clone_v3` SHALLOW CLONE {t}"
                ),
                // the clone is nobody's table: a strict schema must not plan to drop it
                "ALTER TABLE `ma``in`.`s'ales`.`or``ders__delta_operator_clone_v3` UNSET TBLPROPERTIES IF EXISTS ('delta-operator.io/owner')".to_string(),
            ]
        );
        assert_eq!(
            undo(
                &Names::Catalog,
                &ht(),
                &Action::Rewrite {
                    rewrite: rw,
                    phase: RewritePhase::Replace
                },
                None,
                Some(4)
            )
            .as_deref(),
            Some(format!("RESTORE TABLE {t} TO VERSION AS OF 4").as_str())
        );
        let empty = Rewrite {
            columns: vec![],
            partitioned_by: vec![],
            ..Rewrite::default()
        };
        assert!(
            compile(
                &ht(),
                &Action::Rewrite {
                    rewrite: empty,
                    phase: RewritePhase::WriteOnce
                },
                None
            )
            .is_err()
        );
    }

    #[test]
    fn the_stage_check_compares_counts_and_names_the_loss() {
        let rw = hostile_rewrite();
        let mut live = ObservedTable::new(ht(), vec![]);
        live.columns
            .push(delta_operator_core::model::ObservedColumn::new(
                "c",
                DataType::Int,
                true,
            ));
        live.version = Some(7);
        let q = stage_check(&Names::Catalog, &ht(), &rw, Some(&live), "m1abc-0011aabb");
        assert_eq!(
            q,
            "SELECT * FROM (SELECT count(*) AS `o_rows`, count(`n```) AS `o_c2`, count(`c`) AS `o_c3`, count(`a``ddr`) AS `o_c5`, count(`it``ems`) AS `o_c6` FROM `ma``in`.`s'ales`.`or``ders` VERSION AS OF 7) AS o \
             CROSS JOIN (SELECT count(*) AS `s_rows`, count(`i``d`) AS `s_n0`, count(`n`) AS `s_c2`, count(`c`) AS `s_c3`, count(`a``ddr`) AS `s_c5`, count(`items`) AS `s_c6` FROM `ma``in`.`s'ales`.`or``ders__delta_operator_staging_0011aabb`) AS s"
        );
        assert!(is_read_only(&q));
        let cols: Vec<String> = [
            "o_rows", "o_c2", "o_c3", "o_c5", "o_c6", "s_rows", "s_n0", "s_c2", "s_c3", "s_c5",
            "s_c6",
        ]
        .iter()
        .map(|c| c.to_string())
        .collect();
        let row = |v: [i64; 11]| v.iter().map(|n| Some(n.to_string())).collect::<Vec<_>>();
        assert_eq!(
            stage_problem(
                &rw,
                Some(&live),
                &cols,
                &row([10, 9, 8, 7, 6, 10, 10, 9, 8, 7, 6])
            ),
            Ok(None)
        );
        let lost = stage_problem(
            &rw,
            Some(&live),
            &cols,
            &row([10, 9, 8, 7, 6, 10, 10, 7, 8, 7, 6]),
        )
        .expect("a verdict")
        .expect("a problem");
        assert!(
            lost.contains("would turn 2 values into NULL") && lost.contains("n`"),
            "{lost}"
        );
        let rows = stage_problem(
            &rw,
            Some(&live),
            &cols,
            &row([10, 9, 8, 7, 6, 9, 9, 9, 8, 7, 6]),
        )
        .expect("a verdict")
        .expect("a problem");
        assert!(rows.contains("9 rows but the table has 10"), "{rows}");
        let nn = stage_problem(
            &rw,
            Some(&live),
            &cols,
            &row([10, 9, 8, 7, 6, 10, 8, 9, 8, 7, 6]),
        )
        .expect("a verdict")
        .expect("a problem");
        assert!(nn.contains("declared NOT NULL but 2 rows"), "{nn}");
        assert!(
            stage_problem(
                &rw,
                Some(&live),
                &cols[..3],
                &row([10, 9, 8, 7, 6, 10, 10, 9, 8, 7, 6])[..3]
            )
            .is_err(),
            "a missing column is an error, never a pass"
        );
    }

    #[test]
    fn undo_hints() {
        assert_eq!(
            undo(&Names::Catalog, &t(), &Action::DropTable, None, None).as_deref(),
            Some("UNDROP TABLE `main`.`sales`.`orders`")
        );
        assert_eq!(
            undo(
                &Names::Catalog,
                &t(),
                &Action::DropColumn { name: "x".into() },
                None,
                Some(7)
            )
            .as_deref(),
            Some("RESTORE TABLE `main`.`sales`.`orders` TO VERSION AS OF 7")
        );
        assert_eq!(
            undo(
                &Names::Catalog,
                &t(),
                &Action::EnableTypeWidening,
                Some(&ObservedTable::new(t(), vec![])),
                Some(7)
            ),
            None
        );
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
