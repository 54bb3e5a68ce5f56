//! Lowering: manifests → the domain's desired tables (the first phase of every
//! reconcile). Assumes `validate` passed; what cannot be lowered is an error.

use super::crd::{
    ColumnSpec, Constraint, DeltaSchema, DeltaTable, GrantSpec, IdentityGeneration, SchemaModeSpec,
};
use super::error::SpecError;
use super::load::{Loaded, Manifests};
use super::validate::column_type;
use delta_operator_core::model::names::printable;
use delta_operator_core::model::{
    Check, DataType, DesiredColumn, DesiredTable, ForeignKey, Grant, Identity, Mask, PrimaryKey,
    Privilege, ResourceId, SchemaMeta, SchemaMode, SchemaRef, TableRef, Unstated,
};

/// A schema as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredSchema {
    pub schema: SchemaRef,
    pub target: Option<String>,
    /// `None`: the spec names no mode, the target's default applies.
    pub mode: Option<SchemaMode>,
    /// The DeltaSchema.
    pub resource: ResourceId,
    /// The schema's own comment, properties, owner and grants.
    pub meta: SchemaMeta,
}

/// The DeltaSchema a table's `schemaRef` names (same namespace).
pub fn schema_of<'a>(m: &'a Manifests, t: &Loaded<DeltaTable>) -> Option<&'a Loaded<DeltaSchema>> {
    m.schemas
        .iter()
        .find(|s| s.name() == t.resource.spec.schema_ref && s.namespace() == t.namespace())
}

pub fn schema_ref_of(s: &Loaded<DeltaSchema>) -> SchemaRef {
    let name = s.resource.spec.name.clone().unwrap_or_else(|| s.name());
    SchemaRef {
        catalog: s.resource.spec.catalog.to_lowercase(),
        schema: name.to_lowercase(),
    }
}

/// The fully qualified table a DeltaTable declares, when its schema resolves.
pub fn table_ref_of(m: &Manifests, t: &Loaded<DeltaTable>) -> Option<TableRef> {
    let s = schema_ref_of(schema_of(m, t)?);
    let name = t.resource.spec.name.clone().unwrap_or_else(|| t.name());
    Some(TableRef::new(&s.catalog, &s.schema, &name))
}

/// `table`, `schema.table` or `catalog.schema.table`, relative to `from`.
pub fn qualified_reference(from: &TableRef, reference: &str) -> Option<TableRef> {
    let parts: Vec<&str> = reference.split('.').map(|p| p.trim_matches('`')).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    match parts.as_slice() {
        [t] => Some(TableRef::new(&from.catalog, &from.schema, t)),
        [s, t] => Some(TableRef::new(&from.catalog, s, t)),
        [c, s, t] => Some(TableRef::new(c, s, t)),
        _ => None,
    }
}

pub fn lower_schema(s: &Loaded<DeltaSchema>) -> DesiredSchema {
    let spec = &s.resource.spec;
    DesiredSchema {
        schema: schema_ref_of(s),
        target: spec.target.clone(),
        mode: spec.mode.map(|m| match m {
            SchemaModeSpec::Additive => SchemaMode::Additive,
            SchemaModeSpec::Strict => SchemaMode::Strict,
        }),
        resource: ResourceId::new(&s.namespace(), &s.name()),
        meta: SchemaMeta {
            comment: spec.comment.clone(),
            properties: spec.properties.clone(),
            owner: spec.owner.clone(),
            grants: lower_grants(&spec.grants),
            managed_location: spec.managed_location.clone(),
        },
    }
}

/// Grants in the model's one spelling of a privilege.
pub(crate) fn lower_grants(grants: &[GrantSpec]) -> Vec<Grant> {
    grants
        .iter()
        .map(|g| Grant {
            principal: g.principal.clone(),
            privileges: g.privileges.iter().map(|p| Privilege::new(p)).collect(),
        })
        .collect()
}

/// A mask's function named in three parts, resolved against the table's
/// catalog and schema, as the plan's order resolves it (`graph::resolve_function`):
/// Databricks would resolve a shorter name against the session's current
/// schema, which is not the table's, and reads the mask back in three parts.
/// A name whose parts hold a `.` or a backtick is left as written.
fn qualify_mask(column: &mut DesiredColumn, table: &TableRef) {
    let Some(m) = column.mask.as_mut() else {
        return;
    };
    if let Some(f) = delta_operator_core::plan::graph::resolve_function(&m.function, table)
        && [&f.catalog, &f.schema, &f.table]
            .iter()
            .all(|p| !p.contains(['.', '`']))
    {
        m.function = format!("{}.{}.{}", f.catalog, f.schema, f.table);
    }
}

