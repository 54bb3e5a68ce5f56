//! `depends::Lookup` over the reflectors' stores: objects by name straight
//! from a store, tables by the name they declare (or reference) from an index
//! kept from the same watch. Nothing walks or copies a namespace's tables, so
//! one admission or reconcile costs the same beside 1,000 or 20,000 of them.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use delta_operator_api::spec::load::DEFAULT_NAMESPACE;
use delta_operator_api::spec::{DeltaSchema, DeltaTable};
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use crate::depends::{Lookup, name_key, reference_keys};

/// Resource names by (namespace, key), and each resource's keys to take back.
#[derive(Debug, Default)]
struct Keyed {
    by_key: HashMap<(String, String), BTreeSet<String>>,
    keys_of: HashMap<(String, String), BTreeSet<String>>,
}

impl Keyed {
    fn insert(&mut self, ns: &str, name: &str, keys: BTreeSet<String>) {
        self.remove(ns, name);
        for k in &keys {
            self.by_key
                .entry((ns.to_string(), k.clone()))
                .or_default()
                .insert(name.to_string());
        }
        self.keys_of
            .insert((ns.to_string(), name.to_string()), keys);
    }

    fn remove(&mut self, ns: &str, name: &str) {
        let Some(keys) = self.keys_of.remove(&(ns.to_string(), name.to_string())) else {
            return;
        };
        for k in keys {
            let at = (ns.to_string(), k);
            if let Some(names) = self.by_key.get_mut(&at) {
                names.remove(name);
                if names.is_empty() {
                    self.by_key.remove(&at);
                }
            }
        }
    }

    fn get(&self, ns: &str, key: &str) -> Vec<String> {
        self.by_key
            .get(&(ns.to_string(), key.to_string()))
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Both indexes of the tables: by declared name and by referenced name.
#[derive(Debug, Default)]
struct Indexes {
    declared: Keyed,
    referenced: Keyed,
}

impl Indexes {
    fn insert(&mut self, t: &DeltaTable) {
        let (ns, name) = (namespace_of(t), t.name_any());
        self.declared
            .insert(&ns, &name, BTreeSet::from([name_key(t)]));
        self.referenced.insert(&ns, &name, reference_keys(t));
    }

    fn remove(&mut self, t: &DeltaTable) {
        let (ns, name) = (namespace_of(t), t.name_any());
        self.declared.remove(&ns, &name);
        self.referenced.remove(&ns, &name);
    }
}

#[derive(Debug, Default)]
struct State {
    live: Indexes,
    /// Filled while the watch lists again (from `Init` to `InitDone`), then made
    /// live, as the reflector swaps its store: deleted objects drop out.
    relisting: Option<Indexes>,
}

/// The DeltaTables of the watch by the comparison key of the table name each
/// declares and of each name it references by foreign key. An answer is a
/// candidate list: the lookup reads each object from the store and checks it,
/// so an index a moment behind its store costs nothing but that moment.
#[derive(Debug, Default, Clone)]
pub struct TableIndex(Arc<RwLock<State>>);

impl TableIndex {
    /// Follows one event of the watch whose store it indexes.
    pub fn apply(&self, event: &watcher::Event<DeltaTable>) {
        let mut s = self.0.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Apply(t) => s.live.insert(t),
            watcher::Event::Delete(t) => s.live.remove(t),
            watcher::Event::Init => s.relisting = Some(Indexes::default()),
            watcher::Event::InitApply(t) => s.relisting.get_or_insert_default().insert(t),
            watcher::Event::InitDone => {
                if let Some(fresh) = s.relisting.take() {
                    s.live = fresh;
                }
            }
        }
    }

    fn declared(&self, ns: &str, key: &str) -> Vec<String> {
        let s = self.0.read().unwrap_or_else(PoisonError::into_inner);
        s.live.declared.get(ns, key)
    }

    fn referencing(&self, ns: &str, key: &str) -> Vec<String> {
        let s = self.0.read().unwrap_or_else(PoisonError::into_inner);
        s.live.referenced.get(ns, key)
    }
}

fn namespace_of<K: ResourceExt>(o: &K) -> String {
    o.namespace().unwrap_or_else(|| DEFAULT_NAMESPACE.into())
}

/// The cached objects of one namespace, as `depends::dependencies` asks for them.
pub struct Cached<'a> {
    pub tables: &'a Store<DeltaTable>,
    pub schemas: &'a Store<DeltaSchema>,
    pub index: &'a TableIndex,
    pub namespace: &'a str,
}

