//! Empty partition values: Delta stores an empty partition value as NULL, so a
//! rewrite whose new partition column would hold `''` (a string, or an empty
//! binary) would quietly turn those values into NULL. A rewrite counts them
//! before it starts (the count names each column), and its replace raises an
//! error on such a row, so one appended after the count cannot slip through.

use delta_operator_core::model::{DataType, TableRef};
use delta_operator_core::plan::steps::{Projection, Rewrite};

use crate::quote::{Names, ident, literal};
use crate::rewrite::{CastMode, source_expr};

/// The rewrite's partition columns whose values can be empty (strings, binaries),
/// with their index in the projection.
pub fn emptiable(rw: &Rewrite) -> Vec<(usize, &Projection)> {
    rw.columns
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            rw.partitioned_by
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&p.field.name))
                && matches!(
                    p.field.data_type,
                    DataType::String
                        | DataType::Varchar { .. }
                        | DataType::Char { .. }
                        | DataType::Binary
                )
        })
        .collect()
}

/// The value a rewritten row's partition column gets, as the rewrite writes it.
fn value(p: &Projection, mode: CastMode) -> String {
    source_expr(&p.source, &p.field.data_type, None, 0, mode)
}

/// The count before a rewrite: one column `e<i>` per emptiable partition column
/// (i: the projection's index), the rows whose rewritten value would be empty.
/// None when the rewrite has no such column.
pub fn empty_count(names: &Names, t: &TableRef, rw: &Rewrite) -> Option<String> {
    let cols = emptiable(rw);
    if cols.is_empty() {
        return None;
    }
    let counts: Vec<String> = cols
        .iter()
        .map(|(i, p)| {
            format!(
                "count_if(length({}) = 0) AS `e{i}`",
                value(p, CastMode::Try)
            )
        })
        .collect();
    Some(format!(
        "SELECT {} FROM {}",
        counts.join(", "),
        names.table(t)
    ))
}

/// What the plan says the count refuses.
pub fn refuses(rw: &Rewrite) -> String {
    let names: Vec<&str> = emptiable(rw)
        .iter()
        .map(|(_, p)| p.field.name.as_str())
        .collect();
    format!(
        "any row whose partition column ({}) would hold '': Delta stores an empty partition value as NULL, so the rewrite would turn '' into NULL; nothing is changed, and the message names the column and the count (the replace raises an error on such a row too). A `using:` on the column maps '' to a value",
        names.join(", ")
    )
}

/// The replace's guards, each `true` or an error: a row whose rewritten
/// partition value would be empty fails the statement with nothing replaced.
pub fn guards(rw: &Rewrite, mode: CastMode) -> Vec<String> {
    emptiable(rw)
        .iter()
        .map(|(_, p)| {
            let why = literal(&format!(
                "a row would hold '' in partition column {}: Delta stores an empty partition value as NULL; nothing was replaced",
                p.field.name
            ));
            format!(
                "CASE WHEN length({}) = 0 THEN raise_error({why}) ELSE true END",
                value(p, mode)
            )
        })
        .collect()
}

/// The refusal when the count found rows (from `empty_count`'s one row), or
/// None when it found none.
pub fn emptied(
    rw: &Rewrite,
    columns: &[String],
    row: &[Option<String>],
) -> Result<Option<String>, String> {
    let mut found = Vec::new();
    for (i, p) in emptiable(rw) {
        let name = format!("e{i}");
        let at = columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(&name))
            .ok_or_else(|| format!("the count returned no column {name}"))?;
        let n: u64 = row
            .get(at)
            .cloned()
            .flatten()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("the count returned no number for {name}"))?;
        if n > 0 {
            found.push((p.field.name.as_str(), n));
        }
    }
    let Some((first, _)) = found.first() else {
        return Ok(None);
    };
    let counts: Vec<String> = found
        .iter()
        .map(|(name, n)| format!("{n} rows hold '' in partition column {name}"))
        .collect();
    let col = ident(first);
    Ok(Some(format!(
        "{}: Delta stores an empty partition value as NULL, so the rewrite would turn '' into NULL; nothing was changed. Give those rows a value first, or declare a `using:` on the column that maps '' to a value (e.g. `using: \"CASE WHEN {col} = '' THEN '(empty)' ELSE {col} END\"`)",
        counts.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::StructField;
    use delta_operator_core::model::type_syntax::parse_type;
    use delta_operator_core::plan::steps::Source;

    fn proj(name: &str, ty: &str, source: Source) -> Projection {
        Projection {
            field: StructField {
                name: name.into(),
                data_type: parse_type(ty).expect("a type"),
                nullable: true,
                comment: None,
            },
            source,
        }
    }

    fn rw() -> Rewrite {
        Rewrite {
            columns: vec![
                proj("id", "bigint", Source::Copy { from: "id".into() }),
                proj(
                    "re`gion",
                    "string",
                    Source::Copy {
                        from: "re`gion".into(),
                    },
                ),
                proj(
                    "day",
                    "string",
                    Source::Using {
                        expression: "trim(`d`)".into(),
                    },
                ),
                proj("n", "int", Source::Copy { from: "n".into() }),
            ],
            partitioned_by: vec!["RE`GION".into(), "day".into(), "n".into()],
            ..Rewrite::default()
        }
    }

    #[test]
    fn only_string_partition_columns_are_counted_by_their_rewritten_value() {
        let t = TableRef::new("main", "sales", "orders");
        let q = empty_count(&Names::Catalog, &t, &rw()).expect("a count");
        assert_eq!(
            q,
            "SELECT count_if(length(`re``gion`) = 0) AS `e1`, count_if(length((trim(`d`))) = 0) AS `e2` FROM `main`.`sales`.`orders`"
        );
        let unpartitioned = Rewrite {
            partitioned_by: vec![],
            ..rw()
        };
        assert_eq!(empty_count(&Names::Catalog, &t, &unpartitioned), None);
        assert!(guards(&unpartitioned, CastMode::Strict).is_empty());
        let g = guards(&rw(), CastMode::Try);
        assert_eq!(g.len(), 2);
        assert!(
            g[0].starts_with("CASE WHEN length(`re``gion`) = 0 THEN raise_error('a row would hold \\'\\' in partition column re`gion"),
            "{}",
            g[0]
        );
    }

    #[test]
    fn the_refusal_names_each_column_and_its_count() {
        let cols = vec!["e1".to_string(), "e2".to_string()];
        assert_eq!(
            emptied(&rw(), &cols, &[Some("0".into()), Some("0".into())]),
            Ok(None)
        );
        let said = emptied(&rw(), &cols, &[Some("0".into()), Some("3".into())])
            .expect("a verdict")
            .expect("a refusal");
        assert!(
            said.starts_with("3 rows hold '' in partition column day: Delta stores an empty partition value as NULL"),
            "{said}"
        );
        assert!(said.contains("nothing was changed"), "{said}");
        assert!(
            emptied(&rw(), &cols[..1], &[Some("0".into())]).is_err(),
            "a missing column is an error, never a pass"
        );
        assert!(emptied(&rw(), &cols, &[Some("0".into()), None]).is_err());
    }
}
