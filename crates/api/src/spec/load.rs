//! Reads manifests from files and folders: YAML, several documents per file.
//! Documents of other API groups (a kustomization, a Namespace) are skipped;
//! ours are checked against the CRD schema, then deserialized.

use std::path::{Path, PathBuf};

use kube::CustomResourceExt;
use serde_json::Value;

use super::crd::{DeltaSchema, DeltaTable};
use super::error::SpecError;
use super::objects::{DeltaFunction, DeltaView, DeltaVolume};
use super::schema_check;

pub const GROUP: &str = "delta-operator.io";
pub const API_VERSION: &str = "delta-operator.io/v1alpha1";
pub const DEFAULT_NAMESPACE: &str = "default";

/// The largest manifest file read (bytes). The API server refuses objects
/// over about 1.5 MiB, and client-side `kubectl apply` keeps a copy of each
/// object in a 256 KiB annotation, so a file this large is already one that
/// cannot be applied as it is.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// A resource and the file it came from.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub file: String,
    pub resource: T,
}

impl<T: kube::Resource<DynamicType = ()>> Loaded<T> {
    pub fn namespace(&self) -> String {
        self.resource
            .meta()
            .namespace
            .clone()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string())
    }
    pub fn name(&self) -> String {
        self.resource.meta().name.clone().unwrap_or_default()
    }
    /// `DeltaTable default/orders`.
    pub fn label(&self) -> String {
        format!("{} {}/{}", T::kind(&()), self.namespace(), self.name())
    }
}

/// Every manifest of ours found under the given paths.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    pub schemas: Vec<Loaded<DeltaSchema>>,
    pub tables: Vec<Loaded<DeltaTable>>,
    pub views: Vec<Loaded<DeltaView>>,
    pub functions: Vec<Loaded<DeltaFunction>>,
    pub volumes: Vec<Loaded<DeltaVolume>>,
}

/// Every kind a manifest may declare.
pub const KINDS: [&str; 5] = [
    "DeltaSchema",
    "DeltaTable",
    "DeltaView",
    "DeltaFunction",
    "DeltaVolume",
];

/// Loads every `.yaml`/`.yml` file under `paths` (folders recursively, in name
/// order). Returns what parsed and every error found; a document with errors is left out.
pub fn load_paths(paths: &[PathBuf]) -> (Manifests, Vec<SpecError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        collect_files(p, &mut files, &mut errors);
    }
    let mut out = Manifests::default();
    for file in files {
        let label = file.display().to_string();
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        if size > MAX_FILE_BYTES {
            errors.push(
                SpecError::new("", format!("is {size} bytes; the limit is {MAX_FILE_BYTES} bytes (1 MiB) per file"), "split it: one file per DeltaTable (the API server refuses objects over about 1.5 MiB)")
                    .in_file(&label, None),
            );
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(text) => load_str(&label, &text, &mut out, &mut errors),
            Err(e) => errors.push(
                SpecError::new(
                    "",
                    format!("cannot read: {e}"),
                    "check the path and permissions",
                )
                .in_file(&label, None),
            ),
        }
    }
    (out, errors)
}

fn collect_files(path: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<SpecError>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                errors.push(
                    SpecError::new("", format!("cannot read folder: {e}"), "")
                        .in_file(&path.display().to_string(), None),
                );
                return;
            }
        };
        entries.sort();
        for e in entries {
            let is_yaml = e.extension().is_some_and(|x| x == "yaml" || x == "yml");
            if e.is_dir() || is_yaml {
                collect_files(&e, files, errors);
            }
        }
    } else if path.exists() {
        files.push(path.to_path_buf());
    } else {
        errors.push(
            SpecError::new("", "no such file or folder", "check the path given to -f")
                .in_file(&path.display().to_string(), None),
        );
    }
}

/// Parses one file's text (several documents) into `out`.
pub fn load_str(file: &str, text: &str, out: &mut Manifests, errors: &mut Vec<SpecError>) {
    if text.len() as u64 > MAX_FILE_BYTES {
        let e = SpecError::new(
            "",
            format!(
                "is {} bytes; the limit is {MAX_FILE_BYTES} bytes (1 MiB) per file",
                text.len()
            ),
            "split it: one file per DeltaTable (the API server refuses objects over about 1.5 MiB)",
        );
        errors.push(e.in_file(file, None));
        return;
    }
    let docs: Vec<Value> = match serde_saphyr::from_multiple(text) {
        Ok(d) => d,
        Err(e) => {
            let e = match over_budget(&e) {
                Some(why) => SpecError::new(
                    "",
                    format!("is over the YAML reader's budget: {why}"),
                    "split the file (one DeltaTable per file), flatten deep nesting, and write values out instead of YAML anchors and aliases",
                ),
                None => SpecError::new("", format!("not valid YAML: {e}"), "fix the YAML syntax"),
            };
            errors.push(e.in_file(file, None));
            return;
        }
    };
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        load_document(file, doc, out, errors);
    }
}

