//! Which cached objects a resource's validation and reconcile depend on: asked
//! by the admission webhook before a resource is stored and by the controller
//! before it is reconciled, through one function (`dependencies`), so both
//! validate against the same neighbours. It sees the cache only through
//! `Lookup` (objects by name, tables by the name they declare), never as a
//! list of the namespace: what it costs depends on how many objects a resource
//! depends on, not on how many are cached.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use delta_operator_api::spec::load::{Loaded, Manifests};
use delta_operator_api::spec::lower::qualified_reference;
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

/// The cached objects of one namespace, as the dependency lookup asks for them.
/// Each answer is shared with the cache (`Arc`), nothing is copied.
pub trait Lookup {
    /// The DeltaSchema named `name`.
    fn schema(&self, name: &str) -> Option<Arc<DeltaSchema>>;
    /// Every DeltaSchema (a namespace has one per catalog schema: few).
    fn schemas(&self) -> Vec<Arc<DeltaSchema>>;
    /// Every DeltaSchema of the other namespaces the cache holds (none when it
    /// watches one namespace): a catalog schema is one across namespaces, so
    /// a lookalike of it is refused whichever namespace declares it.
    fn schemas_elsewhere(&self) -> Vec<Arc<DeltaSchema>>;
    /// The DeltaTables whose declared table name (`spec.name`, else the resource
    /// name) has the comparison key `key` (`name_key`). More is harmless: every
    /// answer is checked again.
    fn tables_named(&self, key: &str) -> Vec<Arc<DeltaTable>>;
    /// The DeltaTables with a foreign key to a table name whose comparison key
    /// is `key` (`reference_keys`). More is harmless, as above.
    fn referrers(&self, key: &str) -> Vec<Arc<DeltaTable>>;
}

/// What a table is found by in `Lookup::tables_named`: the comparison key
/// (`spec::names`) of the table name it declares. Duplicates, lookalikes and
/// foreign-key parents all share it with the table that depends on them.
pub fn name_key(t: &DeltaTable) -> String {
    match &t.spec.name {
        Some(n) => comparison_key(n),
        None => comparison_key(&t.name_any()),
    }
}

/// The comparison keys of the table names `t` references by foreign key
/// (`Lookup::referrers`).
pub fn reference_keys(t: &DeltaTable) -> BTreeSet<String> {
    let anywhere = TableRef::new("", "", "");
    t.spec
        .constraints
        .iter()
        .filter_map(|c| c.foreign_key.as_ref())
        .filter_map(|fk| qualified_reference(&anywhere, &fk.references))
        .map(|r| comparison_key(&r.table))
        .collect()
}

