//! `import` of a schema's views, SQL functions and volumes: a DeltaView,
//! DeltaFunction or DeltaVolume manifest for each, written so that it plans
//! clean against what it was imported from. An object carrying an owner marker
//! keeps its owner's namespace and name (its first plan is empty); an unmarked
//! one gets the import's namespace, and its first plan only puts the marker on
//! (a view's property, a volume's comment line, a function's replace with the
//! marker line and what the replace drops put back).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::import::{Annotations, k8s_name};
use crate::model::names::{MAX_NAME_BYTES, object_name_problem};
use crate::model::{OWNER_PROPERTY, ObjectBody, ObjectKind, ObservedObject};
use crate::plan::object::is_catalog_view_property;
use crate::spec::load::{API_VERSION, load_value};
use crate::spec::validate::{RESERVED_PROPERTIES, check_function, check_view, check_volume};
use crate::spec::{Manifests, SpecError};

/// The longest Kubernetes object name.
const MAX_K8S_NAME: usize = 253;

/// One object's manifest, ready to write.
pub struct ObjectManifest {
    /// The file it is written to (`<name>.view.yaml`, …): never a table's.
    pub file: String,
    pub doc: Value,
}

/// The resource names and file names handed out so far: a resource name is
/// unique per kind and namespace, a file name unique in the folder.
#[derive(Default)]
pub struct Names {
    resources: BTreeSet<(ObjectKind, String, String)>,
    files: BTreeSet<String>,
}

impl Names {
    /// A file name already written (a table's, the schema's).
    pub fn take_file(&mut self, file: &str) {
        self.files.insert(file.to_string());
    }

    /// `base`, or `base-2`, `base-3`, … : the first one free for this kind in `namespace`.
    fn resource(&mut self, kind: ObjectKind, namespace: &str, base: &str) -> String {
        let mut n = 1usize;
        loop {
            let name = numbered(base, n);
            if self
                .resources
                .insert((kind, namespace.to_string(), name.clone()))
            {
                return name;
            }
            n += 1;
        }
    }

    /// `<name>.<kind>.yaml`, numbered when taken.
    fn file(&mut self, kind: ObjectKind, name: &str) -> String {
        let mut n = 1usize;
        loop {
            let file = format!("{}.{}.yaml", numbered(name, n), kind.word());
            if self.files.insert(file.clone()) {
                return file;
            }
            n += 1;
        }
    }
}

/// `base` (n = 1) or `base-n`, cut so it stays a Kubernetes name.
fn numbered(base: &str, n: usize) -> String {
    let suffix = if n == 1 {
        String::new()
    } else {
        format!("-{n}")
    };
    let room = MAX_K8S_NAME - suffix.len();
    // an owner marker's name may be any text: cut at a char boundary
    let end = base
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|end| *end <= room)
        .last()
        .unwrap_or(0);
    let cut = base[..end].trim_end_matches('-');
    format!("{cut}{suffix}")
}

/// Why the object cannot be declared by a resource (its name), if it cannot.
fn undeclarable(o: &ObservedObject) -> Option<String> {
    // the live name as the catalog keeps it; a resource's spec.name takes no '.', space, '/', '\'
    object_name_problem(&o.object.name, MAX_NAME_BYTES)
        .map(|(message, _)| format!("its name {message}, which a resource cannot declare"))
}

