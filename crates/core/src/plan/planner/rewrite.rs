//! The replace that rebuilds a table from itself: each column's source, then
//! stage → replace → drop staging, or one write-once replace.

use std::collections::BTreeMap;

use super::order::{Draft, StepGroup, draft};
use super::put_back::{owed_properties, put_backs, replace_properties, table_comment};
use crate::model::{
    DataType, DesiredColumn, DesiredTable, ObservedColumn, ObservedTable, StructField,
};
use crate::plan::capabilities::Capabilities;
use crate::plan::change::Change;
use crate::plan::diff::{matching_live, renamed, same_shape};
use crate::plan::projection::conversion;
use crate::plan::steps::{Action, Projection, Rewrite, RewritePhase, RiskClass, Source};

/// The projection of one declared column: where its values come from.
/// `drops` collects nested live fields the new type leaves out.
pub fn column_source(d: &DesiredColumn, live: &ObservedTable, drops: &mut Vec<String>) -> Source {
    source_from(d, matching_live(d, live), drops)
}

/// `column_source` with the matching live column already found.
pub(super) fn source_from(
    d: &DesiredColumn,
    from: Option<&ObservedColumn>,
    drops: &mut Vec<String>,
) -> Source {
    match (from, &d.using) {
        // `using:` computes a value only where one is needed: a changed type,
        // or a new column; a leftover `using:` is never re-run
        (Some(l), _) if same_shape(&l.data_type, &d.data_type) => Source::Copy {
            from: l.name.clone(),
        },
        (_, Some(expr)) => Source::Using {
            expression: expr.clone(),
        },
        // no conversion written automatically: the rules refuse the plan
        // (ConversionNeedsUsing), so this fallback is never run
        (Some(l), None) => conversion(&d.name, &l.name, &l.data_type, &d.data_type, drops)
            .unwrap_or_else(|_| Source::Cast {
                from: l.name.clone(),
                from_type: l.data_type.clone(),
            }),
        (None, None) => Source::Null,
    }
}

/// The rewrite steps that carry every change this backend can only make by
/// rebuilding the table: one write-once replace, or stage → replace → drop
/// staging when a conversion could lose values; put-backs after the replace
/// where the backend's replace loses metadata.
pub(super) fn rewrite_drafts(
    desired: &DesiredTable,
    live: &ObservedTable,
    changes: &[Change],
    serves: Vec<usize>,
    caps: &Capabilities,
) -> Vec<Draft> {
    let (rewrite, owed) = plan_rewrite(desired, live, changes, caps);
    let step = |phase, class| rewrite_step(&rewrite, phase, class, &serves);
    let staged = rewrite.converts();
    let mut out = Vec::new();
    if staged {
        let mut stage = step(RewritePhase::Stage, RiskClass::Rewrite)
            .bytes(live.size_bytes)
            .note("converted rows go to a staging copy beside the table, which is left untouched")
            .note("checked before anything is replaced: the same row count, and no converted column gains NULLs");
        // every user expression is shown where it runs
        for p in &rewrite.columns {
            if let Source::Using { expression } = &p.source {
                stage = stage.note(format!("{} = {expression}   (using:)", p.field.name));
            }
        }
        out.push(stage);
    }
    out.push(replace_draft(&rewrite, live, caps, &serves));
    if !caps.replace_keeps_metadata {
        out.extend(put_backs(desired, live, &rewrite, &owed, &serves));
    }
    if staged {
        out.push(step(RewritePhase::DropStaging, RiskClass::Meta));
    }
    out
}

/// One phase of the rewrite as a draft: every phase serves the same changes.
fn rewrite_step(
    rewrite: &Rewrite,
    phase: RewritePhase,
    class: RiskClass,
    serves: &[usize],
) -> Draft {
    draft(
        StepGroup::Rewrite,
        class,
        Action::Rewrite {
            rewrite: rewrite.clone(),
            phase,
        },
        serves.to_vec(),
    )
}

