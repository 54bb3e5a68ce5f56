//! Which manifests a DeltaTable's validation depends on: asked by the admission
//! webhook before a table is stored and by the controller before it is
//! reconciled, so both validate a table against the same neighbours.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use delta_operator_api::spec::load::{Loaded, Manifests};
use delta_operator_api::spec::lower::{qualified_reference, schema_ref_of, table_ref_of};
use delta_operator_api::spec::names::comparison_key;
use delta_operator_api::spec::{DeltaSchema, DeltaTable};
use delta_operator_core::model::TableRef;
use kube::ResourceExt;

/// What the file of a cached object is called in its errors (it came from no file).
pub const CACHED: &str = "cluster";

/// Who answers for two resources declaring one table (or two tables whose names
/// look the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claims {
    /// Validation: the newcomer is refused, naming the resource that declares it already.
    Validate,
    /// The owner marker the first apply writes: whichever resource reaches the table
    /// first owns it, whatever order a cache lists them in, so validation leaves them out.
    OwnerMarker,
}

/// The manifests `table`'s validation and lowering depend on: the namespace's
/// schemas, its foreign-key ancestors (their columns, a cycle through them) and,
/// with `Claims::Validate`, the tables declaring the same table or one whose
/// name looks the same. `table` comes last (a table another resource already
/// declares is its error). No other table can change this table's errors, and
/// validating every table of the namespace made one admission (or reconcile)
/// cost O(tables there): applying thousands of tables, O(N²).
///
/// `schemas` and `tables` are the namespace's cached objects; a cached version
/// of `table` itself is left out. Only the tables kept are cloned.
pub fn table_inputs(
    schemas: &[Arc<DeltaSchema>],
    tables: &[Arc<DeltaTable>],
    table: Loaded<DeltaTable>,
    claims: Claims,
) -> Manifests {
    let mut m = Manifests {
        schemas: schemas.iter().map(|s| cached(s.as_ref().clone())).collect(),
        tables: Vec::new(),
    };
    let name = table.name();
    let others: Vec<&DeltaTable> = tables
        .iter()
        .map(AsRef::as_ref)
        .filter(|t| t.name_any() != name)
        .collect();
    m.tables = related(&m, &table, &others, claims)
        .into_iter()
        .map(|i| cached(others[i].clone()))
        .collect();
    m.tables.push(table);
    m
}

/// The namespace's schemas, as a DeltaSchema's validation sees them: all of them.
pub fn schema_inputs(schemas: &[Arc<DeltaSchema>]) -> Manifests {
    Manifests {
        schemas: schemas.iter().map(|s| cached(s.as_ref().clone())).collect(),
        tables: Vec::new(),
    }
}

/// A cached object as the loader would have made it.
pub fn cached<T>(resource: T) -> Loaded<T> {
    Loaded {
        file: CACHED.into(),
        resource,
    }
}

/// The table a cached DeltaTable declares, when its schema is among `m`'s (all of
/// one namespace): the same answer as `table_ref_of`, without wrapping a clone.
fn declared(m: &Manifests, t: &DeltaTable) -> Option<TableRef> {
    let schema = m.schemas.iter().find(|s| s.name() == t.spec.schema_ref)?;
    let s = schema_ref_of(schema);
    let name = t.spec.name.clone().unwrap_or_else(|| t.name_any());
    Some(TableRef::new(&s.catalog, &s.schema, &name))
}

/// The indexes into `others` of the tables `t`'s errors can depend on, in their order.
fn related(
    m: &Manifests,
    t: &Loaded<DeltaTable>,
    others: &[&DeltaTable],
    claims: Claims,
) -> BTreeSet<usize> {
    let mut keep = BTreeSet::new();
    let Some(own) = table_ref_of(m, t) else {
        return keep; // its schema is missing: it names no table, so nothing relates
    };
    let mut by_ref: BTreeMap<TableRef, Vec<usize>> = BTreeMap::new();
    // tables of its schema whose names are one to a reader (`spec::names`): validate refuses the pair
    let key = comparison_key(&own.table);
    for (i, c) in others.iter().enumerate() {
        if let Some(r) = declared(m, c) {
            if claims == Claims::Validate
                && r.catalog == own.catalog
                && r.schema == own.schema
                && r.table != own.table
                && comparison_key(&r.table) == key
            {
                keep.insert(i);
            }
            by_ref.entry(r).or_default().push(i);
        }
    }
    let mut visited = BTreeSet::new();
    let mut queue = vec![(own.clone(), &t.resource)];
    while let Some((from, table)) = queue.pop() {
        if !visited.insert(from.clone()) {
            continue;
        }
        let declaring = by_ref.get(&from).into_iter().flatten().copied();
        if from != own || claims == Claims::Validate {
            keep.extend(declaring);
        }
        for c in &table.spec.constraints {
            let Some(to) = c
                .foreign_key
                .as_ref()
                .and_then(|fk| qualified_reference(&from, &fk.references))
            else {
                continue;
            };
            // validate follows the last declaration of a table; the others are kept as duplicates
            if let Some(&last) = by_ref.get(&to).and_then(|v| v.last()) {
                queue.push((to, others[last]));
            }
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Arc<DeltaSchema> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaSchema",
                "metadata": {"name": "sales", "namespace": "shop"}, "spec": {"catalog": "main"}
            }))
            .unwrap(),
        )
    }

    /// A DeltaTable `name` declaring `table`, with a foreign key to each of `refs`.
    fn table(name: &str, table: &str, refs: &[&str]) -> Arc<DeltaTable> {
        let fks: Vec<_> = refs
            .iter()
            .map(|r| {
                serde_json::json!({"foreignKey": {"columns": ["id"], "references": r,
                "referencedColumns": ["id"]}})
            })
            .collect();
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
                "metadata": {"name": name, "namespace": "shop"},
                "spec": {"schemaRef": "sales", "name": table,
                    "columns": [{"name": "id", "type": "bigint"}], "constraints": fks}
            }))
            .unwrap(),
        )
    }

    fn names(m: &Manifests) -> Vec<String> {
        m.tables.iter().map(|t| t.name()).collect()
    }

    // The webhook and the reconcile ask the same question; they differ only in who
    // answers for a second declaration of one table.
    #[test]
    fn ancestors_for_both_duplicates_only_for_admission_and_the_table_last() {
        let cached = vec![
            table("orders-copy", "orders", &[]),
            table("unrelated", "unrelated", &[]),
            table("grandparent", "grandparent", &[]),
            table("parent", "parent", &["grandparent"]),
            table("orders", "orders", &["parent"]),
        ];
        let me = cached[4].as_ref().clone();
        let schemas = [schema()];
        let admission = table_inputs(
            &schemas,
            &cached,
            super::cached(me.clone()),
            Claims::Validate,
        );
        assert_eq!(
            names(&admission),
            ["orders-copy", "grandparent", "parent", "orders"]
        );
        let reconcile = table_inputs(&schemas, &cached, super::cached(me), Claims::OwnerMarker);
        assert_eq!(names(&reconcile), ["grandparent", "parent", "orders"]);
        assert_eq!(reconcile.schemas.len(), 1);
    }
}
