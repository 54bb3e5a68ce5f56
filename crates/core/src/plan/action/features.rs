//! Delta table features a later step needs, each turned on by its own step.
//! None has an inverse: Delta never downgrades a table's protocol.

use super::{Action, misrouted};
use crate::model::ObservedTable;
use crate::model::property::{self, ColumnMapping};

pub(super) fn title(action: &Action) -> String {
    match action {
        Action::EnableColumnMapping => "enable columnMapping".into(),
        Action::EnableTypeWidening => "enable typeWidening".into(),
        Action::EnableTimestampNtz => "enable timestampNtz".into(),
        Action::EnableColumnDefaults => "enable allowColumnDefaults".into(),
        other => misrouted(other),
    }
}

pub(super) fn holds(action: &Action, live: &ObservedTable) -> bool {
    match action {
        Action::EnableColumnMapping => ColumnMapping::of(&live.properties).is_enabled(),
        Action::EnableTypeWidening => {
            property::is_true(&live.properties, property::ENABLE_TYPE_WIDENING)
        }
        Action::EnableTimestampNtz => live
            .properties
            .get(property::FEATURE_TIMESTAMP_NTZ)
            .is_some_and(|v| v == property::FEATURE_SUPPORTED),
        Action::EnableColumnDefaults => has_column_defaults(live),
        other => misrouted(other),
    }
}

pub(super) fn apply_to(action: &Action, live: &mut ObservedTable) {
    let p = &mut live.properties;
    match action {
        Action::EnableColumnMapping => {
            p.insert(
                property::COLUMN_MAPPING_MODE.into(),
                ColumnMapping::Name.as_str().into(),
            );
        }
        Action::EnableTypeWidening => {
            p.insert(property::ENABLE_TYPE_WIDENING.into(), "true".into());
        }
        // no later statement depends on it today
        Action::EnableTimestampNtz => {}
        // a later rewrite's staging copy keeps copied defaults: it needs the feature too
        Action::EnableColumnDefaults => {
            p.insert(
                property::FEATURE_ALLOW_COLUMN_DEFAULTS.into(),
                property::FEATURE_SUPPORTED.into(),
            );
        }
        other => misrouted(other),
    }
}

/// True when the table can hold column defaults (the feature is listed).
pub fn has_column_defaults(live: &ObservedTable) -> bool {
    live.properties
        .contains_key(property::FEATURE_ALLOW_COLUMN_DEFAULTS)
}
