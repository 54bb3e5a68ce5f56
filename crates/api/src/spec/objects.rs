//! The custom resources for a schema's other objects: `DeltaView`,
//! `DeltaFunction` (a SQL scalar function) and `DeltaVolume` (a managed
//! volume). Databricks (Unity Catalog) only. Like `DeltaTable`'s, the field
//! names are part of the public contract.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

use super::crd::{
    ApplyStatus, ApprovalStatus, Condition, DeletionPolicy, GrantSpec, LastApplied, NullableMap,
    PlanStatus, Policy,
};

/// The longest view query or function body (bytes).
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// The fields every object kind declares (`spec.schemaRef`, `spec.name`,
/// `spec.comment`, `spec.grants`, `spec.owner`, `spec.policy`,
/// `spec.deletionPolicy`), flattened into each kind's spec. The
/// descriptions here say "the object"; each kind's spec puts its own words in
/// the CRD schema (`describe_common`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectCommonSpec {
    /// The name of a DeltaSchema in the same namespace.
    #[schemars(length(min = 1, max = 253))]
    pub schema_ref: String,
    /// The object's name; defaults to metadata.name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "!self.matches(r'[./ \\\\]')", "message": "must not contain '.', spaces, '/' or '\\': use a name without them"}
    ]))]
    pub name: Option<String>,
    /// The object comment. Omitted: left alone; `""`: cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub comment: Option<String>,
    /// A named principal gets exactly these privileges; principals not named
    /// are left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<GrantSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `Auto` (default): applies all but destructive steps, which wait for approval.
    /// `Manual`: every non-empty plan waits for approval. `Observe`: never applies.
    #[serde(default)]
    pub policy: Policy,
    /// `Retain` (default): deleting the resource leaves the object.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
}

/// A view, declared: `CREATE VIEW … AS <query>`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "delta-operator.io",
    version = "v1alpha1",
    kind = "DeltaView",
    namespaced,
    status = "DeltaObjectStatus",
    shortname = "dv",
    printcolumn = r#"{"name":"OBJECT","type":"string","jsonPath":".status.object"}"#,
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"PLAN","type":"string","jsonPath":".status.plan.summary"}"#,
    printcolumn = r#"{"name":"RISK","type":"string","jsonPath":".status.plan.risk"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = describe_common(ObjectKindSpec::View))]
pub struct DeltaViewSpec {
    #[serde(flatten)]
    pub common: ObjectCommonSpec,
    /// The view's query: one `SELECT` (or `WITH … SELECT`), the text after
    /// `AS`. One- and two-part names resolve against the view's own catalog
    /// and schema. Compared normalised (parsed and printed back): formatting
    /// and keyword case never make a plan.
    #[schemars(length(min = 1, max = 65536))]
    pub query: String,
    /// Comments of the view's columns, by column name (set with the view).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub column_comments: BTreeMap<String, String>,
    /// View tags; `key: null` removes one. Tags not named are left alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: NullableMap,
    /// View properties (TBLPROPERTIES); `key: null` removes one. Keys not named are left alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: NullableMap,
}

/// A SQL scalar function, declared:
/// `CREATE FUNCTION f(<parameters>) RETURNS <returns> RETURN <body>`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "delta-operator.io",
    version = "v1alpha1",
    kind = "DeltaFunction",
    namespaced,
    status = "DeltaObjectStatus",
    shortname = "dfn",
    printcolumn = r#"{"name":"OBJECT","type":"string","jsonPath":".status.object"}"#,
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"PLAN","type":"string","jsonPath":".status.plan.summary"}"#,
    printcolumn = r#"{"name":"RISK","type":"string","jsonPath":".status.plan.risk"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = describe_common(ObjectKindSpec::Function))]
pub struct DeltaFunctionSpec {
    #[serde(flatten)]
    pub common: ObjectCommonSpec,
    /// The parameters, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub parameters: Vec<FunctionParameterSpec>,
    /// The return type (`string`, `decimal(18,2)`): a scalar function.
    #[schemars(length(min = 1, max = 4096))]
    pub returns: String,
    /// The body: a SQL expression or a scalar subquery, the text after
    /// `RETURN`. It may name the parameters. Compared normalised.
    #[schemars(length(min = 1, max = 65536))]
    pub body: String,
    /// `true`: DETERMINISTIC; `false`: NOT DETERMINISTIC. Omitted: not stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic: Option<bool>,
}

/// One parameter of a function.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunctionParameterSpec {
    #[schemars(length(min = 1, max = 255))]
    pub name: String,
    /// A type in string notation (`int`, `decimal(18,2)`, `array<string>`).
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 4096))]
    pub data_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub comment: Option<String>,
}

/// A managed volume, declared: `CREATE VOLUME`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "delta-operator.io",
    version = "v1alpha1",
    kind = "DeltaVolume",
    namespaced,
    status = "DeltaObjectStatus",
    shortname = "dvol",
    printcolumn = r#"{"name":"OBJECT","type":"string","jsonPath":".status.object"}"#,
    printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"PLAN","type":"string","jsonPath":".status.plan.summary"}"#,
    printcolumn = r#"{"name":"RISK","type":"string","jsonPath":".status.plan.risk"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = describe_common(ObjectKindSpec::Volume))]
pub struct DeltaVolumeSpec {
    #[serde(flatten)]
    pub common: ObjectCommonSpec,
    /// Volume tags; `key: null` removes one. Tags not named are left alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: NullableMap,
}

