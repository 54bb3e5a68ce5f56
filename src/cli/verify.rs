//! `verify`: runs the assumption probes (`cli::probes`) in a
//! scratch schema of a Databricks target, or `cli::spark_probes` on scratch
//! tables of a Spark Connect target, and says which hold.
//!
//! Progress goes to stderr, one line per probe; the summary (or with --json,
//! a machine-readable report) to stdout. Exit 0 when every probe that ran
//! held, 1 otherwise (a probe that differed or could not be decided, or a
//! setup failure).

use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::probes::{self, Bench, Flags, Kind, Outcome, Probe};
use super::spark_probes::{self, SparkBench};
use super::{EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK};
use crate::config::{Config, TargetBackend};
use crate::model::SchemaRef;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// A Databricks or Spark Connect target named in the config.
    #[arg(long, short = 't')]
    pub target: String,
    /// The scratch schema, `catalog.schema`: created if missing, dropped with CASCADE afterwards.
    #[arg(long)]
    pub schema: String,
    /// Print a machine-readable report on stdout.
    #[arg(long)]
    pub json: bool,
    /// Keep the scratch schema and the probes' objects afterwards.
    #[arg(long)]
    pub keep: bool,
    /// The principal grants and policies are made to (it must exist in the account).
    #[arg(long, default_value = "account users")]
    pub principal: String,
    /// Run only these probes (by name; repeatable or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Skip the slow probes (materialized views).
    #[arg(long)]
    pub skip_slow: bool,
    /// Skip the probes that create ABAC policies (they need MANAGE on the schema).
    #[arg(long)]
    pub skip_policies: bool,
    /// Give up on a probe after this long: 30s, 5m.
    #[arg(long, default_value = "5m", value_parser = super::parse_duration)]
    pub probe_timeout: Duration,
}

#[derive(Serialize)]
struct Report {
    target: String,
    schema: String,
    principal: String,
    run_id: String,
    held: usize,
    differed: usize,
    unknown: usize,
    skipped: usize,
    duration_ms: u128,
    /// The scratch schema is left in place (--keep, or it existed before).
    schema_kept: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    probes: Vec<ProbeReport>,
}

#[derive(Serialize)]
struct ProbeReport {
    name: &'static str,
    assumes: &'static str,
    matters: &'static str,
    docs_url: &'static str,
    flags: Flags,
    /// held | differed | unknown | skipped
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped_because: Option<String>,
    duration_ms: u128,
    statements: Vec<String>,
}

fn parse_schema(s: &str) -> Result<SchemaRef, String> {
    match s.split_once('.') {
        Some((c, sch)) if !c.is_empty() && !sch.is_empty() && !sch.contains('.') => Ok(SchemaRef {
            catalog: c.to_string(),
            schema: sch.to_string(),
        }),
        _ => Err(format!("--schema '{s}': give it as catalog.schema")),
    }
}

fn skip_reason(p: &Probe, a: &VerifyArgs) -> Option<String> {
    if !a.only.is_empty() && !a.only.iter().any(|o| o == p.name) {
        return Some("not named by --only".into());
    }
    if a.skip_slow && p.flags.slow {
        return Some("--skip-slow".into());
    }
    if a.skip_policies && p.flags.creates_policy {
        return Some("--skip-policies".into());
    }
    None
}

pub async fn verify(config: &Config, a: VerifyArgs) -> u8 {
    tokio::select! {
        code = run(config, &a) => code,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted: a probe statement may still be running (see Query History); the scratch schema {} was not dropped", a.schema);
            EXIT_INTERRUPTED
        }
    }
}

