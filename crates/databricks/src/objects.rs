//! Views, SQL functions and volumes as Unity Catalog REST shows them, parsed
//! into the observed model (pure; the reads themselves are `DatabricksBackend::read_objects`):
//!
//! - a view is a `TableInfo` with `table_type: VIEW` in the tables listing the
//!   tables already use: `view_definition`, `properties` (our marker is
//!   `delta-operator.io/owner`), `comment`, `owner`, the columns' comments;
//! - a function is a `FunctionInfo` (`GET …/functions?catalog_name&schema_name`):
//!   `input_params.parameters[{name, type_text, comment, position}]`,
//!   `full_data_type` (or `data_type`), `routine_definition`, `is_deterministic`,
//!   `comment` (its last line our marker), `owner`;
//! - a volume is a `VolumeInfo` (`GET …/volumes?…`): `volume_type`, `comment`, `owner`;
//!   an external volume is not ours to manage and is left out.
//!
//! Grants (`GET …/permissions/{table|function|volume}/{full_name}`) and tags
//! (entity tag assignments, `tables` for a view, `volumes` for a volume) are
//! read apart, and only for the objects that may be changed: declared ones
//! and those carrying our marker.
//!
//! `reads` and the view's / body's `normalized` text are left empty here: the
//! engine parses them (`delta_operator_backend::engine`), for every backend alike.

use std::collections::BTreeMap;

use serde_json::Value;

use delta_operator_core::model::object::split_marker;
use delta_operator_core::model::{
    FunctionParam, OWNER_PROPERTY, ObjectBody, ObjectKind, ObjectRef, ObservedObject, Reads,
    SchemaRef,
};

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn name_of(v: &Value) -> Option<String> {
    s(v, "name").map(str::to_lowercase)
}

/// Whether a listed relation is a view (not a materialized view or streaming table).
pub fn is_view(info: &Value) -> bool {
    s(info, "table_type") == Some("VIEW")
}

/// A view's `TableInfo` as an observed object.
pub fn view_from_info(schema: &SchemaRef, info: &Value) -> Option<ObservedObject> {
    if !is_view(info) {
        return None;
    }
    let name = name_of(info)?;
    let mut properties: BTreeMap<String, String> = info
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    // the service's own properties of a view (Spark's `view.*`, the catalog's
    // `transient_lastDdlTime`…) are not the user's: never diffed, never put back
    properties.retain(|k, _| !k.starts_with("view.") && k != "transient_lastDdlTime");
    let marker = properties.get(OWNER_PROPERTY).cloned();
    let column_comments = info
        .get("columns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let comment = s(c, "comment").filter(|c| !c.is_empty())?;
            Some((s(c, "name")?.to_string(), comment.to_string()))
        })
        .collect();
    Some(ObservedObject {
        object: ObjectRef::new(ObjectKind::View, &schema.catalog, &schema.schema, &name),
        body: ObjectBody::View {
            query: s(info, "view_definition").unwrap_or_default().to_string(),
            normalized: String::new(),
            column_comments,
        },
        comment: s(info, "comment")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        marker,
        tags: BTreeMap::new(),
        properties,
        grants: vec![],
        owner: s(info, "owner").map(str::to_string),
        reads: Reads::default(),
    })
}

/// A `FunctionInfo` as an observed object (a SQL scalar function; others are
/// still listed, with the text the service shows).
pub fn function_from_info(schema: &SchemaRef, info: &Value) -> Option<ObservedObject> {
    let name = name_of(info)?;
    let mut params: Vec<(u64, FunctionParam)> = info
        .pointer("/input_params/parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| {
            let position = p
                .get("position")
                .and_then(Value::as_u64)
                .unwrap_or(i as u64);
            Some((
                position,
                FunctionParam {
                    name: s(p, "name")?.to_string(),
                    data_type: s(p, "type_text")
                        .or_else(|| s(p, "type_name"))
                        .unwrap_or_default()
                        .to_lowercase(),
                    comment: s(p, "comment")
                        .filter(|c| !c.is_empty())
                        .map(str::to_string),
                },
            ))
        })
        .collect();
    params.sort_by_key(|(i, _)| *i);
    let (comment, marker) = split_marker(s(info, "comment").unwrap_or_default());
    Some(ObservedObject {
        object: ObjectRef::new(ObjectKind::Function, &schema.catalog, &schema.schema, &name),
        body: ObjectBody::Function {
            parameters: params.into_iter().map(|(_, p)| p).collect(),
            returns: s(info, "full_data_type")
                .or_else(|| s(info, "data_type"))
                .unwrap_or_default()
                .to_lowercase(),
            body: s(info, "routine_definition")
                .unwrap_or_default()
                .to_string(),
            normalized: String::new(),
            deterministic: info.get("is_deterministic").and_then(Value::as_bool),
        },
        comment,
        marker,
        tags: BTreeMap::new(),
        properties: BTreeMap::new(),
        grants: vec![],
        owner: s(info, "owner").map(str::to_string),
        reads: Reads::default(),
    })
}

