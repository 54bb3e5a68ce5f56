//! Rules about rewrites: what a rebuild of the table would lose or cannot convert.

use super::*;

/// A replace that makes every column nullable (`replace_keeps_metadata`
/// false) is followed by SET NOT NULL put-backs; a backend that cannot set
/// NOT NULL in place (OSS Delta) would lose them, so such a rewrite is refused.
pub(super) fn check_rewrite_keeps_not_null(
    desired: &DesiredTable,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    if caps.replace_keeps_metadata || caps.set_not_null == Strategy::InPlace {
        return;
    }
    let not_null: Vec<&str> = desired
        .columns
        .iter()
        .filter(|c| !c.nullable)
        .map(|c| c.name.as_str())
        .collect();
    if !not_null.is_empty() {
        out.push(fail(
            Rule::RewriteRefused,
            "table",
            format!(
                "this change rewrites the table, and on the {} backend the replace makes every column nullable with no way to set NOT NULL again in place: {} would lose NOT NULL",
                caps.backend,
                not_null.join(", ")
            ),
            "make the change without a rewrite, declare those columns nullable first, or migrate the data into a new table yourself",
        ));
    }
}

/// For a type change made by rewriting, the column whose new value no
/// automatic conversion builds (and that declares no `using:`), once a column.
pub(super) fn note_missing_conversion(
    desired: &DesiredTable,
    live: &ObservedTable,
    path: &[String],
    no_conversion: &mut Vec<(String, NoConversion)>,
) {
    let Some(d) = desired.column(&path[0]) else {
        return;
    };
    let Some(l) = crate::plan::diff::matching_live(d, live) else {
        return;
    };
    if d.using.is_some() || no_conversion.iter().any(|(c, _)| c == &d.name) {
        return;
    }
    if let Err(e) = conversion(
        &d.name,
        &l.name,
        &l.data_type,
        &d.data_type,
        &mut Vec::new(),
    ) {
        no_conversion.push((d.name.clone(), e));
    }
}

/// A column-mapped table the backend cannot rewrite or add columns to.
pub(super) fn check_mapped_table_writes(
    live: &ObservedTable,
    diff: &TableDiff,
    rewriting: bool,
    caps: &Capabilities,
    out: &mut Vec<RuleFailure>,
) {
    let mapping = ColumnMapping::of(&live.properties);
    if mapping.is_enabled() && !caps.column_mapped_schema_changes {
        let adds = diff
            .changes
            .iter()
            .any(|c| matches!(c, Change::AddColumn { .. }));
        if rewriting || adds {
            let what = if rewriting {
                "rewrite it"
            } else {
                "add columns to it"
            };
            out.push(fail(
                Rule::ColumnMappingNotWritable,
                "table",
                format!("the table uses column mapping ({COLUMN_MAPPING_MODE} = {mapping}), and the {} backend cannot {what}: delta-rs cannot write physical column names", caps.backend),
                "make this change with Spark or Databricks, or leave it out of the spec",
            ));
        }
    }
}

/// With a rewrite, every `using:` reads columns the live table has.
pub(super) fn check_using_reads(
    desired: &DesiredTable,
    live: &ObservedTable,
    out: &mut Vec<RuleFailure>,
) {
    for c in desired.columns.iter().filter(|c| c.using.is_some()) {
        for read in &c.using_columns {
            if live.column(read).is_none() {
                out.push(fail(
                    Rule::UsingReadsUnknownColumn,
                    format!("column {}.using", c.name),
                    format!(
                        "`using: {}` reads '{read}', which is not a column of the live table",
                        c.using.as_deref().unwrap_or_default()
                    ),
                    format!(
                        "use the live names: {}",
                        live.columns
                            .iter()
                            .map(|l| l.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
}

/// The type changes noted by `note_missing_conversion`, one failure a column.
pub(super) fn conversion_failures(
    no_conversion: Vec<(String, NoConversion)>,
    out: &mut Vec<RuleFailure>,
) {
    for (column, e) in no_conversion {
        out.push(fail(
            Rule::ConversionNeedsUsing,
            e.path.clone(),
            format!("no conversion is written automatically: {} (structs are rebuilt by field name, arrays of structs element by element, scalars cast; nothing else is guessed)", e.why),
            format!("declare `using:` on column '{column}' with the SQL that builds the new value from the live row"),
        ));
    }
}

/// A table whose identity, generated or masked columns or row filter a
/// rewrite would lose is never rewritten.
pub(super) fn check_rewrite_allowed(live: &ObservedTable, out: &mut Vec<RuleFailure>) {
    let mut why = Vec::new();
    if live.columns.iter().any(|c| c.identity.is_some()) {
        why.push("identity columns");
    }
    if live.columns.iter().any(|c| c.generated.is_some()) {
        why.push("generated columns");
    }
    if live.columns.iter().any(|c| c.mask.is_some()) {
        why.push("a column mask");
    }
    if live.row_filter.is_some() {
        why.push("a row filter");
    }
    if !why.is_empty() {
        out.push(fail(
            Rule::RewriteRefused,
            "table",
            format!("this change rewrites the table's data (a rebuild, or a backfill from `using:`), and a table with {} is never rewritten: they would come back as plain columns or unprotected data, or be filled from masked values", why.join(", ")),
            "make the change without a rewrite, or migrate the data into a new table yourself",
        ));
    }
}