/// Lowers one table. Errors carry the file and resource.
pub fn lower_table(m: &Manifests, t: &Loaded<DeltaTable>) -> Result<DesiredTable, Vec<SpecError>> {
    let spec = &t.resource.spec;
    let mut errors = Vec::new();
    if schema_of(m, t).is_none() {
        let e = SpecError::new(
            "spec.schemaRef",
            format!(
                "no DeltaSchema '{}' in namespace '{}'",
                spec.schema_ref,
                t.namespace()
            ),
            "add the DeltaSchema",
        );
        return Err(vec![e.in_file(&t.file, Some(&t.label()))]);
    }
    let table = table_ref_of(m, t).expect("schema resolved above");
    let mut columns = Vec::new();
    for (i, c) in spec.columns.iter().enumerate() {
        // below Full, an unstated type is the live column's (the diff takes it
        // from there; VOID only holds the place, nothing creates the column)
        let data_type = match &c.data_type {
            None if !spec.scope.is_full() => DataType::Void,
            _ => match column_type(c, &format!("spec.columns[{i}]"), &mut errors) {
                Some(t) => t,
                None => continue,
            },
        };
        let mut column = lower_column(c, data_type);
        qualify_mask(&mut column, &table);
        column.unstated = Unstated {
            data_type: c.data_type.is_none(),
            nullable: c.nullable.is_none() && !spec.scope.is_full(),
        };
        columns.push(column);
    }
    let mut checks = Vec::new();
    let mut primary_key = None;
    let mut foreign_keys = Vec::new();
    for (i, c) in spec.constraints.iter().enumerate() {
        match c.kind() {
            // what is stored, compared and planned is the printed parse tree,
            // never the text as written
            Ok(Constraint::Check(ch)) => match super::expression::parse_check(&ch.expression) {
                Ok(p) => checks.push(Check {
                    name: ch.name.to_lowercase(),
                    expression: p.sql,
                }),
                Err(why) => errors.push(SpecError::new(
                    format!("spec.constraints[{i}].check.expression"),
                    format!("'{}' {why}", printable(&ch.expression)),
                    super::validate::CHECK_FIX,
                )),
            },
            Ok(Constraint::PrimaryKey(pk)) => {
                primary_key = Some(PrimaryKey {
                    name: pk.name.clone(),
                    columns: pk.columns.clone(),
                })
            }
            Ok(Constraint::ForeignKey(fk)) => {
                if let Some(references) = qualified_reference(&table, &fk.references) {
                    foreign_keys.push(ForeignKey {
                        name: fk.name.clone(),
                        columns: fk.columns.clone(),
                        references,
                        referenced_columns: fk.referenced_columns.clone(),
                    });
                }
            }
            // validation names the item
            Err(_) => {}
        }
    }
    if !errors.is_empty() {
        return Err(errors
            .into_iter()
            .map(|e| e.in_file(&t.file, Some(&t.label())))
            .collect());
    }
    Ok(DesiredTable {
        table,
        owner_marker: ResourceId::new(&t.namespace(), &t.name()),
        columns,
        partitioned_by: spec.partitioned_by.clone(),
        cluster_by: spec.cluster_by.clone(),
        properties: spec.properties.clone(),
        comment: spec.comment.clone(),
        tags: spec.tags.clone(),
        grants: lower_grants(&spec.grants),
        owner: spec.owner.clone(),
        checks,
        primary_key,
        foreign_keys,
        clone_before_rewrite: spec.safety.as_ref().is_some_and(|s| s.clone_before_rewrite),
        scope: spec.scope.lower(),
        hand_off: {
            let mut h = spec
                .hand_off
                .as_ref()
                .map(|h| h.lower())
                .unwrap_or_default();
            if let Some(s) = schema_of(m, t).and_then(|s| s.resource.spec.hand_off.as_ref()) {
                h.merge(&s.lower());
            }
            h
        },
        // the target's block, lowest, is merged in once the target is known
        // (`maintenance_with_target`)
        maintenance: maintenance_with_target(m, t, None),
        // the manifest set's foreign-key verdicts are set by `inputs::lower`
        refusals: vec![],
    })
}

/// The table's `maintenance`: its own block over its schema's over its
/// target's (`target`), field by field; None when none declares one.
pub fn maintenance_with_target(
    m: &Manifests,
    t: &Loaded<DeltaTable>,
    target: Option<&super::crd::MaintenanceSpec>,
) -> Option<delta_operator_core::model::Maintenance> {
    super::maintenance::merged(
        t.resource.spec.maintenance.as_ref(),
        schema_of(m, t).and_then(|s| s.resource.spec.maintenance.as_ref()),
        target,
    )
}

/// One column as declared, with its parsed type; its `using:` as printed from
/// its parse tree.
fn lower_column(c: &ColumnSpec, data_type: DataType) -> DesiredColumn {
    // validate() refused an expression that does not parse
    let using = c
        .using
        .as_deref()
        .and_then(|u| super::expression::parse_using(u).ok());
    DesiredColumn {
        name: c.name.clone(),
        data_type,
        nullable: c.is_nullable(),
        comment: c.comment.clone(),
        tags: c.tags.clone(),
        mask: c.mask.as_ref().map(|m| Mask {
            function: m.function.clone(),
            using_columns: m.using_columns.clone(),
        }),
        identity: c.identity.as_ref().map(|i| Identity {
            always: i.generated == IdentityGeneration::Always,
            start: i.start,
            increment: i.increment,
        }),
        generated: c.generated.clone(),
        default: c.default.clone().flatten(),
        drops_default: matches!(c.default, Some(None)),
        renamed_from: c.renamed_from.clone(),
        using: using.as_ref().map(|u| u.sql.clone()),
        using_columns: using.map(|u| u.columns).unwrap_or_default(),
        unstated: Unstated::default(),
    }
}