async fn run(config: &Config, a: &VerifyArgs) -> u8 {
    let schema = match parse_schema(&a.schema) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_ERROR;
        }
    };
    if let Ok(t) = config.target(&a.target)
        && let TargetBackend::SparkConnect(s) = &t.backend
    {
        return run_spark(s, &schema, a).await;
    }
    let backend = match config
        .target(&a.target)
        .map_err(|e| e.to_string())
        .and_then(|t| {
            let TargetBackend::Databricks(d) = &t.backend else {
                return Err(format!(
                    "target '{}' is a lake target: verify probes Databricks and Spark Connect targets",
                    a.target
                ));
            };
            crate::backend::open::databricks(d).map_err(|e| format!("target '{}': {e}", a.target))
        }) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_ERROR;
        }
    };
    let all = probes::all();
    if let Some(bad) = a
        .only
        .iter()
        .find(|o| !all.iter().any(|p| p.name == o.as_str()))
    {
        eprintln!(
            "error: --only {bad}: no such probe; the probes are: {}",
            all.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        );
        return EXIT_ERROR;
    }
    let started = Instant::now();
    let run_id = format!(
        "{:06x}",
        (std::process::id() as u64 ^ chrono::Utc::now().timestamp_millis() as u64) & 0xff_ffff
    );
    let bench = Bench::new(backend, schema.clone(), &a.principal, &run_id);
    let mut notes = Vec::new();

    // ---- the scratch schema
    let existed = match bench
        .client()
        .get_schema(&format!("{}.{}", schema.catalog, schema.schema))
        .await
    {
        Ok(s) => s.is_some(),
        Err(e) => {
            eprintln!("error: cannot read schema {}: {e}", a.schema);
            return EXIT_ERROR;
        }
    };
    eprintln!(
        "verify: {} probes in {} (target {}, run {run_id}){}",
        all.len(),
        a.schema,
        a.target,
        if existed {
            ", schema exists already"
        } else {
            ""
        }
    );
    if let Err(e) = bench
        .exec(&format!("CREATE SCHEMA IF NOT EXISTS {}", bench.schema_q()))
        .await
    {
        eprintln!("error: cannot create the scratch schema {}:\n{e}", a.schema);
        return EXIT_ERROR;
    }
    let runs_dropping = all
        .iter()
        .any(|p| p.flags.keeps_dropped && skip_reason(p, a).is_none());
    if runs_dropping {
        // dropped tables count against the quota while they can be UNDROPped (stevin's advice)
        if let Err(e) = bench
            .exec(&format!(
                "ALTER SCHEMA {} SET RETAIN DROPPED TO 0 HOURS",
                bench.schema_q()
            ))
            .await
        {
            let note = format!(
                "could not shorten the schema's retention of dropped tables (they count against the quota for 7 days):\n{e}"
            );
            eprintln!("note: {note}");
            notes.push(note);
        }
    }

    // ---- the probes
    let mut reports = Vec::new();
    let total = all.len();
    for (i, p) in all.iter().enumerate() {
        let prefix = format!("[{:>2}/{total}] {}", i + 1, p.name);
        if let Some(why) = skip_reason(p, a) {
            if a.only.is_empty() {
                eprintln!("{prefix} … - skipped ({why})");
            }
            reports.push(ProbeReport {
                name: p.name,
                assumes: p.assumes,
                matters: p.matters,
                docs_url: p.docs_url,
                flags: p.flags,
                outcome: "skipped",
                result: None,
                skipped_because: Some(why),
                duration_ms: 0,
                statements: vec![],
            });
            continue;
        }
        eprintln!("{prefix} …");
        let t0 = Instant::now();
        let outcome = match tokio::time::timeout(a.probe_timeout, (p.check)(&bench)).await {
            Ok(Ok(o) | Err(o)) => o,
            Err(_) => probes::unknown(format!(
                "gave up after {}s (--probe-timeout); its statement may still be running",
                a.probe_timeout.as_secs()
            )),
        };
        let took = t0.elapsed();
        eprintln!("{prefix} {} ({:.1}s)", mark(&outcome), took.as_secs_f64());
        reports.push(ProbeReport {
            name: p.name,
            assumes: p.assumes,
            matters: p.matters,
            docs_url: p.docs_url,
            flags: p.flags,
            outcome: outcome.kind(),
            result: Some(outcome),
            skipped_because: None,
            duration_ms: took.as_millis(),
            statements: bench.take_log(),
        });
    }

    // ---- cleanup
    let kept = a.keep || existed;
    if a.keep {
        eprintln!("verify: kept {} and the probes' objects (--keep)", a.schema);
    } else if existed {
        // someone else's schema: drop only what the probes made
        for (kind, name) in bench.created().iter().rev() {
            let what = match kind {
                Kind::Table => "TABLE",
                Kind::View => "VIEW",
                Kind::Function => "FUNCTION",
            };
            let _ = bench.exec(&format!("DROP {what} IF EXISTS {name}")).await;
        }
        eprintln!(
            "verify: {} existed before the run, so only the probes' objects were dropped",
            a.schema
        );
    } else if let Err(e) = bench
        .exec(&format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            bench.schema_q()
        ))
        .await
    {
        let note = format!("could not drop the scratch schema {}:\n{e}", a.schema);
        eprintln!("note: {note}");
        notes.push(note);
    }

    let count = |k: &str| reports.iter().filter(|r| r.outcome == k).count();
    let report = Report {
        target: a.target.clone(),
        schema: a.schema.clone(),
        principal: a.principal.clone(),
        run_id,
        held: count("held"),
        differed: count("differed"),
        unknown: count("unknown"),
        skipped: count("skipped"),
        duration_ms: started.elapsed().as_millis(),
        schema_kept: kept,
        notes,
        probes: reports,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("the report serializes")
        );
    } else {
        print!("{}", render(&report));
    }
    if report.differed == 0 && report.unknown == 0 {
        EXIT_OK
    } else {
        EXIT_ERROR
    }
}

