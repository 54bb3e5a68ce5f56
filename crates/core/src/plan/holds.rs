//! "Is this step's change already true of the live table?" The executor asks
//! before every step and skips what holds, so a rerun is a no-op. Each family
//! of actions answers for its own (`action/`); this is the entry point.

use super::action::Action;
use crate::model::ObservedTable;

pub use super::action::field_at;

pub fn holds(action: &Action, live: Option<&ObservedTable>) -> bool {
    action.holds(live)
}
