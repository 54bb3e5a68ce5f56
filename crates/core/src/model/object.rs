//! Views, SQL functions and volumes as the planner sees them: what a
//! DeltaView, DeltaFunction or DeltaVolume declares (lowered), and what a
//! backend read. Unity Catalog objects beside the tables of a schema.
//!
//! The owner marker: a view carries [`OWNER_PROPERTY`] in its TBLPROPERTIES
//! like a table; a function or a volume has no properties, so its marker is
//! the last line of its comment, `[delta-operator.io/owner=<ns>/<name>]`
//! ([`split_marker`], [`with_marker`]). The user's comment is what precedes
//! it, and the diff compares that part only.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::table::{Grant, OWNER_PROPERTY, ResourceId, SchemaRef, SpecRefusal, TableRef};

/// What kind of catalog object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    View,
    Function,
    Volume,
}

impl ObjectKind {
    /// `VIEW`, `FUNCTION`, `VOLUME`: the SQL keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::View => "VIEW",
            ObjectKind::Function => "FUNCTION",
            ObjectKind::Volume => "VOLUME",
        }
    }
    /// `view`, for messages.
    pub fn word(self) -> &'static str {
        match self {
            ObjectKind::View => "view",
            ObjectKind::Function => "function",
            ObjectKind::Volume => "volume",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `catalog.schema.name` of a view, function or volume, lower-cased like a
/// [`TableRef`] (Unity Catalog lower-cases them).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    pub kind: ObjectKind,
    pub catalog: String,
    pub schema: String,
    pub name: String,
}

impl ObjectRef {
    pub fn new(kind: ObjectKind, catalog: &str, schema: &str, name: &str) -> Self {
        ObjectRef {
            kind,
            catalog: catalog.to_lowercase(),
            schema: schema.to_lowercase(),
            name: name.to_lowercase(),
        }
    }
    pub fn schema_ref(&self) -> SchemaRef {
        SchemaRef {
            catalog: self.catalog.clone(),
            schema: self.schema.clone(),
        }
    }
    /// The same three-part name as a relation (views and tables share a
    /// namespace; functions are named the same way in `Reads::functions`).
    pub fn as_table_ref(&self) -> TableRef {
        TableRef {
            catalog: self.catalog.clone(),
            schema: self.schema.clone(),
            table: self.name.clone(),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.catalog, self.schema, self.name)
    }
}

/// One column a query reads of one relation; `*` is every column.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ColumnRead {
    pub relation: TableRef,
    pub column: String,
}

impl ColumnRead {
    /// Every column of the relation.
    pub const ALL: &'static str = "*";
}

/// What a query, a function body or a mask names, from parsed SQL (never a
/// regex), every name resolved to three parts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reads {
    /// Tables or views, sorted, deduplicated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<TableRef>,
    /// User functions (`catalog.schema.fn`), sorted, deduplicated; built-ins left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<TableRef>,
    /// Sorted, deduplicated. An unqualified column of a one-relation scope is
    /// that relation's; an ambiguous one is attributed to every relation of
    /// its scope (over-reported, never missed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnRead>,
}

impl Reads {
    pub fn is_empty(&self) -> bool {
        self.relations.is_empty() && self.functions.is_empty() && self.columns.is_empty()
    }
    /// Whether it reads `column` of `relation` (by name, case-insensitively), or `*` of it.
    pub fn reads_column(&self, relation: &TableRef, column: &str) -> bool {
        self.columns.iter().any(|c| {
            c.relation == *relation
                && (c.column == ColumnRead::ALL || c.column.eq_ignore_ascii_case(column))
        })
    }
    /// Sorts and deduplicates every list.
    pub fn normalize(&mut self) {
        self.relations.sort();
        self.relations.dedup();
        self.functions.sort();
        self.functions.dedup();
        self.columns.sort();
        self.columns.dedup();
    }
}

/// A function's parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FunctionParam {
    pub name: String,
    /// DDL type text.
    pub data_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// What an object is made of, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ObjectBody {
    View {
        /// As the user wrote it (what runs).
        query: String,
        /// Parsed and printed back: what the diff compares.
        normalized: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        column_comments: BTreeMap<String, String>,
    },
    Function {
        parameters: Vec<FunctionParam>,
        returns: String,
        /// The text after `RETURN`, as written (what runs).
        body: String,
        /// Parsed and printed back: what the diff compares.
        normalized: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deterministic: Option<bool>,
    },
    Volume,
}

impl ObjectBody {
    pub fn kind(&self) -> ObjectKind {
        match self {
            ObjectBody::View { .. } => ObjectKind::View,
            ObjectBody::Function { .. } => ObjectKind::Function,
            ObjectBody::Volume => ObjectKind::Volume,
        }
    }
}

/// The output columns of a view's query as far as its parsed text tells them:
/// an alias or a bare column names its column; `*`, `t.*` or an expression
/// without an alias (whose name the engine makes up) do not, and make the
/// list incomplete. Default: nothing known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueryOutputs {
    /// The names known, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Every output column is in `names` (no `*`, no unnamed expression).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complete: bool,
}

impl QueryOutputs {
    /// Whether the query outputs `column` (case-insensitively): Some(true)
    /// known to, Some(false) known not to, None not known.
    pub fn outputs(&self, column: &str) -> Option<bool> {
        if self.names.iter().any(|n| n.eq_ignore_ascii_case(column)) {
            Some(true)
        } else if self.complete {
            Some(false)
        } else {
            None
        }
    }
    pub fn is_unknown(&self) -> bool {
        self.names.is_empty() && !self.complete
    }
}

