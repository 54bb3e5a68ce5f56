//! `verify`: runs the assumption probes (the `delta-operator-verify` crate) in a
//! scratch schema of a Databricks target, or on scratch tables of a Spark
//! Connect target, and says which hold. This file is the command: its
//! arguments, the scratch schema's set-up and cleanup, and printing the report.
//!
//! Progress goes to stderr, one line per probe; the summary (or with --json,
//! a machine-readable report) to stdout. Exit 0 when every probe that ran
//! held, 1 otherwise (a probe that differed or could not be decided, or a
//! setup failure).

use std::time::{Duration, Instant};

use super::{CliError, Exit};
use crate::config::{Config, TargetBackend};
use crate::model::SchemaRef;
use clap::Args;
use delta_operator_verify::databricks::{self as probes, Bench, Kind, Probe};
use delta_operator_verify::report::{ProbeReport, Report, Tally, render};
use delta_operator_verify::spark::{self as spark_probes, SparkBench};
use delta_operator_verify::{Flags, Status, unknown};

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

pub async fn verify(config: &Config, a: VerifyArgs) -> Result<Exit, CliError> {
    tokio::select! {
        exit = run(config, &a) => exit,
        _ = tokio::signal::ctrl_c() => Err(CliError::Interrupted(format!(
            "interrupted: a probe statement may still be running (see Query History); the scratch schema {} was not dropped",
            a.schema
        ))),
    }
}

/// `--only` names only probes there are.
fn check_only(a: &VerifyArgs, names: &[&str]) -> Result<(), CliError> {
    match a.only.iter().find(|o| !names.contains(&o.as_str())) {
        Some(bad) => Err(CliError::Usage(format!(
            "--only {bad}: no such probe; the probes are: {}",
            names.join(", ")
        ))),
        None => Ok(()),
    }
}

/// Names this run's objects apart from any other run's.
fn run_id() -> String {
    format!(
        "{:06x}",
        (std::process::id() as u64 ^ chrono::Utc::now().timestamp_millis() as u64) & 0xff_ffff
    )
}

async fn run(config: &Config, a: &VerifyArgs) -> Result<Exit, CliError> {
    let schema = parse_schema(&a.schema).map_err(CliError::Usage)?;
    let t = config.target(&a.target)?;
    let d = match &t.backend {
        TargetBackend::SparkConnect(s) => return run_spark(s, &schema, a).await,
        TargetBackend::Databricks(d) => d,
        TargetBackend::Lake(_) => {
            return Err(CliError::Usage(format!(
                "target '{}' is a lake target: verify probes Databricks and Spark Connect targets",
                a.target
            )));
        }
    };
    let backend = crate::backend::open::databricks(d).map_err(|source| CliError::Target {
        target: a.target.clone(),
        source,
    })?;
    let all = probes::all();
    check_only(a, &all.iter().map(|p| p.name).collect::<Vec<_>>())?;
    let started = Instant::now();
    let run_id = run_id();
    let bench = Bench::new(backend, schema.clone(), &a.principal, &run_id);
    let mut notes = Vec::new();
    let existed = set_up(&bench, &all, a, &run_id, &mut notes).await?;
    let reports = run_probes(&bench, &all, a).await;
    let kept = a.keep || existed;
    clean_up(&bench, a, existed, &mut notes).await;
    let report = Report {
        target: a.target.clone(),
        schema: a.schema.clone(),
        principal: a.principal.clone(),
        run_id,
        tally: Tally::of(&reports),
        duration_ms: started.elapsed().as_millis(),
        schema_kept: kept,
        notes,
        probes: reports,
    };
    Ok(print_report(&report, a.json))
}