/// A resource whose dependencies are asked for.
#[derive(Debug, Clone, Copy)]
pub enum Dependent<'a> {
    Table(&'a DeltaTable),
    Schema(&'a DeltaSchema),
}

/// What a resource's validation and reconcile depend on, shared with the cache.
#[derive(Debug, Default, Clone)]
pub struct Dependencies {
    /// The schemas its validation reads: a table's own and those of `tables`;
    /// every schema of the namespace when its own is missing (the reconcile's
    /// message lists them) and for a DeltaSchema, with, for a DeltaSchema, those
    /// of other namespaces whose catalog or schema name is its own to a reader
    /// (`elsewhere_alike`).
    pub schemas: Vec<Arc<DeltaSchema>>,
    /// The tables its validation reads, by resource name: with `Claims::Validate`
    /// those declaring the same table or one whose name looks the same in its
    /// schema, and its foreign-key ancestors (their columns, a cycle through them).
    pub tables: Vec<Arc<DeltaTable>>,
    /// The tables declaring a name it references by foreign key, in any schema
    /// of the namespace: the reconcile waits until they are usable (`parents`).
    pub parents: Vec<Arc<DeltaTable>>,
}

/// Which cached objects `resource`'s validation and reconcile depend on. No
/// other object can change its errors. A cached version of `resource` itself is
/// left out. Validating with every table of the namespace made one admission
/// (or reconcile) cost O(tables there): applying thousands of tables, O(N²).
pub fn dependencies(resource: Dependent, lookup: &dyn Lookup, claims: Claims) -> Dependencies {
    match resource {
        Dependent::Schema(s) => {
            let name = s.name_any();
            let mut schemas: Vec<_> = lookup
                .schemas()
                .into_iter()
                .filter(|c| c.name_any() != name)
                .collect();
            schemas.extend(
                lookup
                    .schemas_elsewhere()
                    .into_iter()
                    .filter(|c| elsewhere_alike(s, c)),
            );
            Dependencies {
                schemas,
                ..Default::default()
            }
        }
        Dependent::Table(t) => table_dependencies(t, lookup, claims),
    }
}

/// Whether `other` (a DeltaSchema of another namespace) can clash with `s` by
/// name (`validate`'s lookalike schemas): its catalog is `s`'s to a reader and
/// either is another string (lookalike catalogs) or holds a schema whose name
/// is `s`'s to a reader. Only those are read: what else another namespace
/// declares is its own.
fn elsewhere_alike(s: &DeltaSchema, other: &DeltaSchema) -> bool {
    let name = |x: &DeltaSchema| x.spec.name.clone().unwrap_or_else(|| x.name_any());
    comparison_key(&s.spec.catalog) == comparison_key(&other.spec.catalog)
        && (s.spec.catalog != other.spec.catalog
            || comparison_key(&name(s)) == comparison_key(&name(other)))
}

/// The table a DeltaSchema and a table name in it make.
fn in_schema(s: &DeltaSchema, table: &str) -> TableRef {
    let schema = s.spec.name.clone().unwrap_or_else(|| s.name_any());
    TableRef::new(&s.spec.catalog, &schema, table)
}

/// The table a DeltaTable declares, with its schema, when that schema is cached.
fn declared(lookup: &dyn Lookup, t: &DeltaTable) -> Option<(TableRef, Arc<DeltaSchema>)> {
    let s = lookup.schema(&t.spec.schema_ref)?;
    let name = t.spec.name.clone().unwrap_or_else(|| t.name_any());
    Some((in_schema(&s, &name), s))
}

fn table_dependencies(t: &DeltaTable, lookup: &dyn Lookup, claims: Claims) -> Dependencies {
    let me = t.name_any();
    let others = |key: &str| -> Vec<Arc<DeltaTable>> {
        let mut v: Vec<_> = lookup
            .tables_named(key)
            .into_iter()
            .filter(|c| c.name_any() != me && name_key(c) == key)
            .collect();
        // the cache's order is a hash map's: by name, so a verdict does not move between asks
        v.sort_by_key(|c| c.name_any());
        v
    };
    let parents = parent_candidates(t, &others);
    let Some((own, schema)) = declared(lookup, t) else {
        // its schema is missing: it names no table, so no table relates
        return Dependencies {
            schemas: lookup.schemas(),
            tables: Vec::new(),
            parents,
        };
    };
    let mut keep: BTreeMap<String, Arc<DeltaTable>> = BTreeMap::new();
    let mut schemas: BTreeMap<String, Arc<DeltaSchema>> = BTreeMap::new();
    schemas.insert(schema.name_any(), schema);
    let mut take = |c: &Arc<DeltaTable>, s: &Arc<DeltaSchema>| {
        keep.entry(c.name_any()).or_insert_with(|| c.clone());
        schemas.entry(s.name_any()).or_insert_with(|| s.clone());
    };
    // with Validate, the tables of its schema declaring the same table (the newcomer's error)
    // or one whose name is the same to a reader (`spec::names`: validate refuses the pair);
    // with OwnerMarker, the owner marker answers for both
    if claims == Claims::Validate {
        for c in others(&comparison_key(&own.table)) {
            if let Some((r, s)) = declared(lookup, &c)
                && r.catalog == own.catalog
                && r.schema == own.schema
            {
                take(&c, &s);
            }
        }
    }
    // the tables declaring each table reached by foreign key from it, and their own parents
    let mut visited = BTreeSet::from([own.clone()]);
    let mut pending = references(&own, t);
    while let Some(to) = pending.pop() {
        if !visited.insert(to.clone()) {
            continue;
        }
        let declaring: Vec<_> = others(&comparison_key(&to.table))
            .into_iter()
            .filter_map(|c| {
                let (r, s) = declared(lookup, &c)?;
                (r == to).then_some((c, s))
            })
            .collect();
        for (c, s) in &declaring {
            take(c, s);
        }
        // validate follows the last declaration of a table; the others are kept as duplicates
        if let Some((last, _)) = declaring.last() {
            pending.extend(references(&to, last));
        }
    }
    Dependencies {
        schemas: schemas.into_values().collect(),
        tables: keep.into_values().collect(),
        parents,
    }
}

/// The tables `table` (declaring `from`) references by foreign key.
fn references(from: &TableRef, table: &DeltaTable) -> Vec<TableRef> {
    table
        .spec
        .constraints
        .iter()
        .filter_map(|c| c.foreign_key.as_ref())
        .filter_map(|fk| qualified_reference(from, &fk.references))
        .collect()
}

/// The tables declaring a table name `t` references by foreign key, in any
/// schema (by name alone, as `parents::check` matches them), by resource name.
fn parent_candidates(
    t: &DeltaTable,
    others: &dyn Fn(&str) -> Vec<Arc<DeltaTable>>,
) -> Vec<Arc<DeltaTable>> {
    let mut found: BTreeMap<String, Arc<DeltaTable>> = BTreeMap::new();
    for key in reference_keys(t) {
        for c in others(&key) {
            found.entry(c.name_any()).or_insert(c);
        }
    }
    found.into_values().collect()
}

/// The manifests a table's validation and lowering depend on (`dependencies`),
/// `table` last (a table another resource already declares is its error). Only
/// the objects depended on are cloned.
pub fn table_inputs(lookup: &dyn Lookup, table: Loaded<DeltaTable>, claims: Claims) -> Manifests {
    let d = dependencies(Dependent::Table(&table.resource), lookup, claims);
    with_table(&d, table)
}

/// The manifests of `d` (a table's dependencies) with the table itself, last.
pub fn with_table(d: &Dependencies, table: Loaded<DeltaTable>) -> Manifests {
    let mut m = manifests(d);
    m.tables.push(table);
    m
}

/// Where a DeltaSchema stands among those its validation reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Being created (admission of a CREATE): after every stored schema, so the
    /// newcomer is the one refused for a clash.
    New,
    /// Stored (a reconcile, an UPDATE): by creation time, then namespace and name,
    /// the same order whoever asks, so of two lookalikes only the later one is
    /// refused, by both reconciles alike.
    Stored,
}

