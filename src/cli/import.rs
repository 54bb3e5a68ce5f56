//! `import`: manifests for the live tables of a schema (and, through
//! `import_objects`, its views, functions and volumes), written so that they
//! plan clean against what they were imported from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value, json};

use super::import_objects::{Names, object_manifest};
use super::{CliError, Exit, open_backend, write_file};
use crate::backend::{Backend, Extras};
use crate::config::Config;
use crate::model::names::{MAX_NAME_BYTES, object_name_problem, printable};
use crate::model::{
    Grant, OWNER_PROPERTY, ObjectKind, ObservedColumn, ObservedTable, SchemaRef, TableKind,
};
use crate::plan::diff::is_internal_property;
use crate::spec::load::API_VERSION;

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// `catalog.schema` to import.
    #[arg(long)]
    pub schema: String,
    /// Folder to write the manifests into.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Namespace for tables, views, functions and volumes the operator does not own yet.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Tables another tool makes (a glob on the table name, `*` any run of characters;
    /// e.g. `fct_*` for dbt models): written as governance-only specs (scope Annotations).
    /// Repeatable. Pipeline tables, streaming tables, materialized views, views and a dlt
    /// schema's tables are recognised without it.
    #[arg(long = "governed-only", value_name = "PATTERN")]
    pub governed_only: Vec<String>,
}

/// Tables dlt keeps for itself in the schemas it loads: their presence marks the schema as
/// dlt's, and they are neither imported nor governed.
const DLT_BOOKKEEPING: [&str; 3] = ["_dlt_loads", "_dlt_version", "_dlt_pipeline_state"];

/// The tool that makes a live table, when it is not the operator's to shape: a pipeline
/// (a streaming table, a materialized view, or the `pipelines.*` properties Lakeflow / Delta
/// Live Tables set on the tables they write), a view's definition, dlt, or a `--governed-only`
/// pattern. None: a table the spec may own whole.
fn made_elsewhere(t: &ObservedTable, dlt_schema: bool, patterns: &[String]) -> Option<String> {
    Some(match t.kind {
        TableKind::StreamingTable => "a pipeline's streaming table".into(),
        TableKind::MaterializedView => "a pipeline's materialized view".into(),
        TableKind::View => "a view (its definition shapes it)".into(),
        TableKind::Table if t.properties.keys().any(|k| k.starts_with("pipelines.")) => {
            "a pipeline's table (pipelines.* properties)".into()
        }
        TableKind::Table if dlt_schema => "a dlt table (the schema holds _dlt_loads)".into(),
        TableKind::Table => {
            let p = patterns
                .iter()
                .find(|p| crate::config::matches(&p.to_lowercase(), &t.table.table))?;
            format!("matched --governed-only {p}")
        }
    })
}

