//! Functions the lake's engine lacks (issue 26): on a lake target, a CHECK or a
//! `using:` that calls a function DataFusion does not have (or, for a CHECK, has
//! only under another name) would pass `plan` and fail the apply, so `validate`,
//! `plan` and admission refuse it by name first. The lists are the expression
//! crate's (`LAKE_MISSING_FUNCTIONS`, `LAKE_ALIASES`).

use crate::spec::error::SpecError;
use crate::spec::load::Manifests;
use crate::spec::lower::schema_of;
use delta_operator_expression::{LakeUse, lake_function_problem, parse_check, parse_using};

/// What the lake cannot run, decided from the manifests and the backend each
/// table's schema targets: the CHECKs (`spec.constraints[i].check.expression`)
/// and `using:` expressions (`spec.columns[i].using`) of tables on a lake target
/// that call a function the lake's engine lacks. `is_lake` says, for a
/// DeltaSchema's `spec.target` (None: the default target), whether its backend is
/// the lake. An expression that does not parse is refused by `validate` already.
pub fn functions_the_lake_lacks(
    m: &Manifests,
    is_lake: impl Fn(Option<&str>) -> bool,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    for t in &m.tables {
        let spec = &t.resource.spec;
        let Some(s) = schema_of(m, t) else { continue };
        if !is_lake(s.resource.spec.target.as_deref()) {
            continue;
        }
        let mut e = Vec::new();
        for (i, c) in spec.constraints.iter().enumerate() {
            let Some(check) = &c.check else { continue };
            let Ok(parsed) = parse_check(&check.expression) else {
                continue;
            };
            if let Some(p) = lake_function_problem(&parsed, LakeUse::Check) {
                e.push(SpecError::new(
                    format!("spec.constraints[{i}].check.expression"),
                    p.message(),
                    p.fix(),
                ));
            }
        }
        for (i, c) in spec.columns.iter().enumerate() {
            let Some(Ok(parsed)) = c.using.as_deref().map(parse_using) else {
                continue;
            };
            if let Some(p) = lake_function_problem(&parsed, LakeUse::Using) {
                e.push(SpecError::new(
                    format!("spec.columns[{i}].using"),
                    p.message(),
                    p.fix(),
                ));
            }
        }
        errors.extend(e.into_iter().map(|x| x.in_file(&t.file, Some(&t.label()))));
    }
    errors
}
