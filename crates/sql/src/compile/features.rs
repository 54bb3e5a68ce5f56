//! Delta table features a later step needs, each enabled by its own step.

use delta_operator_core::model::property;
use delta_operator_core::model::{ObservedTable, TableRef};
use delta_operator_core::plan::steps::Action;

use super::alter;
use crate::SqlError;
use crate::ddl::enable_column_mapping;
use crate::quote::{Names, literal};

/// The statements of a table-feature step (`compile_for` routes only those here).
pub(super) fn compile(
    names: &Names,
    t: &TableRef,
    action: &Action,
    live: Option<&ObservedTable>,
) -> Result<Vec<String>, SqlError> {
    let one = |s: String| Ok(vec![s]);
    match action {
        Action::EnableColumnMapping => one(enable_column_mapping(names, t, live)),
        Action::EnableTypeWidening => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({} = 'true')",
                literal(property::ENABLE_TYPE_WIDENING)
            ),
        )),
        Action::EnableTimestampNtz => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({} = 'supported')",
                literal(property::FEATURE_TIMESTAMP_NTZ)
            ),
        )),
        Action::EnableColumnDefaults => one(alter(
            names,
            t,
            format!(
                "SET TBLPROPERTIES ({} = {})",
                literal(property::FEATURE_ALLOW_COLUMN_DEFAULTS),
                literal(property::FEATURE_SUPPORTED)
            ),
        )),
        other => unreachable!("compile_for routed {} to the wrong family", other.title()),
    }
}
