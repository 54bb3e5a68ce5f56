//! What a table read fetches beyond the table itself: its tags and direct
//! grants, only where the spec declares them (issue 14). The plan compares
//! only the tag keys and principals a spec names (`diff_tags`, `diff_grants`
//! walk the spec, never the live side), so what a spec is silent about is
//! never read: on Databricks these reads are REST calls per table, and a
//! steady-state check of silent specs makes none.

use std::collections::{BTreeMap, BTreeSet};

use delta_operator_core::model::maintenance::{defaults, small_file_bytes};
use delta_operator_core::model::{DesiredTable, TableRef};

/// Which column tags a read fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Columns {
    /// These columns (lower-case names); a name the table lacks is skipped.
    Named(BTreeSet<String>),
    /// Every column (`import` writes a spec from them).
    All,
}

impl Default for Columns {
    fn default() -> Self {
        Columns::Named(BTreeSet::new())
    }
}

/// One table's extras.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableExtras {
    pub table_tags: bool,
    pub grants: bool,
    pub column_tags: Columns,
    /// Measure the table's health for maintenance (its spec declares some):
    /// files smaller than this many bytes count as small.
    pub health: Option<u64>,
}

impl TableExtras {
    /// Tags, column tags and grants: everything there is.
    pub fn everything() -> Self {
        TableExtras {
            table_tags: true,
            grants: true,
            column_tags: Columns::All,
            health: None,
        }
    }

    /// What this spec declares: table tags, grants, the tags of each column
    /// that names some, and of each column a rename starts from (a rewrite
    /// puts its tags back on the new name).
    pub fn declared(d: &DesiredTable) -> Self {
        let columns = d
            .columns
            .iter()
            .filter(|c| !c.tags.is_empty())
            .map(|c| c.name.to_lowercase())
            .chain(
                d.columns
                    .iter()
                    .filter_map(|c| c.renamed_from.as_deref())
                    .map(str::to_lowercase),
            )
            .collect();
        TableExtras {
            table_tags: !d.tags.is_empty(),
            grants: !d.grants.is_empty(),
            column_tags: Columns::Named(columns),
            health: d.maintenance.as_ref().map(|m| {
                small_file_bytes(
                    m.compaction
                        .as_ref()
                        .map_or(defaults::TARGET_FILE_BYTES, |c| c.target_file_bytes),
                )
            }),
        }
    }

    /// Whether the tags of this column are read.
    pub fn wants_column(&self, name: &str) -> bool {
        match &self.column_tags {
            Columns::All => true,
            Columns::Named(n) => n.contains(&name.to_lowercase()),
        }
    }

    /// Nothing beyond the table itself.
    pub fn is_empty(&self) -> bool {
        !self.table_tags
            && !self.grants
            && self.health.is_none()
            && matches!(&self.column_tags, Columns::Named(n) if n.is_empty())
    }
}

/// The extras of each table of one read; a table not named gets none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    tables: BTreeMap<TableRef, TableExtras>,
    everything: bool,
}

impl Extras {
    /// No tags, no grants (an orphan check, a delete's ownership check).
    pub fn none() -> Self {
        Extras::default()
    }

    /// Everything, for every table.
    pub fn everything() -> Self {
        Extras {
            tables: BTreeMap::new(),
            everything: true,
        }
    }

    /// What each of these specs declares.
    pub fn declared<'a>(specs: impl IntoIterator<Item = &'a DesiredTable>) -> Self {
        Extras {
            tables: specs
                .into_iter()
                .map(|d| (d.table.clone(), TableExtras::declared(d)))
                .collect(),
            everything: false,
        }
    }

    /// What to read of this table.
    pub fn of(&self, t: &TableRef) -> TableExtras {
        if self.everything {
            return TableExtras::everything();
        }
        self.tables.get(t).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::{DataType, DesiredColumn, Grant, Privilege};

    fn spec() -> DesiredTable {
        let mut d = DesiredTable::new(
            TableRef::new("main", "s", "t"),
            "default/t",
            vec![
                DesiredColumn::new("Plain", DataType::Long, true),
                DesiredColumn::new("Email", DataType::String, true),
                DesiredColumn::new("remark", DataType::String, true),
            ],
        );
        d.columns[1].tags.insert("pii".into(), Some("email".into()));
        d.columns[2].renamed_from = Some("Note".into());
        d
    }

    #[test]
    fn a_silent_spec_reads_nothing_more() {
        let mut d = spec();
        d.columns[1].tags.clear();
        d.columns[2].renamed_from = None;
        assert!(TableExtras::declared(&d).is_empty());
        assert!(Extras::none().of(&d.table).is_empty());
        assert!(
            Extras::declared([&d])
                .of(&TableRef::new("main", "s", "other"))
                .is_empty()
        );
    }

    #[test]
    fn a_spec_reads_what_it_declares() {
        let mut d = spec();
        let e = TableExtras::declared(&d);
        assert!(!e.table_tags && !e.grants);
        assert!(e.wants_column("email") && e.wants_column("NOTE"));
        assert!(!e.wants_column("plain") && !e.wants_column("remark"));
        d.tags.insert("k".into(), None);
        d.grants.push(Grant {
            principal: "a".into(),
            privileges: vec![Privilege::new("SELECT")],
        });
        let e = Extras::declared([&d]).of(&d.table);
        assert!(e.table_tags && e.grants);
        assert!(Extras::everything().of(&d.table).wants_column("plain"));
    }
}