/// A managed `VolumeInfo` as an observed object (None for an external volume).
pub fn volume_from_info(schema: &SchemaRef, info: &Value) -> Option<ObservedObject> {
    if s(info, "volume_type").is_some_and(|t| t != "MANAGED") {
        return None;
    }
    let name = name_of(info)?;
    let (comment, marker) = split_marker(s(info, "comment").unwrap_or_default());
    Some(ObservedObject {
        object: ObjectRef::new(ObjectKind::Volume, &schema.catalog, &schema.schema, &name),
        body: ObjectBody::Volume,
        comment,
        marker,
        tags: BTreeMap::new(),
        properties: BTreeMap::new(),
        grants: vec![],
        owner: s(info, "owner").map(str::to_string),
        reads: Reads::default(),
    })
}

/// The securable type of the permissions API for the object (a view is a table).
pub fn securable(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::View => "table",
        ObjectKind::Function => "function",
        ObjectKind::Volume => "volume",
    }
}

/// The entity type of the entity tag assignments API (None: a function has no tags here).
pub fn tag_entity(kind: ObjectKind) -> Option<&'static str> {
    match kind {
        ObjectKind::View => Some("tables"),
        ObjectKind::Volume => Some("volumes"),
        ObjectKind::Function => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> SchemaRef {
        SchemaRef {
            catalog: "main".into(),
            schema: "sales".into(),
        }
    }

    #[test]
    fn a_view_reads_from_its_table_info() {
        let info = json!({
            "name": "Recent", "table_type": "VIEW",
            "view_definition": "SELECT id FROM main.sales.orders",
            "comment": "recent orders", "owner": "alice",
            "properties": {"delta-operator.io/owner": "ns/recent", "k": "v", "view.catalogAndNamespace.numParts": "2"},
            "columns": [{"name": "id", "comment": "the id"}, {"name": "x", "comment": ""}]
        });
        let v = view_from_info(&schema(), &info).expect("a view");
        assert_eq!(v.object.to_string(), "main.sales.recent");
        assert_eq!(v.marker.as_deref(), Some("ns/recent"));
        assert_eq!(v.owner.as_deref(), Some("alice"));
        assert_eq!(v.comment.as_deref(), Some("recent orders"));
        assert!(v.properties.contains_key("k"));
        assert!(!v.properties.keys().any(|k| k.starts_with("view.")));
        let ObjectBody::View {
            query,
            column_comments,
            ..
        } = &v.body
        else {
            panic!("a view body");
        };
        assert_eq!(query, "SELECT id FROM main.sales.orders");
        assert_eq!(
            column_comments,
            &BTreeMap::from([("id".to_string(), "the id".to_string())])
        );
        // a table is not a view
        assert!(
            view_from_info(&schema(), &json!({"name": "t", "table_type": "MANAGED"})).is_none()
        );
    }

    #[test]
    fn a_function_reads_from_its_function_info() {
        let info = json!({
            "name": "mask_email", "full_data_type": "STRING",
            "input_params": {"parameters": [
                {"name": "b", "type_text": "INT", "position": 1},
                {"name": "a", "type_text": "STRING", "position": 0, "comment": "the value"}
            ]},
            "routine_definition": "CASE WHEN a IS NULL THEN NULL ELSE '***' END",
            "is_deterministic": true,
            "comment": "masks\n[delta-operator.io/owner=ns/mask]",
            "owner": "bob"
        });
        let f = function_from_info(&schema(), &info).expect("a function");
        assert_eq!(f.object.kind, ObjectKind::Function);
        assert_eq!(f.comment.as_deref(), Some("masks"));
        assert!(f.marker.is_some());
        let ObjectBody::Function {
            parameters,
            returns,
            deterministic,
            ..
        } = &f.body
        else {
            panic!("a function body");
        };
        assert_eq!(parameters[0].name, "a");
        assert_eq!(parameters[0].comment.as_deref(), Some("the value"));
        assert_eq!(parameters[1].data_type, "int");
        assert_eq!(returns, "string");
        assert_eq!(*deterministic, Some(true));
    }

    #[test]
    fn only_managed_volumes_are_read() {
        let v = volume_from_info(
            &schema(),
            &json!({"name": "files", "volume_type": "MANAGED", "comment": "raw"}),
        )
        .expect("a managed volume");
        assert_eq!(v.comment.as_deref(), Some("raw"));
        assert!(v.marker.is_none());
        assert!(
            volume_from_info(
                &schema(),
                &json!({"name": "ext", "volume_type": "EXTERNAL"})
            )
            .is_none()
        );
    }
}
