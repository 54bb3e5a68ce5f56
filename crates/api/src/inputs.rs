//! What the manifests declare, lowered: the input of every plan.

use std::sync::Arc;

use delta_operator_core::model::SpecRefusal;
pub use delta_operator_core::plan::Inputs;
use delta_operator_core::plan::SchemaScope;

use crate::spec::lower::{lower_schema, lower_table};
use crate::spec::lower_objects::lower_objects;
use crate::spec::validate::{foreign_key_verdicts, validate_each};
use crate::spec::{Manifests, SpecError};

/// Validates and lowers a manifest set; every error at once. A foreign-key
/// verdict across the set (`foreign_key_verdicts`) is no error of the set: it
/// is carried on its table (`DesiredTable::refusals`), which the plan refuses
/// alone, blocking its dependents, while every other table is planned.
pub fn lower(m: &Manifests) -> Result<Inputs, Vec<SpecError>> {
    let mut errors = validate_each(m);
    let verdicts = foreign_key_verdicts(m);
    let mut tables = Vec::new();
    if errors.is_empty() {
        for t in &m.tables {
            match lower_table(m, t) {
                Ok(mut d) => {
                    d.refusals = verdicts
                        .iter()
                        .filter(|(r, _)| *r == d.table)
                        .map(|(_, e)| SpecRefusal {
                            path: e.path.clone(),
                            message: e.message.clone(),
                            fix: e.fix.clone(),
                        })
                        .collect();
                    tables.push(Arc::new(d))
                }
                Err(e) => errors.extend(e),
            }
        }
    }
    let mut objects = Vec::new();
    if errors.is_empty() {
        match lower_objects(m) {
            Ok(o) => objects = o.into_iter().map(Arc::new).collect(),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let lowered: Vec<_> = m.schemas.iter().map(lower_schema).collect();
    let mode_declared = lowered.iter().map(|s| s.mode.is_some()).collect();
    let schemas = lowered
        .into_iter()
        .map(|s| SchemaScope {
            schema: s.schema,
            mode: s.mode.unwrap_or_default(),
            meta: s.meta,
        })
        .collect();
    Ok(Inputs {
        tables,
        schemas,
        objects,
        mode_declared,
        now_ms: None,
    })
}