/// A governance-only DeltaTable (scope Annotations, or the scope the table is governed at):
/// its comment, tags, grants and owner, and only the columns that carry a comment, tags or a
/// mask, with no type; nothing of its shape, properties or constraints, which its maker owns.
pub fn governance_manifest(t: &ObservedTable, schema_resource: &str, namespace: &str) -> Value {
    let (ns, name) = match t.owner() {
        Some(owner) => (owner.namespace, owner.name),
        None => (namespace.to_string(), k8s_name(&t.table.table)),
    };
    let scope = match t.governed_scope() {
        crate::model::Scope::Full => crate::model::Scope::Annotations,
        narrow => narrow,
    };
    let mut spec = Map::new();
    spec.insert("schemaRef".into(), json!(schema_resource));
    if name != t.table.table {
        spec.insert("name".into(), json!(t.table.table));
    }
    spec.insert("scope".into(), json!(scope.as_str()));
    let columns: Vec<Value> = t
        .columns
        .iter()
        .filter(|c| c.comment.is_some() || !c.tags.is_empty() || c.mask.is_some())
        .map(|c| {
            let mut col = Map::new();
            col.insert("name".into(), json!(c.name));
            if let Some(cm) = &c.comment {
                col.insert("comment".into(), json!(cm));
            }
            if !c.tags.is_empty() {
                col.insert("tags".into(), json!(c.tags));
            }
            if let Some(m) = &c.mask {
                col.insert("mask".into(), mask_manifest(m));
            }
            Value::Object(col)
        })
        .collect();
    if !columns.is_empty() {
        spec.insert("columns".into(), Value::Array(columns));
    }
    Annotations::of_table(t).write(&mut spec);
    json!({"apiVersion": API_VERSION, "kind": "DeltaTable", "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

/// What every imported resource declares of its object's governance: its
/// comment, tags, grants and owner (a table's, a view's, a function's, a volume's).
pub struct Annotations<'a> {
    pub comment: Option<&'a str>,
    pub tags: &'a BTreeMap<String, String>,
    pub grants: &'a [Grant],
    pub owner: Option<&'a str>,
}

impl<'a> Annotations<'a> {
    pub fn of_table(t: &'a ObservedTable) -> Self {
        Annotations {
            comment: t.comment.as_deref(),
            tags: &t.tags,
            grants: &t.grants,
            owner: t.owner.as_deref(),
        }
    }

    /// Into `spec`, each only when there is one.
    pub fn write(&self, spec: &mut Map<String, Value>) {
        if let Some(c) = self.comment {
            spec.insert("comment".into(), json!(c));
        }
        if !self.tags.is_empty() {
            spec.insert("tags".into(), json!(self.tags));
        }
        if !self.grants.is_empty() {
            let grants: Vec<Value> = self
                .grants
                .iter()
                .map(|g| {
                    let privileges: Vec<String> =
                        g.privileges.iter().map(|p| p.to_string()).collect();
                    json!({"principal": g.principal, "privileges": privileges})
                })
                .collect();
            spec.insert("grants".into(), Value::Array(grants));
        }
        if let Some(o) = self.owner {
            spec.insert("owner".into(), json!(o));
        }
    }
}

fn mask_manifest(m: &crate::model::Mask) -> Value {
    let mut mask = Map::new();
    mask.insert("function".into(), json!(m.function));
    if !m.using_columns.is_empty() {
        mask.insert("usingColumns".into(), json!(m.using_columns));
    }
    Value::Object(mask)
}

/// A Kubernetes object name (RFC 1123) for a table or schema name.
pub fn k8s_name(name: &str) -> String {
    let s: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c: char| c == '-' || c == '.').to_string();
    if s.is_empty() { "table".into() } else { s }
}

pub fn schema_manifest(schema: &SchemaRef, resource: &str, namespace: &str, target: &str) -> Value {
    let mut spec = Map::new();
    spec.insert("catalog".into(), json!(schema.catalog));
    if resource != schema.schema {
        spec.insert("name".into(), json!(schema.schema));
    }
    spec.insert("target".into(), json!(target));
    json!({"apiVersion": API_VERSION, "kind": "DeltaSchema", "metadata": {"name": resource, "namespace": namespace}, "spec": spec})
}

/// One column as the manifest declares it: only what differs from the defaults.
fn column_manifest(c: &ObservedColumn) -> Value {
    let mut col = Map::new();
    col.insert("name".into(), json!(c.name));
    col.insert("type".into(), json!(c.data_type.to_string()));
    if !c.nullable {
        col.insert("nullable".into(), json!(false));
    }
    if let Some(cm) = &c.comment {
        col.insert("comment".into(), json!(cm));
    }
    if let Some(g) = &c.generated {
        col.insert("generated".into(), json!(g));
    }
    if let Some(i) = &c.identity {
        let generated = if i.always { "Always" } else { "ByDefault" };
        col.insert(
            "identity".into(),
            json!({"generated": generated, "start": i.start, "increment": i.increment}),
        );
    }
    if let Some(d) = &c.default {
        col.insert("default".into(), json!(d));
    }
    if let Some(m) = &c.mask {
        col.insert("mask".into(), mask_manifest(m));
    }
    if !c.tags.is_empty() {
        col.insert("tags".into(), json!(c.tags));
    }
    Value::Object(col)
}

/// Every constraint of the table: CHECKs, the primary key, the foreign keys.
fn constraints_manifest(t: &ObservedTable) -> Vec<Value> {
    let mut cs: Vec<Value> = t
        .checks
        .iter()
        .map(|c| json!({"check": {"name": c.name, "expression": c.expression}}))
        .collect();
    if let Some(pk) = &t.primary_key {
        let mut k = Map::new();
        if let Some(n) = &pk.name {
            k.insert("name".into(), json!(n));
        }
        k.insert("columns".into(), json!(pk.columns));
        cs.push(json!({"primaryKey": k}));
    }
    for fk in &t.foreign_keys {
        let mut k = Map::new();
        if let Some(n) = &fk.name {
            k.insert("name".into(), json!(n));
        }
        k.insert("columns".into(), json!(fk.columns));
        k.insert("references".into(), json!(fk.references.to_string()));
        k.insert("referencedColumns".into(), json!(fk.referenced_columns));
        cs.push(json!({"foreignKey": k}));
    }
    cs
}

/// A DeltaTable manifest that plans clean against `t`.
pub fn table_manifest(t: &ObservedTable, schema_resource: &str, namespace: &str) -> Value {
    // an owned table keeps its owner's name, so the plan has no Claim
    let (ns, name) = match t.owner() {
        Some(owner) => (owner.namespace, owner.name),
        None => (namespace.to_string(), k8s_name(&t.table.table)),
    };
    let mut spec = Map::new();
    spec.insert("schemaRef".into(), json!(schema_resource));
    if name != t.table.table {
        spec.insert("name".into(), json!(t.table.table));
    }
    let columns: Vec<Value> = t.columns.iter().map(column_manifest).collect();
    spec.insert("columns".into(), Value::Array(columns));
    if !t.partitioned_by.is_empty() {
        spec.insert("partitionedBy".into(), json!(t.partitioned_by));
    }
    if let Some(c) = t.cluster_by.as_ref().filter(|c| !c.is_empty()) {
        spec.insert("clusterBy".into(), json!(c));
    }
    let props: Map<String, Value> = t
        .properties
        .iter()
        .filter(|(k, _)| {
            *k != OWNER_PROPERTY
                && *k != crate::model::CONSTRAINTS_PROPERTY
                && !is_internal_property(k)
        })
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    if !props.is_empty() {
        spec.insert("properties".into(), Value::Object(props));
    }
    // every constraint, so the first apply claims them instead of dropping any
    let cs = constraints_manifest(t);
    if !cs.is_empty() {
        spec.insert("constraints".into(), Value::Array(cs));
    }
    Annotations::of_table(t).write(&mut spec);
    json!({"apiVersion": API_VERSION, "kind": "DeltaTable", "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

pub async fn import(config: &Config, a: ImportArgs) -> Result<Exit, CliError> {
    let (target, sref) = import_schema(config, &a)?;
    let backend = open_backend(config, &target)?;
    // an absent schema lists no tables: say so rather than write an empty import
    if !backend.schema_exists(&sref).await? {
        return Err(crate::backend::BackendError::Refused {
            message: format!("schema {sref} does not exist on target {target}: nothing to import"),
        }
        .into());
    }
    // views, SQL functions and volumes (a Unity Catalog's; none on the lake or Spark),
    // read again as declared so every one comes with its grants and tags
    let listed: Vec<crate::model::ObjectRef> = backend
        .read_objects(std::slice::from_ref(&sref), &[])
        .await?
        .into_iter()
        .map(|o| o.object)
        .collect();
    let objects = if listed.is_empty() {
        vec![]
    } else {
        backend.read_objects(&[], &listed).await?
    };
    let object_views: BTreeSet<&str> = objects
        .iter()
        .filter(|o| o.object.kind == ObjectKind::View)
        .map(|o| o.object.name.as_str())
        .collect();
    let mut tables = backend.list_schema(&sref).await?;
    // streaming tables, materialized views and views a DeltaView cannot declare here
    // (no metastore for it): governed, never shaped
    tables.extend(
        backend
            .list_views(&sref)
            .await?
            .into_iter()
            .filter(|(name, _)| !object_views.contains(name.to_lowercase().as_str()))
            .map(|(name, _)| crate::model::TableRef::new(&sref.catalog, &sref.schema, &name)),
    );
    let dlt_schema = tables
        .iter()
        .any(|t| DLT_BOOKKEEPING.contains(&t.table.as_str()));
    // the spec written says everything: read every tag and grant
    let observed = backend
        .read(&tables, &Extras::everything())
        .await?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    let schema_resource = k8s_name(&sref.schema);
    let mut written = 0;
    let mut docs = vec![(
        format!("{schema_resource}.schema.yaml"),
        schema_manifest(&sref, &schema_resource, &a.namespace, &target),
    )];
    for t in &observed {
        if let Some(f) = &t.row_filter {
            // a DeltaTable has no field for it: the operator never touches it either
            eprintln!(
                "note {}: its row filter {f} is not written (a DeltaTable does not declare row filters; the operator leaves it alone)",
                t.table
            );
        }
        if let Some(why) = &t.unreadable {
            eprintln!("skipped {}: {why}", t.table);
            continue;
        }
        if !t.unsupported_features.is_empty() {
            eprintln!(
                "skipped {}: writer features {} cannot be managed by this backend",
                t.table,
                t.unsupported_features.join(", ")
            );
            continue;
        }
        if DLT_BOOKKEEPING.contains(&t.table.table.as_str()) {
            eprintln!("skipped {}: dlt's own bookkeeping", t.table);
            continue;
        }
        let narrow = !t.governed_scope().is_full();
        let m = match made_elsewhere(t, dlt_schema, &a.governed_only) {
            Some(why) => {
                eprintln!("governance-only {}: {why}", t.table);
                governance_manifest(t, &schema_resource, &a.namespace)
            }
            None if narrow => governance_manifest(t, &schema_resource, &a.namespace),
            None => table_manifest(t, &schema_resource, &a.namespace),
        };
        docs.push((format!("{}.yaml", k8s_name(&t.table.table)), m));
    }
    // the objects: the owned ones first, so they keep their owners' names
    let mut names = Names::default();
    for (file, _) in &docs {
        names.take_file(file);
    }
    let mut ordered: Vec<&crate::model::ObservedObject> = objects.iter().collect();
    ordered.sort_by_key(|o| o.owner().is_none());
    let mut imported = Vec::new();
    for o in ordered {
        match object_manifest(o, &docs[0].1, &schema_resource, &a.namespace, &mut names) {
            Ok(m) => imported.push((o, m)),
            Err(why) => eprintln!("skipped {} {}: {why}", o.object.kind.word(), o.object),
        }
    }
    imported.sort_by(|(a, _), (b, _)| a.object.cmp(&b.object));
    let counts = [ObjectKind::View, ObjectKind::Function, ObjectKind::Volume]
        .map(|k| imported.iter().filter(|(o, _)| o.object.kind == k).count());
    docs.extend(imported.into_iter().map(|(_, m)| (m.file, m.doc)));
    for (file, doc) in docs {
        let path = a.out.join(file);
        let text = serde_saphyr::to_string(&doc).expect("a manifest serializes");
        write_file(&path, &text)?;
        written += 1;
    }
    let [views, functions, volumes] = counts;
    let objects = if views + functions + volumes == 0 {
        String::new()
    } else {
        format!(", {views} views, {functions} functions, {volumes} volumes")
    };
    println!(
        "wrote {written} manifests to {} ({} tables{objects})",
        a.out.display(),
        observed.len()
    );
    Ok(Exit::Ok)
}

/// `--schema` and the target: the schema's names checked (they become folders under a
/// lake root, so nothing may step outside it) and allowed by the target.
fn import_schema(config: &Config, a: &ImportArgs) -> Result<(String, SchemaRef), CliError> {
    let Some((catalog, schema)) = a.schema.split_once('.') else {
        return Err(CliError::Usage(format!(
            "--schema must be catalog.schema, not '{}'",
            printable(&a.schema)
        )));
    };
    for (what, name) in [("catalog", catalog), ("schema", schema)] {
        if let Some((message, fix)) = object_name_problem(name, MAX_NAME_BYTES) {
            return Err(CliError::Usage(format!(
                "--schema: the {what} name {message}; {fix}"
            )));
        }
    }
    let target = a
        .target
        .clone()
        .unwrap_or_else(|| config.default_target_name());
    let sref = SchemaRef {
        catalog: catalog.to_lowercase(),
        schema: schema.to_lowercase(),
    };
    match config.target(&target) {
        Ok(t) if !t.allows_schema(&sref) => Err(CliError::NotAllowed {
            target,
            schema: sref,
            allowed: t.schemas.clone(),
            untouched: "read",
        }),
        _ => Ok((target, sref)),
    }
}
