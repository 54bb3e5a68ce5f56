//! What must be true before other steps run: the table features they need
//! (column mapping, timestamp_ntz, type widening, column defaults) and the shallow clone taken
//! before the first step that could lose data.

use super::order::{Draft, StepGroup, draft};
use crate::model::property::{self, ColumnMapping};
use crate::model::{DataType, ObservedTable};
use crate::plan::action::has_column_defaults;
use crate::plan::steps::{Action, RewritePhase, RiskClass, Step, clone_name};

/// The table features a step needs, unless the table has them already:
/// column mapping, then timestamp_ntz, then type widening, then column defaults.
pub(super) fn feature_drafts(
    live: &ObservedTable,
    need_mapping: bool,
    need_ntz: bool,
    need_widening: bool,
    need_defaults: bool,
) -> Vec<Draft> {
    let mut drafts = Vec::new();
    // `id` and `name` both give columns physical names: either is enough
    if need_mapping && !ColumnMapping::of(&live.properties).is_enabled() {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableColumnMapping,
                vec![],
            )
            .warn("breaks streaming readers — they must be restarted from scratch")
            .note("column mapping cannot be turned off again"),
        );
    }
    if need_ntz
        && live
            .properties
            .get(property::FEATURE_TIMESTAMP_NTZ)
            .map(String::as_str)
            != Some(property::FEATURE_SUPPORTED)
    {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableTimestampNtz,
                vec![],
            )
            .warn("raises the table's protocol version; older clients lose access")
            .note("a table feature cannot be turned off again"),
        );
    }
    if need_widening && !property::is_true(&live.properties, property::ENABLE_TYPE_WIDENING) {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableTypeWidening,
                vec![],
            )
            .warn("raises the table's protocol version; older clients lose access")
            .note("type widening cannot be turned off again"),
        );
    }
    if need_defaults && !has_column_defaults(live) {
        drafts.push(
            draft(
                StepGroup::Prerequisite,
                RiskClass::Feature,
                Action::EnableColumnDefaults,
                vec![],
            )
            .warn("raises the table's protocol version; older clients lose access")
            .note("a table feature cannot be turned off again"),
        );
    }
    drafts
}

/// True for a step that could lose the table's data: a replace, or anything
/// destructive. (Staging writes a separate copy and is not one.)
pub(super) fn could_lose_data(s: &Step) -> bool {
    match &s.action {
        Action::Rewrite {
            phase: RewritePhase::Stage | RewritePhase::DropStaging,
            ..
        } => false,
        Action::Rewrite { .. } => true,
        _ => s.class == RiskClass::Destructive,
    }
}

/// Inserts a shallow clone before the first step that could lose data, and renumbers.
pub(super) fn insert_clone(steps: &mut Vec<Step>, live: &ObservedTable) {
    let Some(at) = steps.iter().position(could_lose_data) else {
        return;
    };
    let name = clone_name(&live.table.table);
    let clone = Step {
        number: 0,
        class: RiskClass::Meta,
        action: Action::CloneTable { name: name.clone() },
        serves: vec![],
        warnings: vec![],
        notes: vec![
            format!("a copy of the table as it is now, readable side by side with the new one as {}.{}.{name}", live.table.catalog, live.table.schema),
            "a shallow clone copies no data: it references the table's current files, so it lasts until a VACUUM removes them".into(),
        ],
        // what undoes it is the backend's to say (`plan::undo`), when the plan is compiled
        undo: None,
        undo_window: None,
        est_bytes: None,
        statements: vec![],
        checks: vec![],
    };
    steps.insert(at, clone);
    for (i, s) in steps.iter_mut().enumerate() {
        s.number = i + 1;
    }
}

/// True when the type is or holds a timestamp_ntz.
pub(super) fn mentions_ntz(t: &DataType) -> bool {
    match t {
        DataType::TimestampNtz => true,
        DataType::Array { element, .. } => mentions_ntz(element),
        DataType::Map { key, value, .. } => mentions_ntz(key) || mentions_ntz(value),
        DataType::Struct { fields } => fields.iter().any(|f| mentions_ntz(&f.data_type)),
        _ => false,
    }
}