/// The CRD schema descriptions of the common fields that name the kind (the
/// object's noun, its privileges, what deleting the resource does).
fn describe_common(kind: ObjectKindSpec) -> impl FnMut(&mut Schema) {
    move |schema: &mut Schema| {
        let (name, comment, grants, deletion) = match kind {
            ObjectKindSpec::View => (
                "The view's name; defaults to metadata.name. Views and tables share\na schema's names.",
                "The view comment. Omitted: left alone; `\"\"`: cleared.",
                "A named principal gets exactly these privileges (`SELECT`, `ALL\nPRIVILEGES`, `MANAGE`); principals not named are left alone.",
                "`Retain` (default): deleting the resource leaves the view.\n`Delete`: the view is dropped (a destructive step: after approval).",
            ),
            ObjectKindSpec::Function => (
                "The function's name; defaults to metadata.name.",
                "The function comment. Omitted: left alone; `\"\"`: cleared.",
                "A named principal gets exactly these privileges (`EXECUTE`, `ALL\nPRIVILEGES`, `MANAGE`); principals not named are left alone.",
                "`Retain` (default): deleting the resource leaves the function.\n`Delete`: the function is dropped, only when its DeltaSchema is strict\nand after approval (otherwise it is kept, and an event says so).",
            ),
            ObjectKindSpec::Volume => (
                "The volume's name; defaults to metadata.name.",
                "The volume comment. Omitted: left alone; `\"\"`: cleared.",
                "A named principal gets exactly these privileges (`READ VOLUME`,\n`WRITE VOLUME`, `ALL PRIVILEGES`, `MANAGE`); principals not named are left alone.",
                "`Retain` (default): deleting the resource leaves the volume.\n`Delete`: the volume is dropped, only when its DeltaSchema is strict\nand after approval (otherwise it is kept, and an event says so).",
            ),
        };
        let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) else {
            return;
        };
        for (field, text) in [
            ("name", name),
            ("comment", comment),
            ("grants", grants),
            ("deletionPolicy", deletion),
        ] {
            if let Some(p) = properties.get_mut(field).and_then(|p| p.as_object_mut()) {
                p.insert("description".to_string(), text.into());
            }
        }
    }
}

/// The status of a DeltaView, DeltaFunction or DeltaVolume (the shape of
/// DeltaTableStatus, without what only tables have).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeltaObjectStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The fully qualified name (`catalog.schema.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// The apply running now, or cut short (see the Reconciling condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<ApplyStatus>,
    /// The last approval spent (and the values spent before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The replica (its `--identity`) that wrote this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_by: Option<String>,
    /// The shard the resource is in (`run --shards` above 1): by its namespace,
    /// or its label `delta-operator.io/shard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<i64>,
}

/// The kinds a manifest may declare besides schemas and tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKindSpec {
    View,
    Function,
    Volume,
}

impl ObjectKindSpec {
    /// `DeltaView`, `DeltaFunction`, `DeltaVolume`.
    pub fn kind(self) -> &'static str {
        match self {
            ObjectKindSpec::View => "DeltaView",
            ObjectKindSpec::Function => "DeltaFunction",
            ObjectKindSpec::Volume => "DeltaVolume",
        }
    }
    /// `view`, `function`, `volume`.
    pub fn noun(self) -> &'static str {
        match self {
            ObjectKindSpec::View => "view",
            ObjectKindSpec::Function => "function",
            ObjectKindSpec::Volume => "volume",
        }
    }
}

/// What the three kinds share, for loading, validation and lowering: the
/// common fields (one implementation, over `common()`) and the tags.
pub trait ObjectResource: kube::Resource<DynamicType = ()> {
    const KIND: ObjectKindSpec;
    /// The fields every kind declares.
    fn common(&self) -> &ObjectCommonSpec;
    /// Tags (views, volumes; empty for functions).
    fn tags(&self) -> &NullableMap;
    fn schema_ref(&self) -> &str {
        &self.common().schema_ref
    }
    /// `spec.name`, if set.
    fn spec_name(&self) -> Option<&str> {
        self.common().name.as_deref()
    }
    fn comment(&self) -> Option<&str> {
        self.common().comment.as_deref()
    }
    fn grants(&self) -> &[GrantSpec] {
        &self.common().grants
    }
    fn owner(&self) -> Option<&str> {
        self.common().owner.as_deref()
    }
    fn policy(&self) -> Policy {
        self.common().policy
    }
    /// What deleting the resource does to the object (`Retain` by default).
    fn deletion_policy(&self) -> DeletionPolicy {
        self.common().deletion_policy
    }
    /// The object's name: `spec.name`, else `metadata.name`.
    fn object_name(&self) -> String {
        self.spec_name()
            .map(str::to_string)
            .unwrap_or_else(|| self.meta().name.clone().unwrap_or_default())
    }
    /// The field that names the object (`spec.name` or `metadata.name`).
    fn name_field(&self) -> &'static str {
        if self.spec_name().is_some() {
            "spec.name"
        } else {
            "metadata.name"
        }
    }
}

static NO_TAGS: NullableMap = BTreeMap::new();

impl ObjectResource for DeltaView {
    const KIND: ObjectKindSpec = ObjectKindSpec::View;
    fn common(&self) -> &ObjectCommonSpec {
        &self.spec.common
    }
    fn tags(&self) -> &NullableMap {
        &self.spec.tags
    }
}

impl ObjectResource for DeltaFunction {
    const KIND: ObjectKindSpec = ObjectKindSpec::Function;
    fn common(&self) -> &ObjectCommonSpec {
        &self.spec.common
    }
    fn tags(&self) -> &NullableMap {
        &NO_TAGS
    }
}

impl ObjectResource for DeltaVolume {
    const KIND: ObjectKindSpec = ObjectKindSpec::Volume;
    fn common(&self) -> &ObjectCommonSpec {
        &self.spec.common
    }
    fn tags(&self) -> &NullableMap {
        &self.spec.tags
    }
}
