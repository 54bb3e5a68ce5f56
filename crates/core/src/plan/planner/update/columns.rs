//! Drafts for column changes: added, renamed, dropped, altered, and their metadata.

use std::collections::BTreeMap;

use super::UpdateDrafts;
use crate::model::StructField;
use crate::plan::change::{Change, FieldPath};
use crate::plan::planner::order::{StepGroup, draft};
use crate::plan::planner::prerequisites::mentions_ntz;
use crate::plan::render::human_bytes;
use crate::plan::steps::{Action, RiskClass};

impl UpdateDrafts<'_> {
    /// A new NOT NULL column filled in place: one UPDATE with its `using:`,
    /// then SET NOT NULL behind its check. Both costs are shown: the UPDATE
    /// writes the table once, a staged rewrite would write it twice.
    fn backfill(&mut self, i: usize, column: &str) {
        let Some(expression) = self
            .desired
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(column))
            .and_then(|c| c.using.clone())
        else {
            return; // refused by NonNullableColumnAdd: there is nothing to fill it with
        };
        let size = self.live.size_bytes;
        let cost = match size {
            Some(b) => format!(
                "one UPDATE writes the table's files once (about {}); a staged rewrite would write it twice (about {})",
                human_bytes(b),
                human_bytes(b.saturating_mul(2))
            ),
            None => {
                "one UPDATE writes the table's files once; a staged rewrite would write it twice"
                    .into()
            }
        };
        self.drafts.push(
            draft(
                StepGroup::Alter,
                RiskClass::Rewrite,
                Action::Backfill {
                    column: column.to_string(),
                    expression: expression.clone(),
                },
                vec![i],
            )
            .note(format!("{column} = {expression}   (using:), where it is NULL"))
            .note(cost)
            .note("Delta refuses it if another writer commits a conflicting change while it runs; appends meanwhile stay NULL and the next step's check stops on them")
            .bytes(size),
        );
        self.drafts.push(
            draft(
                StepGroup::Alter,
                RiskClass::Meta,
                Action::SetNotNull {
                    path: FieldPath::column(column),
                },
                vec![i],
            )
            .note("checks first that the column has no NULLs")
            .bytes(size),
        );
    }

    /// Columns: added, renamed, dropped, altered, and their metadata.
    pub(super) fn column_change(&mut self, i: usize, change: &Change) {
        match change {
            // with a rewrite, a new column (or nested field) is part of the
            // projection: NULL, or its `using:` for a NOT NULL column
            Change::AddColumn { .. } if self.rewriting => self.rewrite_serves.push(i),
            Change::AddColumn { path, field } => self.add_column(i, path, field),
            // with a rewrite, the rewrite renames (its projection follows
            // renamedFrom) and drops: a RENAME in place before it would leave
            // the rewrite selecting a name that is gone
            Change::RenameColumn { .. } | Change::DropColumn { .. } | Change::DropField { .. }
                if self.rewriting =>
            {
                self.rewrite_serves.push(i)
            }
            Change::RenameColumn { .. } | Change::DropColumn { .. } | Change::DropField { .. } => {
                self.rename_or_drop(i, change)
            }
            Change::ChangeType { .. } | Change::SetNullability { .. } => {
                self.alter_column(i, change)
            }
            _ => self.column_meta(i, change),
        }
    }

    /// A column (or nested field) added in place, nullable: a NOT NULL one is
    /// filled after it, by an UPDATE where the backend can, else by the rewrite.
    fn add_column(&mut self, i: usize, path: &FieldPath, field: &StructField) {
        let s = vec![i];
        // added nullable; a NOT NULL column with `using:` is filled by the rewrite
        let added = StructField {
            nullable: true,
            ..field.clone()
        };
        let mut path = path.clone();
        let top_level = path.len() == 1;
        if !top_level {
            path[0] = self.live_name(&path[0]);
        }
        // a name Delta refuses without column mapping: mapping is turned on first, where the backend can
        self.need_mapping |= self.caps.column_mapping_for_names
            && (crate::model::names::needs_column_mapping(&field.name)
                || crate::model::names::type_needs_column_mapping(&field.data_type));
        let mut d = draft(
            StepGroup::Add,
            RiskClass::Meta,
            Action::AddColumn { path, field: added },
            s,
        );
        if !field.nullable && self.caps.backfill_in_place && top_level {
            d = d.note("added nullable; the next step fills it, then it is set NOT NULL");
            self.drafts.push(d);
            self.backfill(i, &field.name);
            return;
        }
        if !field.nullable {
            d = d.note("added nullable; the rewrite fills it and sets NOT NULL");
            self.rewrite_serves.push(i);
        }
        self.drafts.push(d);
    }

    /// A rename or a drop made in place (under column mapping).
    fn rename_or_drop(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::DropField { path, .. } => {
                self.need_mapping |= self.caps.rename_drop_need_column_mapping;
                let mut path = path.clone();
                path[0] = self.live_name(&path[0]);
                let shown = path.join(".");
                self.drafts.push(
                    draft(
                        StepGroup::DropColumn,
                        RiskClass::Destructive,
                        Action::DropField { path },
                        s,
                    )
                    .warn(format!("drops field {shown} and its data"))
                    .note("in place under column mapping: no file is rewritten"),
                );
            }
            Change::RenameColumn { from, to } => {
                self.need_mapping |= self.caps.rename_drop_need_column_mapping;
                let mut d = draft(
                    StepGroup::Rename,
                    RiskClass::Meta,
                    Action::RenameColumn {
                        from: from.clone(),
                        to: to.clone(),
                    },
                    s,
                )
                .note(format!(
                    "renamedFrom '{from}' can be removed from the spec once applied"
                ));
                if self
                    .live
                    .primary_key
                    .as_ref()
                    .is_some_and(|k| k.columns.iter().any(|c| c.eq_ignore_ascii_case(from)))
                {
                    d = d.warn(format!(
                        "{from} is in the primary key: foreign keys of other tables that reference it follow the rename (their specs must name {to})"
                    ));
                }
                self.drafts.push(d);
            }
            Change::DropColumn { column } => {
                self.need_mapping |= self.caps.rename_drop_need_column_mapping;
                self.drafts.push(
                    draft(
                        StepGroup::DropColumn,
                        RiskClass::Destructive,
                        Action::DropColumn {
                            name: column.name.clone(),
                        },
                        s,
                    )
                    .warn(format!("drops column {} and its data", column.name)),
                );
            }
            _ => unreachable!("not a rename or drop: {change:?}"),
        }
    }

    /// A type or nullability change.
    fn alter_column(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::ChangeType { path, from, to } => {
                self.need_widening |= self.caps.widening_needs_feature;
                // Delta refuses date → timestamp_ntz until the feature is enabled by hand
                // (DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT, found by `verify`)
                self.need_ntz |=
                    self.caps.widening_needs_feature && mentions_ntz(to) && !mentions_ntz(from);
                self.drafts.push(draft(
                    self.alter_group(),
                    RiskClass::Meta,
                    Action::AlterColumnType {
                        path: path.clone(),
                        to: to.clone(),
                    },
                    s,
                ));
            }
            Change::SetNullability {
                path,
                nullable: true,
            } => self.drafts.push(draft(
                self.alter_group(),
                RiskClass::Meta,
                Action::DropNotNull { path: path.clone() },
                s,
            )),
            Change::SetNullability {
                path,
                nullable: false,
            } => self.drafts.push(
                draft(
                    self.alter_group(),
                    RiskClass::Meta,
                    Action::SetNotNull { path: path.clone() },
                    s,
                )
                .note("checks first that the column has no NULLs")
                .bytes(self.live.size_bytes),
            ),
            _ => unreachable!("not a column alteration: {change:?}"),
        }
    }

    /// A column's comment, tags, mask and default.
    fn column_meta(&mut self, i: usize, change: &Change) {
        let s = vec![i];
        match change {
            Change::SetColumnComment { path, to, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetColumnComment {
                    path: path.clone(),
                    comment: to.clone(),
                },
                s,
            )),
            Change::SetColumnTag {
                column, key, to, ..
            } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetColumnTags {
                    column: column.clone(),
                    tags: BTreeMap::from([(key.clone(), to.clone())]),
                },
                s,
            )),
            Change::UnsetColumnTag { column, key, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::UnsetColumnTags {
                    column: column.clone(),
                    keys: vec![key.clone()],
                },
                s,
            )),
            Change::SetMask { column, to, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetMask {
                    column: column.clone(),
                    mask: to.clone(),
                },
                s,
            )),
            Change::SetDefault { column, to, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::SetDefault {
                    column: column.clone(),
                    expression: to.clone(),
                },
                s,
            )),
            Change::DropDefault { column, .. } => self.drafts.push(draft(
                StepGroup::ColumnMeta,
                RiskClass::Meta,
                Action::DropDefault {
                    column: column.clone(),
                },
                s,
            )),
            _ => unreachable!("not a column change: {change:?}"),
        }
    }
}