/// The manifest of one live object, or why none is written. `schema`: the
/// DeltaSchema manifest it names (to validate it beside); `names`: what
/// earlier manifests took (owned objects first, so they keep their names).
pub fn object_manifest(
    o: &ObservedObject,
    schema: &Value,
    schema_resource: &str,
    namespace: &str,
    names: &mut Names,
) -> Result<ObjectManifest, String> {
    if let Some(why) = undeclarable(o) {
        return Err(why);
    }
    let kind = o.object.kind;
    // an owned object keeps its owner's name, so the plan claims nothing
    let (ns, name) = match o.owner() {
        Some(owner) => {
            let name = names.resource(kind, &owner.namespace, &owner.name);
            if name != owner.name {
                eprintln!(
                    "note {}: its owner marker names {owner}, which another {}'s marker names too: written as {name}; its plan is refused until one of the markers is removed",
                    o.object,
                    kind.word()
                );
            }
            (owner.namespace, name)
        }
        None => {
            let base = match k8s_name(&o.object.name) {
                // k8s_name's stand-in for a name with no letter or digit
                n if n == "table" && o.object.name != "table" => kind.word().to_string(),
                n => n,
            };
            let name = names.resource(kind, namespace, &base);
            (namespace.to_string(), name)
        }
    };
    let mut spec = Map::new();
    spec.insert("schemaRef".into(), json!(schema_resource));
    if name != o.object.name {
        spec.insert("name".into(), json!(o.object.name));
    }
    let kind_name = match &o.body {
        ObjectBody::View {
            query,
            column_comments,
            ..
        } => {
            spec.insert("query".into(), json!(query));
            if !column_comments.is_empty() {
                spec.insert("columnComments".into(), json!(column_comments));
            }
            let properties: BTreeMap<&String, &String> = o
                .properties
                .iter()
                .filter(|(k, _)| {
                    *k != OWNER_PROPERTY
                        && !is_catalog_view_property(k)
                        && !RESERVED_PROPERTIES.contains(&k.as_str())
                })
                .collect();
            if !properties.is_empty() {
                spec.insert("properties".into(), json!(properties));
            }
            "DeltaView"
        }
        ObjectBody::Function {
            parameters,
            returns,
            body,
            deterministic,
            ..
        } => {
            if !parameters.is_empty() {
                let params: Vec<Value> = parameters
                    .iter()
                    .map(|p| {
                        let mut m = Map::new();
                        m.insert("name".into(), json!(p.name));
                        m.insert("type".into(), json!(p.data_type));
                        if let Some(c) = &p.comment {
                            m.insert("comment".into(), json!(c));
                        }
                        Value::Object(m)
                    })
                    .collect();
                spec.insert("parameters".into(), Value::Array(params));
            }
            spec.insert("returns".into(), json!(returns));
            spec.insert("body".into(), json!(body));
            if let Some(d) = deterministic {
                spec.insert("deterministic".into(), json!(d));
            }
            "DeltaFunction"
        }
        ObjectBody::Volume => "DeltaVolume",
    };
    Annotations {
        comment: o.comment.as_deref(),
        // a function has no tags
        tags: &o.tags,
        grants: &o.grants,
        owner: o.owner.as_deref(),
    }
    .write(&mut spec);
    let doc = json!({"apiVersion": API_VERSION, "kind": kind_name, "metadata": {"name": name, "namespace": ns}, "spec": spec});
    // what the validator would refuse is not written: the folder must plan. An owner in
    // another namespace needs its DeltaSchema there (as an owned table does): checked so
    let mut schema = schema.clone();
    if ns != namespace {
        schema["metadata"]["namespace"] = json!(ns);
        eprintln!(
            "note {}: its owner is in namespace {ns}: its manifest names the DeltaSchema {schema_resource} there (import with --namespace {ns} to write that one)",
            o.object
        );
    }
    let errors = validate(&schema, &doc, kind);
    if !errors.is_empty() {
        return Err(format!(
            "its manifest would not validate: {}",
            errors
                .iter()
                .map(|e| e.located())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let file = names.file(kind, &name);
    Ok(ObjectManifest { file, doc })
}

/// The validator's errors for one object's manifest beside its schema's.
fn validate(schema: &Value, doc: &Value, kind: ObjectKind) -> Vec<SpecError> {
    let mut m = Manifests::default();
    let mut errors = Vec::new();
    load_value("import", schema.clone(), &mut m, &mut errors);
    load_value("import", doc.clone(), &mut m, &mut errors);
    if !errors.is_empty() {
        return errors;
    }
    match kind {
        ObjectKind::View => m.views.iter().flat_map(|v| check_view(&m, v)).collect(),
        ObjectKind::Function => m
            .functions
            .iter()
            .flat_map(|f| check_function(&m, f))
            .collect(),
        ObjectKind::Volume => m.volumes.iter().flat_map(|v| check_volume(&m, v)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::engine::parse_live;
    use crate::model::object::with_marker;
    use crate::model::privilege::Privilege;
    use crate::model::{FunctionParam, Grant, ObjectRef, ResourceId, SchemaRef};
    use crate::plan::Capabilities;
    use crate::plan::object::{ObjectAction, ObjectOutcome, plan_declared};
    use crate::plan::planner::TableAction;
    use crate::spec::lower_objects::lower_objects;
    use std::sync::Arc;

    fn schema_doc() -> Value {
        super::super::import::schema_manifest(
            &SchemaRef {
                catalog: "main".into(),
                schema: "sales".into(),
            },
            "sales",
            "default",
            "dbx",
        )
    }

    fn live(kind: ObjectKind, name: &str, body: ObjectBody) -> ObservedObject {
        let mut o = ObservedObject::new(ObjectRef::new(kind, "main", "sales", name), body);
        o.owner = Some("someone@example.com".into());
        o.grants = vec![Grant {
            principal: "analysts".into(),
            privileges: vec![Privilege::new(match kind {
                ObjectKind::View => "SELECT",
                ObjectKind::Function => "EXECUTE",
                ObjectKind::Volume => "READ VOLUME",
            })],
        }];
        if kind != ObjectKind::Function {
            o.tags.insert("domain".into(), "sales".into());
        }
        o.comment = Some("it's \"ours\"\nand more".into());
        o
    }

    fn view(name: &str) -> ObservedObject {
        let mut o = live(
            ObjectKind::View,
            name,
            ObjectBody::View {
                query: "select id,\n  email FROM main.sales.orders where id > 10".into(),
                normalized: String::new(),
                column_comments: [("id".to_string(), "the key".to_string())].into(),
            },
        );
        o.properties.insert("quality".into(), "gold".into());
        o.properties
            .insert("view.catalogAndNamespace.numParts".into(), "2".into());
        o.properties
            .insert("transient_lastDdlTime".into(), "1700000000".into());
        o
    }

    fn function(name: &str) -> ObservedObject {
        live(
            ObjectKind::Function,
            name,
            ObjectBody::Function {
                parameters: vec![FunctionParam {
                    name: "email".into(),
                    data_type: "string".into(),
                    comment: Some("the address".into()),
                }],
                returns: "string".into(),
                body: "CASE WHEN email IS NULL THEN NULL ELSE '***' END".into(),
                normalized: String::new(),
                deterministic: Some(true),
            },
        )
    }

    /// The manifest lowered and planned against the object it was imported from.
    fn replan(o: &ObservedObject, doc: &Value) -> crate::plan::object::ObjectPlan {
        let mut m = Manifests::default();
        let mut errors = Vec::new();
        load_value("t", schema_doc(), &mut m, &mut errors);
        load_value("t", doc.clone(), &mut m, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        let desired = lower_objects(&m).expect("lowers");
        assert_eq!(desired.len(), 1);
        let mut live = o.clone();
        parse_live(&mut live);
        plan_declared(
            &Arc::new(desired[0].clone()),
            Some(&Arc::new(live)),
            &Capabilities::databricks(),
        )
    }

    fn actions(p: &crate::plan::object::ObjectPlan) -> Vec<ObjectAction> {
        match &p.outcome {
            ObjectOutcome::Accepted { steps } => steps.iter().map(|s| s.action.clone()).collect(),
            other => panic!("not accepted: {other:?}"),
        }
    }

    #[test]
    fn an_unmarked_objects_first_plan_only_puts_the_marker_on() {
        let mut names = Names::default();
        let schema = schema_doc();
        let v = view("recent");
        let m = object_manifest(&v, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.file, "recent.view.yaml");
        let spec = &m.doc["spec"];
        assert_eq!(m.doc["kind"], "DeltaView");
        assert_eq!(spec["properties"], json!({"quality": "gold"}), "{spec}");
        assert_eq!(spec["columnComments"], json!({"id": "the key"}));
        assert_eq!(spec["comment"], "it's \"ours\"\nand more");
        assert!(spec.get("name").is_none(), "{spec}");
        let marker = ResourceId::new("default", "recent");
        assert_eq!(
            actions(&replan(&v, &m.doc)),
            [ObjectAction::SetProperties {
                properties: [(OWNER_PROPERTY.to_string(), marker.to_string())].into()
            }]
        );

        let f = function("mask_email");
        let m = object_manifest(&f, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.file, "mask-email.function.yaml");
        assert_eq!(m.doc["metadata"]["name"], "mask-email");
        assert_eq!(m.doc["spec"]["name"], "mask_email");
        assert!(m.doc["spec"].get("tags").is_none());
        let steps = actions(&replan(&f, &m.doc));
        match &steps[..] {
            [
                ObjectAction::ReplaceFunction { comment, .. },
                ObjectAction::Grant { principal, .. },
                ObjectAction::SetOwner { owner },
            ] => {
                // the user's comment, then the replace's put-back record, then the marker
                let marked = with_marker(
                    f.comment.as_deref(),
                    &ResourceId::new("default", "mask-email"),
                );
                let (user, marker) = marked.rsplit_once('\n').unwrap();
                assert!(
                    comment.starts_with(&format!("{user}\n[delta-operator.io/put-back="))
                        && comment.contains("analysts")
                        && comment.ends_with(&format!("]\n{marker}")),
                    "{comment}"
                );
                assert_eq!(principal, "analysts");
                assert_eq!(owner, "someone@example.com");
            }
            other => panic!("{other:?}"),
        }

        let vol = live(ObjectKind::Volume, "landing", ObjectBody::Volume);
        let m = object_manifest(&vol, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.file, "landing.volume.yaml");
        assert_eq!(
            actions(&replan(&vol, &m.doc)),
            [ObjectAction::SetComment {
                comment: with_marker(
                    vol.comment.as_deref(),
                    &ResourceId::new("default", "landing")
                )
            }]
        );
    }

    #[test]
    fn an_owned_object_keeps_its_owners_name_and_plans_empty() {
        let mut names = Names::default();
        let schema = schema_doc();
        // an unmarked volume named like the owned one's resource comes second
        let mut owned = live(ObjectKind::Volume, "archive", ObjectBody::Volume);
        owned.marker = Some("default/archive-files".into());
        let m = object_manifest(&owned, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.doc["metadata"]["name"], "archive-files");
        assert_eq!(m.doc["spec"]["name"], "archive");
        let p = replan(&owned, &m.doc);
        assert_eq!(p.action, TableAction::Unchanged, "{p:?}");
        let other = live(ObjectKind::Volume, "archive_files", ObjectBody::Volume);
        let m = object_manifest(&other, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.doc["metadata"]["name"], "archive-files-2");
        assert_eq!(m.file, "archive-files-2.volume.yaml");

        let mut v = view("recent");
        v.properties
            .insert(OWNER_PROPERTY.into(), "default/recent-view".into());
        let m = object_manifest(&v, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.doc["metadata"]["name"], "recent-view");
        assert!(m.doc["spec"]["properties"].get(OWNER_PROPERTY).is_none());
        assert_eq!(replan(&v, &m.doc).action, TableAction::Unchanged);

        let mut f = function("mask_email");
        f.comment = None;
        f.marker = Some("default/mask".into());
        let m = object_manifest(&f, &schema, "sales", "default", &mut names).unwrap();
        assert!(m.doc["spec"].get("comment").is_none());
        assert_eq!(replan(&f, &m.doc).action, TableAction::Unchanged);
    }

    #[test]
    fn hostile_names_round_trip_and_undeclarable_ones_are_skipped_saying_why() {
        let mut names = Names::default();
        let schema = schema_doc();
        let name = "ünï`co'de\"x";
        let vol = live(ObjectKind::Volume, name, ObjectBody::Volume);
        let m = object_manifest(&vol, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.doc["metadata"]["name"], "n--co-de-x");
        assert_eq!(m.doc["spec"]["name"], name);
        assert!(matches!(
            &actions(&replan(&vol, &m.doc))[..],
            [ObjectAction::SetComment { .. }]
        ));
        // no letter or digit at all: named by its kind
        let vol = live(ObjectKind::Volume, "'`", ObjectBody::Volume);
        let m = object_manifest(&vol, &schema, "sales", "default", &mut names).unwrap();
        assert_eq!(m.doc["metadata"]["name"], "volume");
        // a name a resource cannot hold, a query the validator refuses: not written
        let spaced = live(ObjectKind::Volume, "a b", ObjectBody::Volume);
        let why = object_manifest(&spaced, &schema, "sales", "default", &mut names)
            .err()
            .unwrap();
        assert!(why.contains("' '"), "{why}");
        let mut bad = view("bad");
        if let ObjectBody::View { query, .. } = &mut bad.body {
            *query = "SELECT 1; DROP TABLE x".into();
        }
        let why = object_manifest(&bad, &schema, "sales", "default", &mut names)
            .err()
            .unwrap();
        assert!(why.contains("spec.query"), "{why}");
    }

    #[test]
    fn numbered_names_stay_kubernetes_names() {
        assert_eq!(numbered("orders", 1), "orders");
        assert_eq!(numbered("orders", 2), "orders-2");
        let long = "a".repeat(300);
        assert_eq!(numbered(&long, 1).len(), MAX_K8S_NAME);
        let n = numbered(&long, 12);
        assert!(n.len() == MAX_K8S_NAME && n.ends_with("-12"), "{n}");
        // cut where a '-' would end the name: trimmed
        let dashy = format!("{}-b", "a".repeat(252));
        assert_eq!(numbered(&dashy, 1), "a".repeat(252));
    }

    #[test]
    fn names_are_unique_per_kind_and_namespace_and_files_in_the_folder() {
        let mut n = Names::default();
        n.take_file("orders.yaml");
        assert_eq!(n.resource(ObjectKind::View, "ns", "orders"), "orders");
        assert_eq!(n.resource(ObjectKind::View, "ns", "orders"), "orders-2");
        assert_eq!(n.resource(ObjectKind::View, "other", "orders"), "orders");
        assert_eq!(n.resource(ObjectKind::Function, "ns", "orders"), "orders");
        assert_eq!(n.file(ObjectKind::View, "orders"), "orders.view.yaml");
        assert_eq!(n.file(ObjectKind::View, "orders"), "orders-2.view.yaml");
        assert_eq!(
            n.file(ObjectKind::Function, "orders"),
            "orders.function.yaml"
        );
    }
}
