//! A `verify` run's report: the JSON `--json` prints and the summary table
//! printed otherwise (one line per probe, details under the ones that did not hold).

use serde::Serialize;

use crate::outcome::{Finding, Flags, Status};

/// The whole run.
#[derive(Debug, Serialize)]
pub struct Report {
    pub target: String,
    pub schema: String,
    pub principal: String,
    pub run_id: String,
    #[serde(flatten)]
    pub tally: Tally,
    pub duration_ms: u128,
    /// The scratch schema is left in place (--keep, or it existed before).
    pub schema_kept: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub probes: Vec<ProbeReport>,
}

/// How many probes ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub held: usize,
    pub differed: usize,
    pub unknown: usize,
    pub skipped: usize,
}

impl Tally {
    pub fn of(probes: &[ProbeReport]) -> Self {
        let count = |s: Status| probes.iter().filter(|p| p.outcome == s).count();
        Tally {
            held: count(Status::Held),
            differed: count(Status::Differed),
            unknown: count(Status::Unknown),
            skipped: count(Status::Skipped),
        }
    }

    /// Every probe that ran held: `verify` exits 0.
    pub fn passed(&self) -> bool {
        self.differed == 0 && self.unknown == 0
    }
}

/// One probe's line of the report.
#[derive(Debug, Serialize)]
pub struct ProbeReport {
    pub name: &'static str,
    pub assumes: &'static str,
    pub matters: &'static str,
    pub docs_url: &'static str,
    pub flags: Flags,
    /// held | differed | unknown | skipped
    pub outcome: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_because: Option<String>,
    pub duration_ms: u128,
    pub statements: Vec<String>,
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines under a probe that did not hold: what differed or why it is unknown,
/// the workspace's words, why it matters (and for a difference, the docs).
fn details(p: &ProbeReport) -> String {
    let mut out = String::new();
    match &p.result {
        Some(Finding::Held { .. }) | None => {}
        Some(Finding::Differed {
            expected,
            observed,
            workspace,
        }) => {
            out.push_str(&format!(
                "            expected: {expected}\n            observed: {observed}\n"
            ));
            if let Some(w) = workspace {
                out.push_str(&format!(
                    "            the workspace said:\n{}\n",
                    indent(&w.message, "              ")
                ));
            }
            out.push_str(&format!(
                "            matters: {}\n            docs: {}\n",
                p.matters, p.docs_url
            ));
        }
        Some(Finding::Unknown { why, workspace }) => {
            out.push_str(&format!("            why: {why}\n"));
            if let Some(w) = workspace {
                out.push_str(&format!(
                    "            the workspace said:\n{}\n",
                    indent(&w.message, "              ")
                ));
            }
            out.push_str(&format!("            matters: {}\n", p.matters));
        }
    }
    out
}

/// The summary table: one line per probe, details under the ones that did not hold.
pub fn render(r: &Report) -> String {
    let width = r.probes.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for p in &r.probes {
        let m = p.outcome.mark();
        out.push_str(&format!("{m:<10}  {:<width$}  {}\n", p.name, p.assumes));
        out.push_str(&details(p));
    }
    for n in &r.notes {
        out.push_str(&format!("note: {}\n", indent(n, "  ").trim_start()));
    }
    let t = &r.tally;
    out.push_str(&format!(
        "\nVerified in {}: {} held, {} differed, {} unknown{} ({:.1}s){}\n",
        r.schema,
        t.held,
        t.differed,
        t.unknown,
        if t.skipped > 0 {
            format!(", {} skipped", t.skipped)
        } else {
            String::new()
        },
        r.duration_ms as f64 / 1000.0,
        if r.schema_kept {
            format!(" · {} kept", r.schema)
        } else {
            String::new()
        },
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Words, differed, held, unknown};

    fn probe(name: &'static str, result: Option<Finding>) -> ProbeReport {
        ProbeReport {
            name,
            assumes: "an assumption",
            matters: "why it matters",
            docs_url: "https://docs.example/page",
            flags: Flags::default(),
            outcome: result.as_ref().map_or(Status::Skipped, Finding::status),
            skipped_because: result.is_none().then(|| "--skip-slow".to_string()),
            result,
            duration_ms: 0,
            statements: vec![],
        }
    }

    fn report(probes: Vec<ProbeReport>, kept: bool) -> Report {
        Report {
            target: "dbx".into(),
            schema: "main.scratch".into(),
            principal: "account users".into(),
            run_id: "abc123".into(),
            tally: Tally::of(&probes),
            duration_ms: 2500,
            schema_kept: kept,
            notes: vec![],
            probes,
        }
    }

    #[test]
    fn the_tally_counts_each_status_and_passes_only_without_differences_or_unknowns() {
        let probes = vec![
            probe("a", held("x").ok()),
            probe("b", held("y").ok()),
            probe("c", None),
        ];
        let t = Tally::of(&probes);
        assert_eq!((t.held, t.differed, t.unknown, t.skipped), (2, 0, 0, 1));
        assert!(t.passed());
        assert!(!Tally::of(&[probe("d", Some(differed("a", "b")))]).passed());
        assert!(!Tally::of(&[probe("e", Some(unknown("?")))]).passed());
    }

    #[test]
    fn the_json_report_is_flat_with_the_outcome_by_name() {
        let r = report(vec![probe("a", held("x").ok()), probe("c", None)], false);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["held"], 1);
        assert_eq!(v["skipped"], 1);
        assert_eq!(v["differed"], 0);
        assert!(v.get("tally").is_none() && v.get("notes").is_none());
        assert_eq!(v["probes"][0]["outcome"], "held");
        assert_eq!(v["probes"][0]["result"]["evidence"], "x");
        assert_eq!(v["probes"][1]["outcome"], "skipped");
        assert_eq!(v["probes"][1]["skipped_because"], "--skip-slow");
        assert!(v["probes"][1].get("result").is_none());
    }

    #[test]
    fn the_summary_details_only_what_did_not_hold() {
        let refused = Finding::Differed {
            expected: "accepted".into(),
            observed: "refused".into(),
            workspace: Some(Words {
                message: "line one\nline two".into(),
                error_class: None,
                error_code: None,
                sql_state: None,
                statement_id: None,
                statement: "ALTER".into(),
            }),
        };
        let r = report(
            vec![
                probe("held_one", held("x").ok()),
                probe("differs", Some(refused)),
                probe("unsure", Some(unknown("setup refused"))),
                probe("skip", None),
            ],
            true,
        );
        let text = render(&r);
        assert_eq!(
            text,
            "✓ held      held_one  an assumption\n\
             ✗ differed  differs   an assumption\n\
             \x20           expected: accepted\n\
             \x20           observed: refused\n\
             \x20           the workspace said:\n\
             \x20             line one\n\
             \x20             line two\n\
             \x20           matters: why it matters\n\
             \x20           docs: https://docs.example/page\n\
             ! unknown   unsure    an assumption\n\
             \x20           why: setup refused\n\
             \x20           matters: why it matters\n\
             - skipped   skip      an assumption\n\
             \n\
             Verified in main.scratch: 1 held, 1 differed, 1 unknown, 1 skipped (2.5s) · main.scratch kept\n"
        );
    }

    #[test]
    fn notes_follow_the_probes_indented_under_their_first_line() {
        let mut r = report(vec![probe("a", held("x").ok())], false);
        r.notes = vec!["could not drop it:\nbecause".into()];
        let text = render(&r);
        assert!(
            text.contains("note: could not drop it:\n  because\n\nVerified in main.scratch: 1 held, 0 differed, 0 unknown (2.5s)\n"),
            "{text}"
        );
    }
}