/// The manifests a DeltaSchema's validation depends on, in the order `validate`
/// reads them (`Arrival`): of two schemas that clash, it refuses the later.
pub fn schema_inputs(
    lookup: &dyn Lookup,
    schema: Loaded<DeltaSchema>,
    arrival: Arrival,
) -> Manifests {
    let d = dependencies(
        Dependent::Schema(&schema.resource),
        lookup,
        Claims::Validate,
    );
    let mut m = manifests(&d);
    m.schemas.push(schema);
    let age = |s: &Loaded<DeltaSchema>| {
        let created = s.resource.metadata.creation_timestamp.clone();
        (created.is_none(), created, s.namespace(), s.name())
    };
    match arrival {
        Arrival::New => {
            let last = m.schemas.len() - 1;
            m.schemas[..last].sort_by_key(age);
        }
        Arrival::Stored => m.schemas.sort_by_key(age),
    }
    m
}

/// The objects of `d` as the loader would have made them (cloned here).
fn manifests(d: &Dependencies) -> Manifests {
    Manifests {
        schemas: d
            .schemas
            .iter()
            .map(|s| cached(s.as_ref().clone()))
            .collect(),
        tables: d
            .tables
            .iter()
            .map(|t| cached(t.as_ref().clone()))
            .collect(),
        ..Manifests::default()
    }
}

/// A cached object as the loader would have made it.
pub fn cached<T>(resource: T) -> Loaded<T> {
    Loaded {
        file: CACHED.into(),
        resource,
    }
}

