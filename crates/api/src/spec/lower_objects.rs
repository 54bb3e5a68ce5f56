//! Lowering views, functions and volumes: a resource → the core's
//! `DesiredObject`, with the normalised query or body the plan compares and
//! what it reads (resolved against the object's own schema). Assumes
//! `validate` passed; what cannot be lowered is an error.

use super::crd::DeltaSchema;
use super::error::SpecError;
use super::load::{Loaded, Manifests};
use super::lower::{lower_grants, schema_ref_of};
use super::objects::{
    DeltaFunction, DeltaView, DeltaVolume, FunctionParameterSpec, ObjectKindSpec, ObjectResource,
};
use delta_operator_core::model::object::{
    DesiredObject, FunctionParam, ObjectBody, ObjectKind, ObjectRef, Reads,
};
use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_core::model::{ResourceId, SchemaRef};
use delta_operator_expression::{parse_body, parse_query};

/// The core's kind of a resource kind.
pub fn object_kind(kind: ObjectKindSpec) -> ObjectKind {
    match kind {
        ObjectKindSpec::View => ObjectKind::View,
        ObjectKindSpec::Function => ObjectKind::Function,
        ObjectKindSpec::Volume => ObjectKind::Volume,
    }
}

/// The DeltaSchema an object's `schemaRef` names (same namespace).
pub fn object_schema_of<'a, T: ObjectResource>(
    m: &'a Manifests,
    o: &Loaded<T>,
) -> Option<&'a Loaded<DeltaSchema>> {
    m.schemas
        .iter()
        .find(|s| s.name() == o.resource.schema_ref() && s.namespace() == o.namespace())
}

/// The fully qualified object a resource declares, when its schema resolves.
pub fn object_ref_of<T: ObjectResource>(m: &Manifests, o: &Loaded<T>) -> Option<ObjectRef> {
    let s = schema_ref_of(object_schema_of(m, o)?);
    Some(ObjectRef::new(
        object_kind(T::KIND),
        &s.catalog,
        &s.schema,
        &o.resource.object_name(),
    ))
}

/// A function's parameter names, as written.
pub fn parameter_names(params: &[FunctionParameterSpec]) -> Vec<String> {
    params.iter().map(|p| p.name.clone()).collect()
}

fn base<T: ObjectResource>(
    m: &Manifests,
    o: &Loaded<T>,
    body: ObjectBody,
) -> Result<DesiredObject, Vec<SpecError>> {
    let object = object_ref_of(m, o).ok_or_else(|| {
        vec![
            SpecError::new(
                "spec.schemaRef",
                format!("no DeltaSchema '{}'", o.resource.schema_ref()),
                "declare the schema",
            )
            .in_file(&o.file, Some(&o.label())),
        ]
    })?;
    Ok(DesiredObject {
        object,
        owner_marker: ResourceId::new(&o.namespace(), &o.name()),
        body,
        comment: o.resource.comment().map(str::to_string),
        tags: o.resource.tags().clone(),
        properties: Default::default(),
        grants: lower_grants(o.resource.grants()),
        owner: o.resource.owner().map(str::to_string),
        reads: Reads::default(),
        outputs: Default::default(),
        refusals: Vec::new(),
    })
}

fn at<T: ObjectResource>(o: &Loaded<T>, path: &str, message: String, fix: &str) -> Vec<SpecError> {
    vec![SpecError::new(path, message, fix).in_file(&o.file, Some(&o.label()))]
}

fn schema_of(d: &DesiredObject) -> SchemaRef {
    d.object.schema_ref()
}

pub fn lower_view(m: &Manifests, v: &Loaded<DeltaView>) -> Result<DesiredObject, Vec<SpecError>> {
    let spec = &v.resource.spec;
    let parsed =
        parse_query(&spec.query).map_err(|e| at(v, "spec.query", e, super::validate::QUERY_FIX))?;
    let mut d = base(
        m,
        v,
        ObjectBody::View {
            query: spec.query.clone(),
            normalized: parsed.normalized.clone(),
            column_comments: spec.column_comments.clone(),
        },
    )?;
    d.properties = spec.properties.clone();
    d.outputs = parsed.outputs();
    d.reads = parsed
        .reads(&schema_of(&d))
        .map_err(|e| at(v, "spec.query", e, super::validate::QUERY_FIX))?;
    Ok(d)
}

pub fn lower_function(
    m: &Manifests,
    f: &Loaded<DeltaFunction>,
) -> Result<DesiredObject, Vec<SpecError>> {
    let spec = &f.resource.spec;
    let mut errors = Vec::new();
    let mut parameters = Vec::new();
    for (i, p) in spec.parameters.iter().enumerate() {
        match parse_type(&p.data_type) {
            Ok(t) => parameters.push(FunctionParam {
                name: p.name.clone(),
                data_type: t.to_string(),
                comment: p.comment.clone(),
            }),
            Err(e) => errors.push(
                super::validate::type_error(&format!("spec.parameters[{i}].type"), &e)
                    .in_file(&f.file, Some(&f.label())),
            ),
        }
    }
    let returns = match parse_type(&spec.returns) {
        Ok(t) => t.to_string(),
        Err(e) => {
            errors.push(
                super::validate::type_error("spec.returns", &e).in_file(&f.file, Some(&f.label())),
            );
            String::new()
        }
    };
    let parsed = parse_body(&spec.body, &parameter_names(&spec.parameters));
    let parsed = match parsed {
        Ok(p) => Some(p),
        Err(e) => {
            errors.extend(at(f, "spec.body", e, super::validate::BODY_FIX));
            None
        }
    };
    let (Some(parsed), true) = (parsed, errors.is_empty()) else {
        return Err(errors);
    };
    let mut d = base(
        m,
        f,
        ObjectBody::Function {
            parameters,
            returns,
            body: spec.body.clone(),
            normalized: parsed.normalized.clone(),
            deterministic: spec.deterministic,
        },
    )?;
    d.reads = parsed
        .reads(&schema_of(&d))
        .map_err(|e| at(f, "spec.body", e, super::validate::BODY_FIX))?;
    Ok(d)
}

pub fn lower_volume(
    m: &Manifests,
    v: &Loaded<DeltaVolume>,
) -> Result<DesiredObject, Vec<SpecError>> {
    base(m, v, ObjectBody::Volume)
}

/// Every view, function and volume of `m`, lowered; every error at once.
pub fn lower_objects(m: &Manifests) -> Result<Vec<DesiredObject>, Vec<SpecError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let results = m
        .views
        .iter()
        .map(|v| lower_view(m, v))
        .chain(m.functions.iter().map(|f| lower_function(m, f)))
        .chain(m.volumes.iter().map(|v| lower_volume(m, v)));
    for r in results {
        match r {
            Ok(d) => out.push(d),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}