/// What limit of the YAML reader's budget a document broke, named with the
/// limit, when the error is that (a file under `MAX_FILE_BYTES` can still hold
/// too many nodes, nest too deep or alias too much: the budget bounds the
/// memory and time one file costs).
fn over_budget(e: &serde_saphyr::Error) -> Option<String> {
    use serde_saphyr::budget::BudgetBreach as B;
    let mut e = e;
    while let serde_saphyr::Error::WithSnippet { error, .. }
    | serde_saphyr::Error::AliasError { error, .. } = e
    {
        e = error;
    }
    let serde_saphyr::Error::Budget { breach, .. } = e else {
        return None;
    };
    let limits = serde_saphyr::Budget::default();
    Some(match breach {
        B::Nodes { .. } => format!(
            "more than {} nodes (values, lists and mappings) in one file",
            limits.max_nodes
        ),
        B::Events { .. } => format!("more than {} YAML events in one file", limits.max_events),
        B::Depth { .. } => format!(
            "lists and mappings nested more than {} levels deep",
            limits.max_depth
        ),
        B::Documents { .. } => format!(
            "more than {} documents ('---') in one file",
            limits.max_documents
        ),
        B::Aliases { .. } | B::AliasAnchorRatio { .. } => format!(
            "too many aliases ('*name'): at most {}, and at most {} per anchor",
            limits.max_aliases, limits.alias_anchor_ratio_multiplier
        ),
        B::Anchors { .. } => format!("more than {} anchors ('&name')", limits.max_anchors),
        B::ScalarBytes { .. } => format!(
            "more than {} bytes of values in one file",
            limits.max_total_scalar_bytes
        ),
        other => format!("{other:?}"),
    })
}

/// Checks and parses one document already decoded (the object of an admission
/// request), exactly as a document of a file: `file` labels its errors.
pub fn load_value(file: &str, doc: Value, out: &mut Manifests, errors: &mut Vec<SpecError>) {
    load_document(file, doc, out, errors)
}

fn load_document(file: &str, doc: Value, out: &mut Manifests, errors: &mut Vec<SpecError>) {
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !api_version.starts_with(&format!("{GROUP}/")) {
        return; // not ours: kustomizations, namespaces and the like live beside our manifests
    }
    let ns = doc
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_NAMESPACE);
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<no name>");
    let label = format!("{kind} {ns}/{name}");
    let mut found = Vec::new();
    if api_version != API_VERSION {
        found.push(SpecError::new(
            "apiVersion",
            format!("unsupported version '{api_version}'"),
            format!("use '{API_VERSION}'"),
        ));
    } else if doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        found.push(SpecError::new(
            "metadata.name",
            "is required",
            "give the resource a name",
        ));
    }
    let crd = match kind {
        "DeltaSchema" => DeltaSchema::crd(),
        "DeltaTable" => DeltaTable::crd(),
        "DeltaView" => DeltaView::crd(),
        "DeltaFunction" => DeltaFunction::crd(),
        "DeltaVolume" => DeltaVolume::crd(),
        other => {
            let fix = match schema_check::nearest(other, &KINDS) {
                Some(n) => format!("did you mean '{n}'?"),
                None => format!("use one of {}", KINDS.join(", ")),
            };
            errors.push(
                SpecError::new("kind", format!("unknown kind '{other}'"), fix)
                    .in_file(file, Some(&label)),
            );
            return;
        }
    };
    if found.is_empty() {
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap_or_default();
        let root = schema.get("openAPIV3Schema").cloned().unwrap_or_default();
        let mut body = doc.clone();
        // metadata and status are the API server's business, not the spec's
        if let Some(m) = body.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
            m.remove("apiVersion");
            m.remove("kind");
        }
        // the CRD schema requires spec, and reports a misspelt one as an unknown key with a suggestion
        schema_check::check(&body, &root, "", &mut found);
        for e in &mut found {
            e.path = e.path.trim_start_matches('.').to_string();
        }
        if !found.is_empty() {
            // the document is left out, so report its column types now as well
            found.extend(raw_column_type_errors(&doc));
        }
    }
    if found.is_empty() {
        let file = file.to_string();
        let parsed = match kind {
            "DeltaSchema" => serde_json::from_value(doc)
                .map(|resource| out.schemas.push(Loaded { file, resource })),
            "DeltaView" => serde_json::from_value(doc)
                .map(|resource| out.views.push(Loaded { file, resource })),
            "DeltaFunction" => serde_json::from_value(doc)
                .map(|resource| out.functions.push(Loaded { file, resource })),
            "DeltaVolume" => serde_json::from_value(doc)
                .map(|resource| out.volumes.push(Loaded { file, resource })),
            _ => serde_json::from_value(doc)
                .map(|resource| out.tables.push(Loaded { file, resource })),
        };
        if let Err(e) = parsed {
            found.push(SpecError::new(
                "spec",
                e.to_string(),
                "check the field types against the spec reference",
            ));
        }
    }
    errors.extend(found.into_iter().map(|e| e.in_file(file, Some(&label))));
}

/// Type errors in `spec.columns[*].type` of a raw document.
fn raw_column_type_errors(doc: &Value) -> Vec<SpecError> {
    let mut out = Vec::new();
    for (i, c) in doc
        .pointer("/spec/columns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(t) = c.get("type")
            && let Err(e) = delta_operator_core::model::type_syntax::type_from_value(t)
        {
            out.push(super::validate::type_error(
                &format!("spec.columns[{i}].type"),
                &e,
            ));
        }
    }
    out
}
