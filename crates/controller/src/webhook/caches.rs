//! The cached objects the webhook validates against: its own watches, run by
//! every replica (a standby has no controllers, but answers admission too).

use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use std::sync::Arc;

use crate::lookup::{Cached, TableIndex};
use delta_operator_api::config::Config;
use delta_operator_api::spec::{DeltaSchema, DeltaTable};

#[derive(Clone)]
pub struct Caches {
    pub tables: Store<DeltaTable>,
    pub schemas: Store<DeltaSchema>,
    /// The tables of `tables` by the names they declare and reference.
    pub index: TableIndex,
    /// The operator's targets: which backend a schema's `spec.target` names decides
    /// what a table may hold (a name that needs column mapping, on the lake).
    pub config: Arc<Config>,
}

impl Caches {
    pub fn start(client: &Client, namespace: Option<&str>, config: Arc<Config>) -> Self {
        fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
        where
            K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
        {
            match ns {
                Some(ns) => Api::namespaced(client.clone(), ns),
                None => Api::all(client.clone()),
            }
        }
        let (tables, tw) = reflector::store();
        let (schemas, sw) = reflector::store();
        let index = TableIndex::default();
        let indexing = index.clone();
        let wc = watcher::Config::default();
        tokio::spawn(
            watcher(api::<DeltaTable>(client, namespace), wc.clone())
                .default_backoff()
                .modify(|t: &mut DeltaTable| {
                    crate::strip_managed_fields(t);
                    t.status = None; // validation reads specs only
                })
                .reflect(tw)
                .for_each(move |e| {
                    if let Ok(e) = e {
                        indexing.apply(&e);
                    }
                    futures::future::ready(())
                }),
        );
        tokio::spawn(
            watcher(api::<DeltaSchema>(client, namespace), wc)
                .default_backoff()
                .modify(|s: &mut DeltaSchema| {
                    crate::strip_managed_fields(s);
                    s.status = None;
                })
                .reflect(sw)
                .for_each(|_| futures::future::ready(())),
        );
        Caches {
            tables,
            schemas,
            index,
            config,
        }
    }

    pub(super) async fn ready(&self) {
        let _ = self.tables.wait_until_ready().await;
        let _ = self.schemas.wait_until_ready().await;
    }

    /// The cached objects of `ns`, as `depends` asks for them (nothing is copied).
    pub fn namespace<'a>(&'a self, ns: &'a str) -> Cached<'a> {
        Cached {
            tables: &self.tables,
            schemas: &self.schemas,
            index: &self.index,
            namespace: ns,
        }
    }
}
