//! A schema's own metadata: what a DeltaSchema declares about it, and what is live.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::table::{Grant, SchemaRef};

/// What a DeltaSchema declares about the schema itself. What it is silent
/// about is left alone: `comment` omitted, properties and grant principals
/// not named, `owner` omitted. `key: None` removes a property.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    /// Where a schema the operator creates keeps its managed tables (Unity
    /// Catalog's `MANAGED LOCATION`, a storage URL). Used only by the CREATE:
    /// a live schema's storage root cannot be moved, so it is never compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_location: Option<String>,
}

impl SchemaMeta {
    /// True when the spec declares nothing about the schema's metadata
    /// (a live schema then costs no metadata read; an absent one is still created).
    pub fn is_silent(&self) -> bool {
        self.comment.is_none()
            && self.properties.is_empty()
            && self.owner.is_none()
            && self.grants.is_empty()
            && self.managed_location.is_none()
    }
}

/// A live schema's metadata (Unity Catalog's schema and its privilege assignments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedSchema {
    pub schema: SchemaRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
}

impl ObservedSchema {
    /// A schema with no comment, properties, owner or grants.
    pub fn new(schema: SchemaRef) -> Self {
        ObservedSchema {
            schema,
            comment: None,
            properties: BTreeMap::new(),
            owner: None,
            grants: vec![],
        }
    }

    /// The privileges a principal holds (principals compared ignoring case).
    pub fn privileges_of(&self, principal: &str) -> impl Iterator<Item = &super::Privilege> {
        self.grants
            .iter()
            .filter(move |g| g.principal.eq_ignore_ascii_case(principal))
            .flat_map(|g| &g.privileges)
    }
}