/// The scratch schema, created if missing; whether it existed before.
async fn set_up(
    bench: &Bench,
    all: &[Probe],
    a: &VerifyArgs,
    run_id: &str,
    notes: &mut Vec<String>,
) -> Result<bool, CliError> {
    let schema = &bench.schema;
    let existed = bench
        .client()
        .get_schema(&format!("{}.{}", schema.catalog, schema.schema))
        .await
        .map_err(|source| CliError::ReadSchema {
            schema: a.schema.clone(),
            source,
        })?
        .is_some();
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
        return Err(CliError::CreateSchema {
            schema: a.schema.clone(),
            source: e,
        });
    }
    let runs_dropping = all
        .iter()
        .any(|p| p.flags.keeps_dropped && skip_reason(p, a).is_none());
    if runs_dropping {
        // dropped tables count against the quota while they can be UNDROPped
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
    Ok(existed)
}

/// Every probe in turn (or skipped), a line on stderr as each starts and ends.
async fn run_probes(bench: &Bench, all: &[Probe], a: &VerifyArgs) -> Vec<ProbeReport> {
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
                outcome: Status::Skipped,
                result: None,
                skipped_because: Some(why),
                duration_ms: 0,
                statements: vec![],
            });
            continue;
        }
        eprintln!("{prefix} …");
        let t0 = Instant::now();
        let outcome = match tokio::time::timeout(a.probe_timeout, (p.check)(bench)).await {
            Ok(Ok(o) | Err(o)) => o,
            Err(_) => unknown(format!(
                "gave up after {}s (--probe-timeout); its statement may still be running",
                a.probe_timeout.as_secs()
            )),
        };
        let took = t0.elapsed();
        eprintln!(
            "{prefix} {} ({:.1}s)",
            outcome.status().mark(),
            took.as_secs_f64()
        );
        reports.push(ProbeReport {
            name: p.name,
            assumes: p.assumes,
            matters: p.matters,
            docs_url: p.docs_url,
            flags: p.flags,
            outcome: outcome.status(),
            result: Some(outcome),
            skipped_because: None,
            duration_ms: took.as_millis(),
            statements: bench.take_log(),
        });
    }
    reports
}

/// Drops the scratch schema, or in a schema that existed before only the probes' objects;
/// nothing with --keep.
async fn clean_up(bench: &Bench, a: &VerifyArgs, existed: bool, notes: &mut Vec<String>) {
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
}

/// The Spark Connect probes, each on its own scratch table under the target's
/// root in `schema`'s folder; the tables are removed afterwards unless --keep.
async fn run_spark(
    target: &crate::config::SparkConnectTarget,
    schema: &SchemaRef,
    a: &VerifyArgs,
) -> Result<Exit, CliError> {
    let backend =
        crate::backend::open::spark_connect(target, Some("verify")).map_err(|source| {
            CliError::Target {
                target: a.target.clone(),
                source,
            }
        })?;
    let all = spark_probes::all();
    check_only(a, &all.iter().map(|p| p.name).collect::<Vec<_>>())?;
    let started = Instant::now();
    let run_id = run_id();
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
                    Err(_) => unknown(format!(
                        "gave up after {}s (--probe-timeout)",
                        a.probe_timeout.as_secs()
                    )),
                };
                eprintln!(
                    "{prefix} {} ({:.1}s)",
                    o.status().mark(),
                    t0.elapsed().as_secs_f64()
                );
                (Some(o), t0.elapsed())
            }
        };
        reports.push(ProbeReport {
            name: p.name,
            assumes: p.assumes,
            matters: p.matters,
            docs_url: p.docs_url,
            flags: Flags::default(),
            outcome: outcome.as_ref().map_or(Status::Skipped, |o| o.status()),
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
    let report = Report {
        target: a.target.clone(),
        schema: a.schema.clone(),
        principal: a.principal.clone(),
        run_id,
        tally: Tally::of(&reports),
        duration_ms: started.elapsed().as_millis(),
        schema_kept: true,
        notes,
        probes: reports,
    };
    Ok(print_report(&report, a.json))
}

/// The report on stdout (JSON with --json); exit 0 when every probe that ran held.
fn print_report(report: &Report, json: bool) -> Exit {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).expect("the report serializes")
        );
    } else {
        print!("{}", render(report));
    }
    if report.tally.passed() {
        Exit::Ok
    } else {
        Exit::Failed
    }
}