/// Cached objects in plain lists: the lookup of a caller without a cache (a
/// test, a bench, a one-off), each answer a walk of the list.
#[derive(Debug, Default, Clone)]
pub struct Listed {
    pub schemas: Vec<Arc<DeltaSchema>>,
    pub tables: Vec<Arc<DeltaTable>>,
}

impl Lookup for Listed {
    fn schema(&self, name: &str) -> Option<Arc<DeltaSchema>> {
        self.schemas.iter().find(|s| s.name_any() == name).cloned()
    }
    fn schemas(&self) -> Vec<Arc<DeltaSchema>> {
        self.schemas.clone()
    }
    /// A list is one namespace's.
    fn schemas_elsewhere(&self) -> Vec<Arc<DeltaSchema>> {
        Vec::new()
    }
    fn tables_named(&self, key: &str) -> Vec<Arc<DeltaTable>> {
        self.tables
            .iter()
            .filter(|t| name_key(t) == key)
            .cloned()
            .collect()
    }
    fn referrers(&self, key: &str) -> Vec<Arc<DeltaTable>> {
        self.tables
            .iter()
            .filter(|t| reference_keys(t).contains(key))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_named(name: &str, catalog: &str) -> Arc<DeltaSchema> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaSchema",
                "metadata": {"name": name, "namespace": "shop"}, "spec": {"catalog": catalog}
            }))
            .unwrap(),
        )
    }

    fn schema() -> Arc<DeltaSchema> {
        schema_named("sales", "main")
    }

    /// A DeltaTable `name` of schema `sales` declaring `table`, with a foreign key to each of `refs`.
    fn table(name: &str, table: &str, refs: &[&str]) -> Arc<DeltaTable> {
        table_in("sales", name, table, refs)
    }

    fn table_in(schema: &str, name: &str, table: &str, refs: &[&str]) -> Arc<DeltaTable> {
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
                "spec": {"schemaRef": schema, "name": table,
                    "columns": [{"name": "id", "type": "bigint"}], "constraints": fks}
            }))
            .unwrap(),
        )
    }

    fn names(m: &Manifests) -> Vec<String> {
        m.tables.iter().map(|t| t.name()).collect()
    }

    fn names_of<T: ResourceExt>(v: &[Arc<T>]) -> Vec<String> {
        v.iter().map(|o| o.name_any()).collect()
    }

    // The webhook and the reconcile ask the same question; they differ only in who
    // answers for a second declaration of one table.
    #[test]
    fn ancestors_for_both_duplicates_only_for_admission_and_the_table_last() {
        let cached = Listed {
            schemas: vec![schema()],
            tables: vec![
                table("orders-copy", "orders", &[]),
                table("unrelated", "unrelated", &[]),
                table("grandparent", "grandparent", &[]),
                table("parent", "parent", &["grandparent"]),
                table("orders", "orders", &["parent"]),
            ],
        };
        let me = cached.tables[4].as_ref().clone();
        let admission = table_inputs(&cached, super::cached(me.clone()), Claims::Validate);
        assert_eq!(
            names(&admission),
            ["grandparent", "orders-copy", "parent", "orders"]
        );
        let reconcile = table_inputs(&cached, super::cached(me), Claims::OwnerMarker);
        assert_eq!(names(&reconcile), ["grandparent", "parent", "orders"]);
        assert_eq!(reconcile.schemas.len(), 1);
    }

    #[test]
    fn a_table_depends_on_its_schema_and_no_other_unless_a_parent_is_there() {
        let cached = Listed {
            schemas: vec![
                schema(),
                schema_named("crm", "main"),
                schema_named("unused", "other"),
            ],
            tables: vec![
                table_in("crm", "customers", "customers", &[]),
                table("orders", "orders", &["crm.customers"]),
                table("alone", "alone", &[]),
            ],
        };
        let alone = dependencies(
            Dependent::Table(&cached.tables[2]),
            &cached,
            Claims::Validate,
        );
        assert_eq!(names_of(&alone.schemas), ["sales"]);
        assert!(alone.tables.is_empty() && alone.parents.is_empty());
        // a parent in another schema brings that schema
        let orders = dependencies(
            Dependent::Table(&cached.tables[1]),
            &cached,
            Claims::Validate,
        );
        assert_eq!(names_of(&orders.schemas), ["crm", "sales"]);
        assert_eq!(names_of(&orders.tables), ["customers"]);
        assert_eq!(names_of(&orders.parents), ["customers"]);
    }

    #[test]
    fn a_table_whose_schema_is_missing_depends_on_every_schema_and_no_table() {
        let cached = Listed {
            schemas: vec![schema_named("crm", "main")],
            tables: vec![table("parent", "parent", &[])],
        };
        let me = table("orders", "orders", &["parent"]);
        let d = dependencies(Dependent::Table(&me), &cached, Claims::Validate);
        assert_eq!(names_of(&d.schemas), ["crm"]);
        assert!(d.tables.is_empty());
        // the reconcile still waits for the parent it names
        assert_eq!(names_of(&d.parents), ["parent"]);
    }

    #[test]
    fn lookalikes_of_its_schema_only_at_admission_and_not_those_of_other_schemas() {
        let cached = Listed {
            schemas: vec![schema(), schema_named("crm", "main")],
            tables: vec![
                table("orders-1", "orders", &[]),
                table_in("crm", "orders-crm", "\u{43e}rders", &[]),
                table("orders-upper", "ORDERS", &[]),
                table("orders-2", "orders_2", &[]),
            ],
        };
        let me = table("orders-cyrillic", "\u{43e}rders", &[]);
        let d = dependencies(Dependent::Table(&me), &cached, Claims::Validate);
        // both Latin spellings look like the Cyrillic one; crm's is another schema's
        assert_eq!(names_of(&d.tables), ["orders-1", "orders-upper"]);
        let d = dependencies(Dependent::Table(&me), &cached, Claims::OwnerMarker);
        assert!(d.tables.is_empty(), "{:?}", names_of(&d.tables));
    }

    #[test]
    fn a_cached_version_of_the_table_itself_is_left_out() {
        let me = table("orders", "orders", &["orders"]);
        let cached = Listed {
            schemas: vec![schema()],
            tables: vec![me.clone(), table("other", "other", &[])],
        };
        let d = dependencies(Dependent::Table(&me), &cached, Claims::Validate);
        assert!(d.tables.is_empty() && d.parents.is_empty());
    }

    #[test]
    fn a_cycle_through_ancestors_ends() {
        let cached = Listed {
            schemas: vec![schema()],
            tables: vec![
                table("b", "b", &["c"]),
                table("c", "c", &["a"]),
                table("unrelated", "unrelated", &["b"]),
            ],
        };
        let me = table("a", "a", &["b"]);
        let d = dependencies(Dependent::Table(&me), &cached, Claims::OwnerMarker);
        assert_eq!(names_of(&d.tables), ["b", "c"]);
        assert_eq!(names_of(&d.parents), ["b"]);
    }

    #[test]
    fn a_schema_depends_on_the_other_schemas_only() {
        let me = schema();
        let cached = Listed {
            schemas: vec![me.clone(), schema_named("crm", "main")],
            tables: vec![table("orders", "orders", &[])],
        };
        let d = dependencies(Dependent::Schema(&me), &cached, Claims::Validate);
        assert_eq!(names_of(&d.schemas), ["crm"]);
        assert!(d.tables.is_empty() && d.parents.is_empty());
        let m = schema_inputs(&cached, super::cached(me.as_ref().clone()), Arrival::Stored);
        assert_eq!(m.schemas.len(), 2);
    }

    /// One namespace's list, with the schemas of other namespaces beside it.
    struct WithElsewhere(Listed, Vec<Arc<DeltaSchema>>);

    impl Lookup for WithElsewhere {
        fn schema(&self, name: &str) -> Option<Arc<DeltaSchema>> {
            self.0.schema(name)
        }
        fn schemas(&self) -> Vec<Arc<DeltaSchema>> {
            self.0.schemas()
        }
        fn schemas_elsewhere(&self) -> Vec<Arc<DeltaSchema>> {
            self.1.clone()
        }
        fn tables_named(&self, key: &str) -> Vec<Arc<DeltaTable>> {
            self.0.tables_named(key)
        }
        fn referrers(&self, key: &str) -> Vec<Arc<DeltaTable>> {
            self.0.referrers(key)
        }
    }

    /// DeltaSchema `ns/name` declaring `catalog.schema`, created at `created`.
    fn schema_at(
        ns: &str,
        name: &str,
        catalog: &str,
        schema: &str,
        created: &str,
    ) -> Arc<DeltaSchema> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaSchema",
                "metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
                "spec": {"catalog": catalog, "name": schema}
            }))
            .unwrap(),
        )
    }

    // A catalog schema is one across namespaces: a DeltaSchema reads the other namespaces'
    // schemas whose catalog or schema name looks like its own, and of two that clash only
    // the later-created is refused, whichever of them is reconciled (a CREATE: the newcomer).
    #[test]
    fn lookalike_schemas_of_other_namespaces_are_read_and_only_the_later_refused() {
        use delta_operator_api::spec::validate::validate;
        let older = schema_at("team-a", "sales", "main", "sales", "2026-01-01T00:00:00Z");
        let younger = schema_at(
            "team-b",
            "sales",
            "main",
            "s\u{430}les",
            "2026-01-02T00:00:00Z",
        );
        let elsewhere = vec![
            older.clone(),
            schema_at("team-a", "crm", "main", "crm", "2026-01-01T00:00:00Z"),
            schema_at(
                "team-a",
                "other",
                "other",
                "s\u{430}les",
                "2026-01-01T00:00:00Z",
            ),
            schema_at(
                "team-c",
                "ledger",
                "m\u{430}in",
                "ledger",
                "2026-01-03T00:00:00Z",
            ),
        ];
        let b = WithElsewhere(
            Listed {
                schemas: vec![younger.clone()],
                tables: vec![],
            },
            elsewhere,
        );
        let d = dependencies(Dependent::Schema(&younger), &b, Claims::Validate);
        let read: Vec<String> = d
            .schemas
            .iter()
            .map(|s| format!("{}/{}", s.namespace().unwrap(), s.name_any()))
            .collect();
        assert_eq!(read, ["team-a/sales", "team-c/ledger"]);
        let errors_of = |m: &Manifests, label: &str| -> Vec<String> {
            validate(m)
                .into_iter()
                .filter(|e| e.resource.as_deref() == Some(label))
                .map(|e| format!("{}: {} (fix: {})", e.path, e.message, e.fix))
                .collect()
        };
        let m = schema_inputs(&b, super::cached(younger.as_ref().clone()), Arrival::Stored);
        let refused = errors_of(&m, "DeltaSchema team-b/sales");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("of DeltaSchema team-a/sales")
                && refused[0].contains("same catalog")
                && refused[0].contains("rename one of them"),
            "{refused:?}"
        );
        // the older one's reconcile, with the younger elsewhere: not refused
        let a = WithElsewhere(
            Listed {
                schemas: vec![older.clone()],
                tables: vec![],
            },
            vec![younger.clone()],
        );
        let m = schema_inputs(&a, super::cached(older.as_ref().clone()), Arrival::Stored);
        assert!(errors_of(&m, "DeltaSchema team-a/sales").is_empty());
        // a CREATE of the older one beside the stored younger: the newcomer is refused
        let m = schema_inputs(&a, super::cached(older.as_ref().clone()), Arrival::New);
        assert_eq!(errors_of(&m, "DeltaSchema team-a/sales").len(), 1);
    }

    #[test]
    fn keys_find_what_depends_on_a_name() {
        let t = table(
            "orders",
            "\u{43e}rders",
            &["crm.Customers", "main.crm.items"],
        );
        assert_eq!(name_key(&t), "orders");
        assert_eq!(
            reference_keys(&t),
            BTreeSet::from(["customers".to_string(), "items".to_string()])
        );
        let cached = Listed {
            schemas: vec![],
            tables: vec![t.clone(), table("x", "x", &[])],
        };
        assert_eq!(names_of(&cached.referrers("customers")), ["orders"]);
    }
}
