//! A privilege on a table, in one spelling: Unity Catalog lists `APPLY_TAG`
//! and `ALL_PRIVILEGES` where GRANT writes `APPLY TAG` and `ALL PRIVILEGES`, so
//! both sides are brought to the statement's words before they are compared
//! (compared raw, a declared `APPLY TAG` against a live `APPLY_TAG` planned a
//! grant and a revoke on every reconcile).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The table privileges a spec may declare, as GRANT writes them.
pub const KNOWN: &[&str] = &[
    "SELECT",
    "MODIFY",
    "ALL PRIVILEGES",
    "APPLY TAG",
    "MANAGE",
    "BROWSE",
    "READ METADATA",
];

/// The schema privileges a DeltaSchema may declare, as GRANT writes them
/// (Unity Catalog's privileges on a schema).
pub const SCHEMA_KNOWN: &[&str] = &[
    "ALL PRIVILEGES",
    "APPLY TAG",
    "CREATE FUNCTION",
    "CREATE MATERIALIZED VIEW",
    "CREATE MODEL",
    "CREATE TABLE",
    "CREATE VOLUME",
    "EXECUTE",
    "MANAGE",
    "MODIFY",
    "READ VOLUME",
    "REFRESH",
    "SELECT",
    "USE SCHEMA",
    "WRITE VOLUME",
];

/// A privilege in its canonical spelling: upper case, words separated by one space.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Privilege(String);

impl Privilege {
    pub fn new(spelled: &str) -> Self {
        let words: Vec<String> = spelled
            .split(|c: char| c == '_' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(str::to_uppercase)
            .collect();
        Privilege(words.join(" "))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// One of the privileges a spec may declare.
    pub fn is_known(&self) -> bool {
        KNOWN.contains(&self.0.as_str())
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Privilege {
    fn from(s: &str) -> Self {
        Privilege::new(s)
    }
}

impl From<String> for Privilege {
    fn from(s: String) -> Self {
        Privilege::new(&s)
    }
}

impl PartialEq<&str> for Privilege {
    fn eq(&self, other: &&str) -> bool {
        *self == Privilege::new(other)
    }
}

impl Serialize for Privilege {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Privilege {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Privilege::new(&String::deserialize(d)?))
    }
}

/// `SELECT, MODIFY`.
pub fn list(p: &[Privilege]) -> String {
    p.iter()
        .map(Privilege::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::Privilege;

    #[test]
    fn every_spelling_is_one_privilege() {
        assert_eq!(Privilege::new("APPLY_TAG"), Privilege::new("apply tag"));
        assert_eq!(Privilege::new("all_privileges").as_str(), "ALL PRIVILEGES");
        assert_eq!(
            Privilege::new("  Read   Metadata ").as_str(),
            "READ METADATA"
        );
        assert!(Privilege::new("apply_tag").is_known());
        assert!(!Privilege::new("SELECT; DROP TABLE y").is_known());
    }
}