/// The rewrite a table's changes need: each declared column's projection, the
/// columns and nested fields it drops, the partitioning and clustering it
/// writes and, where the backend's replace keeps no metadata, the comment and
/// properties it carries. Also returns the properties it cannot carry, which
/// are put back after it.
fn plan_rewrite(
    desired: &DesiredTable,
    live: &ObservedTable,
    changes: &[Change],
    caps: &Capabilities,
) -> (Rewrite, BTreeMap<String, String>) {
    let (columns, nested_drops) = projections(desired, live);
    let mut drops: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::DropColumn { column } => Some(column.name.clone()),
            _ => None,
        })
        .collect();
    drops.extend(nested_drops);
    let partitioned_by = desired.wanted_partitioning().unwrap_or_else(|| {
        live.partitioned_by
            .iter()
            .map(|p| renamed(desired, p))
            .collect()
    });
    let cluster_by = if caps.clustering && partitioned_by.is_empty() {
        kept_clustering(desired, live, &columns)
    } else {
        Vec::new()
    };
    let (mut properties, comment) = if caps.replace_keeps_metadata {
        (BTreeMap::new(), None)
    } else {
        (
            replace_properties(desired, live),
            table_comment(desired, live),
        )
    };
    let owed = owed_properties(&mut properties);
    let rewrite = Rewrite {
        columns,
        partitioned_by,
        drops,
        properties,
        cluster_by,
        comment,
    };
    (rewrite, owed)
}

/// Each declared column's projection (where its values come from), and the
/// nested live fields the new types leave out.
fn projections(desired: &DesiredTable, live: &ObservedTable) -> (Vec<Projection>, Vec<String>) {
    let mut columns = Vec::new();
    let mut nested_drops = Vec::new();
    let partition = |name: &str, of: &[String]| of.iter().any(|p| p.eq_ignore_ascii_case(name));
    for d in &desired.columns {
        let from = matching_live(d, live);
        let source = match (source_from(d, from, &mut nested_drops), &d.using) {
            // a column becoming a partition column: Delta keeps no '' there (it
            // reads back as NULL, so the lake refuses such rows), and its
            // `using:` is how the spec maps them to a value
            (Source::Copy { .. }, Some(expression))
                if desired
                    .partitioned_by
                    .as_deref()
                    .is_some_and(|p| partition(&d.name, p))
                    && from.is_some_and(|l| !partition(&l.name, &live.partitioned_by)) =>
            {
                Source::Using {
                    expression: expression.clone(),
                }
            }
            (source, _) => source,
        };
        let comment = d
            .comment
            .clone()
            .or_else(|| from.and_then(|l| l.comment.clone()))
            .filter(|c| !c.is_empty());
        let data_type = keep_nested_comments(&d.data_type, from.map(|l| &l.data_type));
        columns.push(Projection {
            field: StructField {
                name: d.name.clone(),
                data_type,
                nullable: d.nullable,
                comment,
            },
            source,
        });
    }
    (columns, nested_drops)
}

