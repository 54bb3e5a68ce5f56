//! How much of a table a spec governs: delta-engine's ladder
//! `Full ⊃ Metadata ⊃ Annotations ⊃ Tags`. Each aspect of a table is either
//! managed by a scope (the spec converges it) or mirrored (what the spec
//! declares of it must already hold; a difference refuses the plan by
//! `UnmanagedAspectDrift`, naming each). What a spec does not declare is
//! ignored at every scope, and below `Full` that includes columns: `columns`
//! lists only the columns the spec annotates.
//!
//! Only `Full` creates a table: below it an absent table is deferred (waited
//! for, neither created nor failed), since the table is someone else's to make.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The scopes, widest first.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Scope {
    /// Everything: the table's shape, layout, metadata, annotations and access.
    #[default]
    Full,
    /// Properties, constraints, comments, tags and access; the shape is mirrored.
    Metadata,
    /// Comments, tags and access (grants, owner, masks); the rest is mirrored.
    Annotations,
    /// Tags only; the rest is mirrored.
    Tags,
}

/// The parts of a table a scope manages or mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    /// Which columns exist, their types, nullability, defaults and names.
    Columns,
    /// Partitioning and clustering.
    Layout,
    /// Table properties (the operator's own records are bookkeeping, not this).
    Properties,
    /// CHECKs, the primary key and foreign keys.
    Constraints,
    /// The table's and its columns' comments.
    Comments,
    /// The table's and its columns' tags.
    Tags,
    /// Grants, the owner and column masks.
    Access,
}

impl Aspect {
    pub const ALL: [Aspect; 7] = [
        Aspect::Columns,
        Aspect::Layout,
        Aspect::Properties,
        Aspect::Constraints,
        Aspect::Comments,
        Aspect::Tags,
        Aspect::Access,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Aspect::Columns => "columns",
            Aspect::Layout => "layout",
            Aspect::Properties => "properties",
            Aspect::Constraints => "constraints",
            Aspect::Comments => "comments",
            Aspect::Tags => "tags",
            Aspect::Access => "access",
        }
    }
}

impl fmt::Display for Aspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Scope {
    pub const ALL: [Scope; 4] = [
        Scope::Full,
        Scope::Metadata,
        Scope::Annotations,
        Scope::Tags,
    ];

    /// True when the spec converges this aspect; false when it only mirrors it.
    pub fn manages(self, aspect: Aspect) -> bool {
        use Aspect::*;
        match self {
            Scope::Full => true,
            Scope::Metadata => !matches!(aspect, Columns | Layout),
            Scope::Annotations => matches!(aspect, Comments | Tags | Access),
            Scope::Tags => aspect == Tags,
        }
    }

    /// Only a full-scope spec may create its table.
    pub fn can_create(self) -> bool {
        self == Scope::Full
    }

    pub fn is_full(&self) -> bool {
        *self == Scope::Full
    }

    /// The aspects this scope manages, in the ladder's order.
    pub fn managed(self) -> Vec<Aspect> {
        Aspect::ALL
            .into_iter()
            .filter(|a| self.manages(*a))
            .collect()
    }

    /// As the CRD spells it: `Full`, `Metadata`, `Annotations`, `Tags`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Full => "Full",
            Scope::Metadata => "Metadata",
            Scope::Annotations => "Annotations",
            Scope::Tags => "Tags",
        }
    }

    /// The value of [`super::property::SCOPE_PROPERTY`]: lower case.
    pub fn marker(self) -> &'static str {
        match self {
            Scope::Full => "full",
            Scope::Metadata => "metadata",
            Scope::Annotations => "annotations",
            Scope::Tags => "tags",
        }
    }

    /// Reads the scope property's value (any case); None for a value no scope has.
    pub fn from_marker(s: &str) -> Option<Scope> {
        Scope::ALL
            .into_iter()
            .find(|sc| sc.marker().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_manages_a_subset_of_the_wider_one() {
        for w in Scope::ALL.windows(2) {
            let (wide, narrow) = (w[0], w[1]);
            for a in Aspect::ALL {
                assert!(
                    !narrow.manages(a) || wide.manages(a),
                    "{narrow} manages {a}, {wide} not"
                );
            }
            assert!(wide.managed().len() > narrow.managed().len());
        }
        assert_eq!(Scope::Tags.managed(), vec![Aspect::Tags]);
        assert_eq!(
            Scope::Annotations.managed(),
            vec![Aspect::Comments, Aspect::Tags, Aspect::Access]
        );
        assert!(Scope::Full.can_create() && !Scope::Metadata.can_create());
    }

    #[test]
    fn markers_read_back_and_unknown_ones_are_none() {
        for s in Scope::ALL {
            assert_eq!(Scope::from_marker(s.marker()), Some(s));
        }
        assert_eq!(Scope::from_marker("ANNOTATIONS"), Some(Scope::Annotations));
        assert_eq!(Scope::from_marker("columns"), None);
    }
}
