//! What the manifests declare, lowered: the input of every plan. (Lowering itself, from
//! the resources' YAML, is the API crate's `inputs::lower`.)

use std::sync::Arc;

use crate::model::{DesiredObject, DesiredTable, HandOff, SchemaMode};
use crate::plan::SchemaScope;

/// What the manifests declare, lowered. The tables are shared with every
/// plan made of them (`plan_shared`), not copied into each.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub tables: Vec<Arc<DesiredTable>>,
    pub schemas: Vec<SchemaScope>,
    /// The declared views, functions and volumes.
    pub objects: Vec<Arc<DesiredObject>>,
    /// Per schema (same order): whether its spec names its mode; the others
    /// take the target's default (`target_default_mode`).
    pub mode_declared: Vec<bool>,
    /// The time the plan is made at (epoch milliseconds): maintenance
    /// schedules and recorded restore points are measured against it. The
    /// CLI and the controller give the clock's; None plans no schedule.
    pub now_ms: Option<i64>,
}

impl Inputs {
    /// These inputs planned at `now_ms`.
    pub fn at(mut self, now_ms: i64) -> Self {
        self.now_ms = Some(now_ms);
        self
    }

    /// The target's `defaultSchemaMode` for every schema whose spec names no mode.
    pub fn target_default_mode(&mut self, mode: SchemaMode) {
        for (s, declared) in self.schemas.iter_mut().zip(&self.mode_declared) {
            if !declared {
                s.mode = mode;
            }
        }
    }

    /// The target's `handOff`, added to every table's own and its schema's.
    pub fn target_hand_off(&mut self, hand_off: &HandOff) {
        if hand_off.is_empty() {
            return;
        }
        for t in &mut self.tables {
            Arc::make_mut(t).hand_off.merge(hand_off);
        }
    }

    /// `--clone-before-rewrite`: every table takes a shallow clone before its
    /// first step that could lose data (false leaves each spec's own setting).
    pub fn clone_before_rewrite(&mut self, on: bool) {
        if on {
            for t in &mut self.tables {
                Arc::make_mut(t).clone_before_rewrite = true;
            }
        }
    }
}
