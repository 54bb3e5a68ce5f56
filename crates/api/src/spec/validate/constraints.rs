//! A table's own constraints: CHECKs, its primary key, the shape of its foreign keys.

use std::collections::BTreeSet;

use super::MAX_CHECKS;
use super::columns::ColumnRefs;
use crate::spec::crd::{CheckSpec, Constraint, DeltaTableSpec, ForeignKeySpec, PrimaryKeySpec};
use crate::spec::error::SpecError;
use delta_operator_core::model::DataType;
use delta_operator_core::model::names::printable;
use delta_operator_core::model::type_syntax::type_from_value;

/// Each constraint item is exactly one of check, primaryKey, foreignKey, and
/// there is at most one primary key.
pub(super) fn check_constraints(spec: &DeltaTableSpec, refs: &ColumnRefs, e: &mut Vec<SpecError>) {
    let mut pks = 0;
    let mut check_names = BTreeSet::new();
    for (i, c) in spec.constraints.iter().enumerate() {
        let path = format!("spec.constraints[{i}]");
        match c.kind() {
            Err(set) => e.push(SpecError::new(
                &path,
                format!("has {set} of check, primaryKey, foreignKey"),
                "give each constraint item exactly one of them",
            )),
            Ok(Constraint::Check(ch)) => check_check(spec, ch, &path, &mut check_names, refs, e),
            Ok(Constraint::PrimaryKey(pk)) => {
                pks += 1;
                check_primary_key(spec, pk, &path, refs, e);
            }
            Ok(Constraint::ForeignKey(fk)) => check_foreign_key(fk, &path, refs, e),
        }
    }
    if pks > 1 {
        e.push(SpecError::new(
            "spec.constraints",
            format!("{pks} primary keys"),
            "declare at most one primaryKey",
        ));
    }
    if check_names.len() > MAX_CHECKS {
        e.push(SpecError::new(
            "spec.constraints",
            format!(
                "{} CHECK constraints; the limit is {MAX_CHECKS} per table (each is evaluated on every row written, and Delta keeps them all in every metadata commit)",
                check_names.len()
            ),
            "combine related conditions into one CHECK (a AND b), or move some checks into the jobs that write the table",
        ));
    }
}

/// A CHECK: a name not used by another, and exactly one condition over the
/// declared columns, parsed by the rules of `using:` (`expression::parse_check`;
/// lowering stores and plans its printed form).
pub(super) fn check_check(
    spec: &DeltaTableSpec,
    ch: &CheckSpec,
    path: &str,
    check_names: &mut BTreeSet<String>,
    refs: &ColumnRefs,
    e: &mut Vec<SpecError>,
) {
    if !check_names.insert(ch.name.to_lowercase()) {
        e.push(SpecError::new(
            format!("{path}.check.name"),
            format!("duplicate CHECK name '{}'", ch.name),
            "rename one",
        ));
    }
    let at = format!("{path}.check.expression");
    let parsed = match crate::spec::expression::parse_check(&ch.expression) {
        Ok(p) => p,
        Err(why) => {
            e.push(SpecError::new(
                at,
                format!("'{}' {why}", printable(&ch.expression)),
                CHECK_FIX,
            ));
            return;
        }
    };
    for col in &parsed.columns {
        if !refs.known(col) {
            e.push(refs.missing(at.clone(), col));
        }
    }
    if let Some(col) = &parsed.bare_column
        && let Some(&i) = refs.names.get(&col.to_lowercase())
        && let Some(Ok(ty)) = spec.columns[i].data_type.as_ref().map(type_from_value)
        && ty != DataType::Boolean
    {
        e.push(SpecError::new(
            at,
            format!("is the {ty} column '{col}', not a condition; a CHECK must be true or false for each row"),
            format!("compare it, e.g. {col} IS NOT NULL"),
        ));
    }
}

/// How to write a CHECK.
pub(crate) const CHECK_FIX: &str = "write exactly one condition over the table's declared columns with built-in deterministic functions, e.g. amount >= 0 AND status IN ('new', 'paid')";

/// A primary key: declared, non-nullable columns, at least one.
pub(super) fn check_primary_key(
    spec: &DeltaTableSpec,
    pk: &PrimaryKeySpec,
    path: &str,
    refs: &ColumnRefs,
    e: &mut Vec<SpecError>,
) {
    for (j, col) in pk.columns.iter().enumerate() {
        if !refs.known(col) {
            e.push(refs.missing(format!("{path}.primaryKey.columns[{j}]"), col));
        } else if spec
            .columns
            .iter()
            .any(|x| x.name.eq_ignore_ascii_case(col) && x.is_nullable())
        {
            let k = refs.names[&col.to_lowercase()];
            e.push(SpecError::new(
                format!("spec.columns[{k}].nullable"),
                format!("'{col}' is in the primary key, so it cannot be nullable"),
                "set nullable: false",
            ));
        }
    }
    if pk.columns.is_empty() {
        e.push(SpecError::new(
            format!("{path}.primaryKey.columns"),
            "is empty",
            "name the key's columns",
        ));
    }
}

/// A foreign key: declared columns, paired one to one with the referenced ones.
pub(super) fn check_foreign_key(
    fk: &ForeignKeySpec,
    path: &str,
    refs: &ColumnRefs,
    e: &mut Vec<SpecError>,
) {
    for (j, col) in fk.columns.iter().enumerate() {
        if !refs.known(col) {
            e.push(refs.missing(format!("{path}.foreignKey.columns[{j}]"), col));
        }
    }
    if fk.columns.len() != fk.referenced_columns.len() || fk.columns.is_empty() {
        e.push(SpecError::new(
            format!("{path}.foreignKey"),
            "columns and referencedColumns must be non-empty and the same length",
            "pair each column with the column it references",
        ));
    }
}