impl Cached<'_> {
    fn tables(&self, names: Vec<String>) -> Vec<Arc<DeltaTable>> {
        names
            .into_iter()
            .filter_map(|n| self.tables.get(&ObjectRef::new(&n).within(self.namespace)))
            .collect()
    }
}

impl Lookup for Cached<'_> {
    fn schema(&self, name: &str) -> Option<Arc<DeltaSchema>> {
        self.schemas
            .get(&ObjectRef::new(name).within(self.namespace))
    }

    fn schemas(&self) -> Vec<Arc<DeltaSchema>> {
        // a namespace has one DeltaSchema per catalog schema: few, and this is asked
        // only for a DeltaSchema or for a table whose schema is missing
        self.schemas
            .state()
            .into_iter()
            .filter(|s| namespace_of(s.as_ref()) == self.namespace)
            .collect()
    }

    fn schemas_elsewhere(&self) -> Vec<Arc<DeltaSchema>> {
        // schemas are few (one per catalog schema), and this is asked only for a DeltaSchema
        self.schemas
            .state()
            .into_iter()
            .filter(|s| namespace_of(s.as_ref()) != self.namespace)
            .collect()
    }

    fn tables_named(&self, key: &str) -> Vec<Arc<DeltaTable>> {
        self.tables(self.index.declared(self.namespace, key))
            .into_iter()
            .filter(|t| name_key(t) == key)
            .collect()
    }

    fn referrers(&self, key: &str) -> Vec<Arc<DeltaTable>> {
        self.tables(self.index.referencing(self.namespace, key))
            .into_iter()
            .filter(|t| reference_keys(t).contains(key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;

    fn table(name: &str, declares: &str, refs: &str) -> DeltaTable {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"schemaRef": "sales", "name": declares,
                "columns": [{"name": "id", "type": "bigint"}],
                "constraints": [{"foreignKey": {"columns": ["id"], "references": refs,
                    "referencedColumns": ["id"]}}]}
        }))
        .unwrap()
    }

    #[test]
    fn the_index_follows_the_watch_renames_deletes_and_relists() {
        let (tables, mut writer) = reflector::store::<DeltaTable>();
        let (schemas, _w) = reflector::store::<DeltaSchema>();
        let index = TableIndex::default();
        let mut feed = |e: watcher::Event<DeltaTable>| {
            writer.apply_watcher_event(&e);
            index.apply(&e);
        };
        feed(watcher::Event::Apply(table("a", "orders", "customers")));
        feed(watcher::Event::Apply(table("b", "Orders", "items")));
        let cached = Cached {
            tables: &tables,
            schemas: &schemas,
            index: &index,
            namespace: "shop",
        };
        let names = |v: Vec<Arc<DeltaTable>>| v.iter().map(|t| t.name_any()).collect::<Vec<_>>();
        assert_eq!(names(cached.tables_named("orders")), ["a", "b"]);
        assert_eq!(names(cached.referrers("customers")), ["a"]);
        // another namespace's index is another
        let other = Cached {
            namespace: "elsewhere",
            ..cached
        };
        assert!(other.tables_named("orders").is_empty());
        let cached = Cached {
            namespace: "shop",
            ..other
        };
        feed(watcher::Event::Apply(table("a", "renamed", "customers")));
        assert_eq!(names(cached.tables_named("orders")), ["b"]);
        assert_eq!(names(cached.tables_named("renamed")), ["a"]);
        feed(watcher::Event::Delete(table("b", "Orders", "items")));
        assert!(cached.tables_named("orders").is_empty());
        assert!(cached.referrers("items").is_empty());
        // a relist without `a` drops it once done
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(table("c", "orders", "x")));
        feed(watcher::Event::InitDone);
        assert!(cached.tables_named("renamed").is_empty());
        assert_eq!(names(cached.tables_named("orders")), ["c"]);
    }
}
