//! Rewrites: the projection that converts every row, the staging copy and
//! the check that compares it with the original, and the replace that checks
//! every row again as it writes.

use delta_operator_core::model::property;
use std::collections::BTreeMap;

use delta_operator_core::model::{
    DataType, OWNER_PROPERTY, ObservedTable, STAGED_FROM_PROPERTY, StructField, TableRef,
};
use delta_operator_core::plan::compile;
use delta_operator_core::plan::steps::{Projection, Rewrite, RewritePhase, Source, staging_name};

use crate::ddl::DEFAULTS_FEATURE;
use crate::quote::{Names, ident, list, literal, props};
use crate::types::cast_type;
use crate::{SqlError, nonempty};

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
        property::COLUMN_MAPPING_MODE,
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
    let keep = [DEFAULTS_FEATURE, property::COLUMN_MAPPING_MODE];
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
    // a partition value that would be '' (stored as NULL) fails the replace too
    checks.extend(crate::partitions::guards(rw, CastMode::Try));
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
pub(crate) fn rewrite_sql(
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
        RewritePhase::WriteOnce => replace_as(names, t, rw, live, &write_once_query(names, t, rw)),
        RewritePhase::Stage => {
            // pinned to the version read, so the check compares the copy with exactly what it copied
            // (unknown at plan time: the placeholder, bound when the step starts)
            let v = version_or_placeholder(live);
            let mut p = stage_properties(live);
            p.insert(STAGED_FROM_PROPERTY.to_string(), v.clone());
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

/// The query of a write-once replace: the projection of the table itself; a
/// row whose new partition value would be '' (Delta stores it as NULL) raises
/// an error, so the statement fails with nothing replaced.
fn write_once_query(names: &Names, t: &TableRef, rw: &Rewrite) -> String {
    let mut q = format!(
        "SELECT {} FROM {}",
        projection(rw, CastMode::Strict),
        names.table(t)
    );
    let guards = crate::partitions::guards(rw, CastMode::Strict);
    if !guards.is_empty() {
        q.push_str(&format!(" WHERE {}", guards.join(" AND ")));
    }
    q
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::compile_for;

    use crate::readonly::is_read_only;
    use crate::undo::undo;
    use delta_operator_core::model::type_syntax::parse_type;
    use delta_operator_core::plan::steps::Action;

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
        let s = crate::compile::compile(
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
            crate::compile::compile(
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
            crate::compile::compile(
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
}