/// The replace itself, with what it writes, what it risks and how to undo it.
fn replace_draft(
    rewrite: &Rewrite,
    live: &ObservedTable,
    caps: &Capabilities,
    serves: &[usize],
) -> Draft {
    let step = |phase, class| rewrite_step(rewrite, phase, class, serves);
    let drops = &rewrite.drops;
    let replace_class = if drops.is_empty() {
        RiskClass::Rewrite
    } else {
        RiskClass::Destructive
    };
    let staged = rewrite.converts();
    let mut replace = if staged && caps.replace_from_staging {
        step(RewritePhase::Replace, replace_class)
            .note("the table is replaced from the checked staging copy in one commit")
    } else if staged {
        step(RewritePhase::ReplaceChecked, replace_class)
            .note("the table is rebuilt from itself in one statement, converting every row again")
            .note("each row is checked as the stage checked the copy: a value that would turn into NULL, or a NULL in a NOT NULL column, stops it with nothing replaced")
    } else {
        let mut r = step(RewritePhase::WriteOnce, replace_class)
            .note("the table is rebuilt from itself in one commit, so its data is written once");
        let lossless: Vec<&str> = rewrite
            .converted_columns()
            .map(|p| p.field.name.as_str())
            .collect();
        if !lossless.is_empty() {
            r = r.note(format!(
                "no staging copy: converting {} cannot lose a value",
                lossless.join(", ")
            ));
        }
        r
    };
    replace = replace
        .bytes(live.size_bytes)
        .note("the Delta log and history are kept; the version before is recorded as the restore point")
        .note(if caps.replace_from_staging {
            "it commits only against the version it read: rows appended meanwhile are converted too, anything else stops it with nothing replaced"
        } else {
            "Delta refuses it if another writer commits while it runs (nothing is replaced); it is tried again up to 5 times"
        });
    if caps.replace_keeps_metadata {
        replace = replace.note("NOT NULL, comments, CHECK constraints and table properties are carried by the replace itself");
    } else {
        if !rewrite.properties.is_empty() {
            replace = replace.note(format!(
                "carries the table comment and properties in its own statement (TBLPROPERTIES {}), those set outside the spec too: nothing after it can lose them",
                rewrite.properties.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        replace = replace.note("copied columns keep their comments and defaults (each is selected by name; row checks are in the WHERE clause)");
    }
    if !rewrite.cluster_by.is_empty()
        && live.cluster_by.as_deref().unwrap_or_default() != rewrite.cluster_by.as_slice()
    {
        replace = replace.note(format!(
            "writes the table clustered by {} in the same statement (no OPTIMIZE needed for its files)",
            rewrite.cluster_by.join(", ")
        ));
    }
    if !drops.is_empty() {
        replace = replace.warn(format!("drops {} along with the rewrite", drops.join(", ")));
    }
    let repartitions = rewrite.partitioned_by.len() != live.partitioned_by.len()
        || rewrite
            .partitioned_by
            .iter()
            .zip(&live.partitioned_by)
            .any(|(a, b)| !a.eq_ignore_ascii_case(b));
    if repartitions && caps.clustering {
        replace = replace.note("a partitioning change rewrites the whole table; liquid clustering (spec `clusterBy`) changes in place instead (ALTER TABLE … CLUSTER BY, no rewrite; files are reclustered by later OPTIMIZE runs)");
    }
    replace
}

/// The clustering a replace writes: the declared keys, else the live ones
/// whose columns survive (under their new names).
pub(super) fn kept_clustering(
    desired: &DesiredTable,
    live: &ObservedTable,
    columns: &[Projection],
) -> Vec<String> {
    if let Some(k) = &desired.cluster_by {
        return k.clone();
    }
    live.cluster_by
        .iter()
        .flatten()
        .map(|c| renamed(desired, c))
        .filter(|c| columns.iter().any(|p| p.field.name.eq_ignore_ascii_case(c)))
        .collect()
}

/// The declared type, with nested field comments the spec is silent about
/// taken from the live type (a rewrite must not erase them).
pub(super) fn keep_nested_comments(want: &DataType, have: Option<&DataType>) -> DataType {
    match (want, have) {
        (DataType::Struct { fields }, Some(DataType::Struct { fields: live })) => {
            DataType::Struct {
                fields: fields
                    .iter()
                    .map(|f| {
                        let l = live.iter().find(|l| l.name.eq_ignore_ascii_case(&f.name));
                        StructField {
                            comment: f
                                .comment
                                .clone()
                                .or_else(|| l.and_then(|l| l.comment.clone())),
                            data_type: keep_nested_comments(&f.data_type, l.map(|l| &l.data_type)),
                            ..f.clone()
                        }
                    })
                    .collect(),
            }
        }
        _ => want.clone(),
    }
}
