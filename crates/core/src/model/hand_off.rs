//! Parts of a table handed to the tool that already owns them (a target's,
//! a schema's or a table's `handOff`). The line is drawn where specs are
//! read: a spec that declares a handed-off part is refused by validation,
//! and the diff drops any change to one, so nothing handed over reaches a
//! plan by any route. It cuts one way: the planner still *knows* them (a
//! masked table still refuses a rebuild, a renamed column's tags are still
//! put back after a rewrite), because knowing is what keeps it from
//! destroying them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// A part of a table another tool may own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Handed {
    /// The table's and its columns' tags.
    Tags,
    /// Grants on the table.
    Grants,
    /// The table's owner.
    Owner,
    /// The table's and its columns' comments.
    Comments,
    /// Column masks.
    Masks,
    /// CHECK constraints.
    Checks,
}

impl Handed {
    pub const ALL: [Handed; 6] = [
        Handed::Tags,
        Handed::Grants,
        Handed::Owner,
        Handed::Comments,
        Handed::Masks,
        Handed::Checks,
    ];

    /// In words, plural: `tags`, `owner`.
    pub fn words(self) -> &'static str {
        match self {
            Handed::Tags => "tags",
            Handed::Grants => "grants",
            Handed::Owner => "owner",
            Handed::Comments => "comments",
            Handed::Masks => "column masks",
            Handed::Checks => "CHECK constraints",
        }
    }
}

/// What is handed off for one table: the union of its target's, schema's
/// and own hand-offs, and to whom (for the plan's note).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandOff {
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub aspects: BTreeSet<Handed>,
    /// Table property keys starting with one of these are another tool's.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub property_prefixes: BTreeSet<String>,
    /// Who owns them, as the specs say (`dbt`, `the ingest pipeline`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub to: BTreeSet<String>,
}

impl HandOff {
    pub fn is_empty(&self) -> bool {
        self.aspects.is_empty() && self.property_prefixes.is_empty()
    }

    pub fn hands(&self, aspect: Handed) -> bool {
        self.aspects.contains(&aspect)
    }

    /// Whether a table property key is another tool's.
    pub fn hands_property(&self, key: &str) -> bool {
        self.property_prefixes
            .iter()
            .any(|p| key.starts_with(p.as_str()))
    }

    /// Adds another level's hand-off (a target's or a schema's to a table's).
    pub fn merge(&mut self, other: &HandOff) {
        self.aspects.extend(other.aspects.iter().copied());
        self.property_prefixes
            .extend(other.property_prefixes.iter().cloned());
        self.to.extend(other.to.iter().cloned());
    }

    /// `tags, grants and properties pipelines.*, to dbt`: the plan's note.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.aspects.iter().map(|a| a.words().to_string()).collect();
        parts.extend(
            self.property_prefixes
                .iter()
                .map(|p| format!("properties {p}*")),
        );
        let to = if self.to.is_empty() {
            String::new()
        } else {
            format!(
                " (to {})",
                self.to.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        };
        format!("{}{to}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_merge_and_prefixes_match_from_the_start() {
        let mut t = HandOff::default();
        assert!(t.is_empty());
        let schema = HandOff {
            aspects: [Handed::Tags].into(),
            property_prefixes: ["pipelines.".to_string()].into(),
            to: ["the pipeline".to_string()].into(),
        };
        t.merge(&schema);
        t.merge(&HandOff {
            aspects: [Handed::Grants].into(),
            ..Default::default()
        });
        assert!(t.hands(Handed::Tags) && t.hands(Handed::Grants) && !t.hands(Handed::Owner));
        assert!(t.hands_property("pipelines.autoOptimize.zOrderCols"));
        assert!(!t.hands_property("x.pipelines.y"));
        assert_eq!(
            t.describe(),
            "tags, grants, properties pipelines.* (to the pipeline)"
        );
    }
}
