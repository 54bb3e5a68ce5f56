//! The JSON rendering: the plan itself, versioned (`format_version`), with the
//! plan id as the top-level `id` and both sides of every diff, so it round-trips.

use crate::plan::Plan;

pub fn render(plan: &Plan) -> String {
    serde_json::to_string_pretty(plan).expect("a plan always serializes") + "\n"
}

pub fn parse(text: &str) -> Result<Plan, serde_json::Error> {
    serde_json::from_str(text)
}