/// A view, function or volume as its resource declares it, after lowering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredObject {
    pub object: ObjectRef,
    /// The resource that declares it (the owner marker it gets).
    pub owner_marker: ResourceId,
    pub body: ObjectBody,
    /// The user's comment; None leaves the live one alone.
    pub comment: Option<String>,
    /// Views and volumes; `None` removes the tag.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, Option<String>>,
    /// Views; `None` removes the property.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, Option<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Reads::is_empty")]
    pub reads: Reads,
    /// A view's output columns, from its parsed query (what a replace can
    /// carry other tools' column comments over to).
    #[serde(default, skip_serializing_if = "QueryOutputs::is_unknown")]
    pub outputs: QueryOutputs,
    /// What lowering found wrong with the spec: the object is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<SpecRefusal>,
}

/// A live view, function or volume as a backend read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedObject {
    pub object: ObjectRef,
    /// As live (the view's text, the function's routine definition).
    pub body: ObjectBody,
    /// The user part of the comment (the marker split off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The raw owner marker, if any (a view's: its [`OWNER_PROPERTY`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Parsed from the live text; empty when it cannot be parsed.
    #[serde(default, skip_serializing_if = "Reads::is_empty")]
    pub reads: Reads,
}

impl ObservedObject {
    /// A live object with this body and nothing else (no marker, comment or grants).
    pub fn new(object: ObjectRef, body: ObjectBody) -> Self {
        ObservedObject {
            object,
            body,
            comment: None,
            marker: None,
            tags: BTreeMap::new(),
            properties: BTreeMap::new(),
            grants: vec![],
            owner: None,
            reads: Reads::default(),
        }
    }

    /// The raw owner marker: `marker`, or a view's [`OWNER_PROPERTY`].
    pub fn owner_marker(&self) -> Option<&str> {
        self.marker
            .as_deref()
            .or_else(|| self.properties.get(OWNER_PROPERTY).map(String::as_str))
    }

    /// The resource the owner marker names, if it names one.
    pub fn owner(&self) -> Option<ResourceId> {
        self.owner_marker().and_then(ResourceId::parse)
    }
}

/// The first characters of a function's or volume's marker line.
pub const MARKER_LINE_PREFIX: &str = "[delta-operator.io/owner=";

/// A live comment split into the user's part (None when empty) and the
/// owner marker of its last line (the text between [`MARKER_LINE_PREFIX`]
/// and the closing `]`), if its last line is one.
pub fn split_marker(comment: &str) -> (Option<String>, Option<String>) {
    let (user, last) = match comment.rsplit_once('\n') {
        Some((user, last)) => (user, last),
        None => ("", comment),
    };
    let marker = last
        .trim()
        .strip_prefix(MARKER_LINE_PREFIX)
        .and_then(|rest| rest.strip_suffix(']'));
    match marker {
        Some(m) => {
            let user = user.strip_suffix('\r').unwrap_or(user);
            (
                (!user.is_empty()).then(|| user.to_string()),
                Some(m.to_string()),
            )
        }
        None => ((!comment.is_empty()).then(|| comment.to_string()), None),
    }
}

/// The comment a function or volume is given: the user's part, then the
/// marker line.
pub fn with_marker(user: Option<&str>, marker: &ResourceId) -> String {
    let line = format!("{MARKER_LINE_PREFIX}{marker}]");
    match user.filter(|u| !u.is_empty()) {
        Some(u) => format!("{u}\n{line}"),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_round_trips_with_and_without_a_user_comment() {
        let id = ResourceId::new("ns", "fn");
        for user in [None, Some("masks emails"), Some("two\nlines")] {
            let c = with_marker(user, &id);
            assert_eq!(
                split_marker(&c),
                (user.map(str::to_string), Some("ns/fn".to_string()))
            );
        }
        assert_eq!(
            with_marker(Some(""), &id),
            "[delta-operator.io/owner=ns/fn]"
        );
    }

    #[test]
    fn a_comment_without_a_marker_line_is_all_the_users() {
        assert_eq!(split_marker(""), (None, None));
        assert_eq!(split_marker("hello"), (Some("hello".into()), None));
        // a marker anywhere but the last line is the user's text
        let c = "[delta-operator.io/owner=a/b]\nmore";
        assert_eq!(split_marker(c), (Some(c.into()), None));
        // not closed: not a marker
        let c = "x\n[delta-operator.io/owner=a/b";
        assert_eq!(split_marker(c), (Some(c.into()), None));
    }

    #[test]
    fn a_views_marker_is_its_owner_property() {
        let mut o = ObservedObject::new(
            ObjectRef::new(ObjectKind::View, "C", "s", "V"),
            ObjectBody::View {
                query: "SELECT 1".into(),
                normalized: "SELECT 1".into(),
                column_comments: BTreeMap::new(),
            },
        );
        assert_eq!(o.owner(), None);
        o.properties.insert(OWNER_PROPERTY.into(), "ns/v".into());
        assert_eq!(o.owner(), Some(ResourceId::new("ns", "v")));
        assert_eq!(o.object.to_string(), "c.s.v");
        assert_eq!(ObjectKind::Function.to_string(), "FUNCTION");
    }
}
