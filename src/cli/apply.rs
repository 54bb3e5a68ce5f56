//! `apply`: plan, show, and run what the gate allows.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;

use super::plan::print_plan;
use super::{
    EXIT_ERROR, EXIT_INTERRUPTED, EXIT_LOCKED, EXIT_OK, EXIT_REFUSED, EXIT_STALE, Format,
    check_allowed, choose_target, load_and_lower, open_backend,
};
use crate::apply::{ApplyError, Event, Options, StepStatus, apply as run_apply};
use crate::config::Config;
use crate::plan::gate::Policy;

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// Manifest files or folders.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// Approve the plan with this id (needed for destructive steps).
    #[arg(long)]
    pub approve: Option<String>,
    /// Refuse unless the plan still has this id (from an earlier `plan`).
    #[arg(long)]
    pub plan_id: Option<String>,
    /// Take a shallow clone of every table before its first step that could
    /// lose data (as `spec.safety.cloneBeforeRewrite: true` does per table).
    /// Give it to both `plan` and `apply`: it is part of the plan.
    #[arg(long)]
    pub clone_before_rewrite: bool,
    /// How long to wait for a table another apply (another CLI, or the
    /// operator) is applying, before refusing with who holds it: 30s, 2m.
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    pub lock_wait: std::time::Duration,
    /// While a step runs: on a terminal a line redrawn every second with the time
    /// it has run; otherwise (logs, CI jobs) a line this often: 30s, 5m.
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    pub progress_every: std::time::Duration,
}

/// The step running now, for the progress line.
struct Running {
    label: String,
    since: std::time::Instant,
    bytes: Option<u64>,
    /// Rows written so far, where the backend counts them (the lake's rewrites).
    rows: Option<crate::backend::RowsDone>,
}

/// `  main.sales.orders 2. REPLACE TABLE (from itself): running 1m12s · 1.2 GiB to rewrite`,
/// and where the backend counts rows `· 1200000 of 2000000 rows (60%), 40000 rows/s, about
/// 20s left`, after a bar on a terminal.
fn progress_line(r: &Running, tty: bool) -> String {
    let size = r
        .bytes
        .map(|b| {
            format!(
                " · {} to read or rewrite",
                crate::plan::render::human_bytes(b)
            )
        })
        .unwrap_or_default();
    let running = r.since.elapsed();
    let rows = r
        .rows
        .map(|rows| {
            let bar = match rows.of {
                Some(of) if tty && of > 0 => bar(rows.done.min(of) as f64 / of as f64),
                _ => String::new(),
            };
            format!(" · {bar}{}", rows.describe(running))
        })
        .unwrap_or_default();
    format!(
        "  {}: running {}{size}{rows}",
        r.label,
        crate::backend::short_duration(running.as_secs())
    )
}

/// `[#######-------------] `: how much is done, for a terminal.
fn bar(done: f64) -> String {
    const WIDTH: usize = 20;
    let filled = ((done.clamp(0.0, 1.0)) * WIDTH as f64).round() as usize;
    format!("[{}{}] ", "#".repeat(filled), "-".repeat(WIDTH - filled))
}