/// The Spark Connect probes, each on its own scratch table under the target's
/// root in `schema`'s folder; the tables are removed afterwards unless --keep.
async fn run_spark(
    target: &crate::config::SparkConnectTarget,
    schema: &SchemaRef,
    a: &VerifyArgs,
) -> u8 {
    let backend = match crate::backend::open::spark_connect(target, Some("verify")) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: target '{}': {e}", a.target);
            return EXIT_ERROR;
        }
    };
    let all = spark_probes::all();
    if let Some(bad) = a
        .only
        .iter()
        .find(|o| !all.iter().any(|p| p.name == o.as_str()))
    {
        eprintln!(
            "error: --only {bad}: no such probe; the probes are: {}",
            all.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        );
        return EXIT_ERROR;
    }
    let started = Instant::now();
    let run_id = format!(
        "{:06x}",
        (std::process::id() as u64 ^ chrono::Utc::now().timestamp_millis() as u64) & 0xff_ffff
    );
    let bench = SparkBench::new(&backend, schema.clone(), &run_id);
    eprintln!(
        "verify: {} probes on Spark Connect {} in {}/{} (target {}, run {run_id})",
        all.len(),
        backend.client().endpoint(),
        schema.catalog,
        schema.schema,
        a.target
    );
    let mut reports = Vec::new();
    let total = all.len();
    for (i, p) in all.iter().enumerate() {
        let prefix = format!("[{:>2}/{total}] {}", i + 1, p.name);
        let skipped = (!a.only.is_empty() && !a.only.iter().any(|o| o == p.name))
            .then(|| "not named by --only".to_string());
        let (outcome, took) = match skipped {
            Some(_) => (None, Duration::ZERO),
            None => {
                eprintln!("{prefix} …");
                let t0 = Instant::now();
                let o = match tokio::time::timeout(a.probe_timeout, (p.check)(&bench)).await {
                    Ok(Ok(o) | Err(o)) => o,
                    Err(_) => probes::unknown(format!(
                        "gave up after {}s (--probe-timeout)",
                        a.probe_timeout.as_secs()
                    )),
                };
                eprintln!("{prefix} {} ({:.1}s)", mark(&o), t0.elapsed().as_secs_f64());
                (Some(o), t0.elapsed())
            }
        };
        reports.push(ProbeReport {
            name: p.name,
            assumes: p.assumes,
            matters: p.matters,
            docs_url: p.docs_url,
            flags: Flags::default(),
            outcome: outcome.as_ref().map_or("skipped", Outcome::kind),
            result: outcome,
            skipped_because: skipped,
            duration_ms: took.as_millis(),
            statements: bench.take_log(),
        });
    }
    let notes = if a.keep {
        vec![format!(
            "kept the scratch tables verify_{run_id}_* (--keep)"
        )]
    } else {
        bench.clean_up().await
    };
    let count = |k: &str| reports.iter().filter(|r| r.outcome == k).count();
    let report = Report {
        target: a.target.clone(),
        schema: a.schema.clone(),
        principal: a.principal.clone(),
        run_id,
        held: count("held"),
        differed: count("differed"),
        unknown: count("unknown"),
        skipped: count("skipped"),
        duration_ms: started.elapsed().as_millis(),
        schema_kept: true,
        notes,
        probes: reports,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("the report serializes")
        );
    } else {
        print!("{}", render(&report));
    }
    if report.differed == 0 && report.unknown == 0 {
        EXIT_OK
    } else {
        EXIT_ERROR
    }
}

fn mark(o: &Outcome) -> &'static str {
    match o {
        Outcome::Held { .. } => "✓ held",
        Outcome::Differed { .. } => "✗ differed",
        Outcome::Unknown { .. } => "! unknown",
    }
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The summary table: one line per probe, details under the ones that did not hold.
fn render(r: &Report) -> String {
    let width = r.probes.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for p in &r.probes {
        let m = match &p.result {
            Some(o) => mark(o),
            None => "- skipped",
        };
        out.push_str(&format!("{m:<10}  {:<width$}  {}\n", p.name, p.assumes));
        match &p.result {
            Some(Outcome::Held { .. }) | None => {}
            Some(Outcome::Differed {
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
            Some(Outcome::Unknown { why, workspace }) => {
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
    }
    for n in &r.notes {
        out.push_str(&format!("note: {}\n", indent(n, "  ").trim_start()));
    }
    out.push_str(&format!(
        "\nVerified in {}: {} held, {} differed, {} unknown{} ({:.1}s){}\n",
        r.schema,
        r.held,
        r.differed,
        r.unknown,
        if r.skipped > 0 {
            format!(", {} skipped", r.skipped)
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