pub async fn apply(config: &Config, a: ApplyArgs) -> u8 {
    let Ok((m, mut inputs)) = load_and_lower(&a.files) else {
        return EXIT_ERROR;
    };
    inputs.clone_before_rewrite(a.clone_before_rewrite);
    let backend = match choose_target(config, a.target.as_deref(), &m)
        .and_then(|t| check_allowed(config, &t, &inputs).and_then(|_| open_backend(config, &t)))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_ERROR;
        }
    };
    let tty = std::io::stderr().is_terminal();
    let running: std::sync::Mutex<Option<Running>> = std::sync::Mutex::new(None);
    let on_event = |e: Event<'_>| match e {
        Event::Started { table, step } => {
            *running.lock().unwrap_or_else(|p| p.into_inner()) = Some(Running {
                label: format!("{table} {}. {}", step.number, step.action.title()),
                since: std::time::Instant::now(),
                bytes: step.est_bytes,
                rows: None,
            });
        }
        Event::Rows { rows, .. } => {
            if let Some(r) = running.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                r.rows = Some(rows);
            }
        }
        Event::RestorePoint { .. } => {}
        Event::Progress {
            table,
            step,
            message,
        } => {
            eprintln!(
                "  {table} {}. {}: {message}",
                step.number,
                step.action.title()
            );
        }
        Event::Finished(r) => {
            if running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .is_some()
                && tty
            {
                // the redrawn progress line goes before the step's result
                eprint!("\r\x1b[2K");
            }
            let status = status_text(&r.status);
            let rp = r
                .restore_point
                .map(|v| format!(" (restore point: version {v})"))
                .unwrap_or_default();
            let detail = r
                .detail
                .as_ref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default();
            println!(
                "{}  {:>2}. {} [{}] {status}{rp}{detail}",
                r.table, r.number, r.title, r.class
            );
            let _ = std::io::stdout().flush();
        }
        Event::SchemaFinished(r) => {
            let status = status_text(&r.status);
            let detail = r
                .detail
                .as_ref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default();
            println!(
                "{} (schema)  {:>2}. {} [{}] {status}{detail}",
                r.schema, r.number, r.title, r.class
            );
            let _ = std::io::stdout().flush();
        }
    };
    // the CLI is the human at the keyboard: Auto semantics, destructive steps need --approve
    let opts = Options {
        policy: Policy::Auto,
        lock_wait: a.lock_wait,
        on_event: &on_event,
        may_continue: &|| true,
        // a lake table's lock is fenced by the lake itself before each commit
        fence: None,
    };
    let applying = run_apply(
        &backend,
        &inputs,
        a.plan_id.as_deref(),
        a.approve.as_deref(),
        &opts,
    );
    tokio::pin!(applying);
    let every = if tty {
        std::time::Duration::from_secs(1)
    } else {
        a.progress_every.max(std::time::Duration::from_secs(1))
    };
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    // Ctrl-C cancels the running statement where the backend can (Databricks), and says so
    let result = loop {
        tokio::select! {
            r = &mut applying => break r,
            _ = tokio::signal::ctrl_c() => {
                match backend.cancel().await {
                    Some(said) => eprintln!("interrupted: {said}"),
                    None => eprintln!("interrupted"),
                }
                return EXIT_INTERRUPTED;
            }
            _ = tick.tick() => {
                let line = running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                    .map(|r| progress_line(r, tty));
                if let Some(line) = line {
                    if tty {
                        eprint!("\r\x1b[2K{line}");
                    } else {
                        eprintln!("{line}");
                    }
                }
            }
        }
    };
    match result {
        Ok((plan, report)) => {
            // a table that cannot be read was left alone while the others went on: say so
            let unreadable = unreadable_tables(&plan);
            for (t, why) in &unreadable {
                eprintln!("refused: {t} cannot be read and was left alone: {why}");
            }
            for l in &report.locked {
                eprintln!(
                    "locked: {} was not applied, the other tables went on: {}",
                    l.table, l.by
                );
            }
            let code = if report.failed() || !unreadable.is_empty() {
                EXIT_ERROR
            } else if !report.locked.is_empty() {
                EXIT_LOCKED
            } else {
                EXIT_OK
            };
            if report.is_empty() {
                if unreadable.is_empty() {
                    println!(
                        "No changes. The tables match the manifests. (plan {})",
                        plan.id
                    );
                } else {
                    println!(
                        "No changes to the tables that could be read. (plan {})",
                        plan.id
                    );
                }
                return code;
            }
            let not_run = report
                .steps
                .iter()
                .map(|s| &s.status)
                .chain(report.schema_steps.iter().map(|s| &s.status))
                .filter(|s| **s == StepStatus::NotRun)
                .count();
            println!(
                "Applied {} steps, skipped {}{} · plan {}",
                report.applied(),
                report.skipped(),
                if not_run > 0 {
                    format!(", {not_run} not run")
                } else {
                    String::new()
                },
                plan.id
            );
            code
        }
        Err(e @ (ApplyError::NeedsApproval { .. } | ApplyError::WrongApproval { .. })) => {
            if let Ok((plan, _)) = crate::engine::read_and_plan(&backend, &inputs).await {
                print_plan(&plan, Format::Text, true);
            }
            eprintln!("refused: {e}. Nothing was changed.");
            EXIT_REFUSED
        }
        Err(e @ ApplyError::Stale { .. }) => {
            eprintln!("refused: {e}. Nothing was changed.");
            EXIT_STALE
        }
        Err(ApplyError::Locked(m)) => {
            eprintln!("refused: {m}. Nothing was changed.");
            EXIT_LOCKED
        }
        Err(ApplyError::Rejected) => {
            if let Ok((plan, _)) = crate::engine::read_and_plan(&backend, &inputs).await {
                print_plan(&plan, Format::Text, true);
            }
            eprintln!(
                "refused: the safety rules reject this plan (see ✗ above). Nothing was changed."
            );
            EXIT_ERROR
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_ERROR
        }
    }
}

/// Tables refused because they cannot be read (`TableUnreadable`): the gate
/// lets the others apply, so the refusal must be reported here.
fn unreadable_tables(plan: &crate::plan::Plan) -> Vec<(String, String)> {
    plan.tables
        .iter()
        .filter_map(|t| match &t.outcome {
            crate::plan::Outcome::Rejected { failures } => failures
                .iter()
                .find(|f| f.rule == crate::plan::rules::Rule::TableUnreadable)
                .map(|f| (t.table.to_string(), f.message.clone())),
            _ => None,
        })
        .collect()
}

/// How a step ended, as the apply log shows it.
fn status_text(s: &StepStatus) -> String {
    match s {
        StepStatus::Applied => "ok".to_string(),
        StepStatus::Skipped => "skipped (already true)".to_string(),
        StepStatus::Failed { error } => format!("FAILED\n      {error}"),
        StepStatus::NotRun => "not run".to_string(),
    }
}
