//! `apply`: plan, show, and run what the gate allows.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;

use super::maintain::{self, Runs};
use super::plan::print_plan;
use super::{CliError, Exit, Format, check_allowed, choose_target, load_and_lower, open_backend};
use crate::apply::{ApplyError, ApplyReport, Event, Options, StepStatus, apply_planned};
use crate::backend::AnyBackend;
use crate::config::Config;
use crate::engine::Inputs;
use crate::plan::Plan;
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
    /// The closing report: text, or JSON on stdout (each table's status and
    /// change, every step; the step lines then go to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub format: ApplyFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyFormat {
    Text,
    Json,
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

pub async fn apply(config: &Config, a: ApplyArgs) -> Result<Exit, CliError> {
    run(config, a, Runs::Everything).await
}

/// An apply of every step (`apply`), or of the maintenance steps due alone
/// (`maintain`): the same progress, report and exit codes.
pub async fn run(config: &Config, a: ApplyArgs, runs: Runs) -> Result<Exit, CliError> {
    let (m, mut inputs) = load_and_lower(&a.files)?;
    inputs.clone_before_rewrite(a.clone_before_rewrite);
    let target = choose_target(config, a.target.as_deref(), &m)?;
    check_allowed(config, &target, &m, &mut inputs)?;
    let backend = open_backend(config, &target)?;
    let tty = std::io::stderr().is_terminal();
    let json = a.format == ApplyFormat::Json;
    let running: std::sync::Mutex<Option<Running>> = std::sync::Mutex::new(None);
    let on_event = |e: Event<'_>| show_event(e, &running, tty, json);
    // the CLI is the human at the keyboard: Auto semantics, destructive steps need --approve
    // Ctrl-C: no further step starts, the running statement is cancelled where the backend
    // can, and the apply ends as usual, releasing its tables' locks (a second Ctrl-C quits at once)
    let interrupted = std::sync::atomic::AtomicBool::new(false);
    let may_continue = || !interrupted.load(std::sync::atomic::Ordering::SeqCst);
    // maintenance keeps to each table's policy: Observe tables are left out of its
    // plan, and a Manual one makes the whole plan wait for --approve
    let policies = maintain::policies(&m);
    let policy = match runs {
        Runs::Everything => Policy::Auto,
        Runs::Maintenance => maintain::policy(&policies),
    };
    let opts = Options {
        policy,
        lock_wait: a.lock_wait,
        on_event: &on_event,
        may_continue: &may_continue,
        // a lake table's lock is fenced by the lake itself before each commit
        fence: None,
    };
    let approve = match runs {
        Runs::Everything => approval(&a, &backend, &inputs).await,
        Runs::Maintenance => a.approve.clone(),
    };
    let read_plan = || maintain::read_plan(&backend, &inputs, runs, &policies);
    let applying = apply_planned(
        &backend,
        read_plan,
        a.plan_id.as_deref(),
        approve.as_deref(),
        &opts,
    );
    let result = follow(
        applying,
        &backend,
        &running,
        &interrupted,
        tty,
        a.progress_every,
    )
    .await?;
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        if let Ok((_, report)) = &result {
            print!("{}", tables_text(&report.tables));
        }
        return Err(CliError::Interrupted(
            "interrupted: the apply stopped and released its tables' locks; plan again to see what is left".into(),
        ));
    }
    match result {
        Ok((plan, report)) => Ok(conclude(&plan, &report, &a, json, runs)),
        Err(e) => Err(refusal(e, read_plan().await.ok(), json)),
    }
}

/// A step's line: stdout, or stderr when stdout is the JSON report.
fn say(json: bool, line: String) {
    if json {
        eprintln!("{line}");
    } else {
        println!("{line}");
        let _ = std::io::stdout().flush();
    }
}

/// What the executor reports as it goes: the running step (for the progress line),
/// a backend's progress messages, and each step's and schema step's result.
fn show_event(e: Event<'_>, running: &std::sync::Mutex<Option<Running>>, tty: bool, json: bool) {
    match e {
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
            say(
                json,
                format!(
                    "{}  {:>2}. {} [{}] {status}{rp}{detail}",
                    r.table, r.number, r.title, r.class
                ),
            );
        }
        Event::SchemaFinished(r) => {
            let status = status_text(&r.status);
            let detail = r
                .detail
                .as_ref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default();
            say(
                json,
                format!(
                    "{} (schema)  {:>2}. {} [{}] {status}{detail}",
                    r.schema, r.number, r.title, r.class
                ),
            );
        }
        Event::ObjectFinished(r) => {
            let status = status_text(&r.status);
            let detail = r
                .detail
                .as_ref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default();
            say(
                json,
                format!(
                    "{} ({})  {:>2}. {} [{}] {status}{detail}",
                    r.object,
                    r.object.kind.word(),
                    r.number,
                    r.title,
                    r.class
                ),
            );
        }
    }
}

/// The approval to apply with: an approved plan is recorded before it runs; what is
/// left of it after an interruption resumes on the same approval (`approvals`).
async fn approval(a: &ApplyArgs, backend: &AnyBackend, inputs: &Inputs) -> Option<String> {
    let mut approve = a.approve.clone();
    if let Some(x) = &a.approve
        && let Ok((plan, _)) = crate::engine::read_and_plan(backend, inputs).await
    {
        if crate::plan::gate::approves(x, &plan.id) {
            super::approvals::record(&plan);
        } else if super::approvals::resumes(x, &plan) {
            eprintln!(
                "resuming the approved plan {x}: the {} steps left are steps of it (plan {})",
                plan.summary.steps, plan.id
            );
            approve = Some(plan.id.to_string());
        }
    }
    approve
}

type Applied = Result<(Plan, ApplyReport), ApplyError>;

/// Runs the apply to its end, drawing the progress line; the first Ctrl-C stops it
/// after the running step, a second one (or a step that does not end in time) quits.
async fn follow(
    applying: impl std::future::Future<Output = Applied>,
    backend: &AnyBackend,
    running: &std::sync::Mutex<Option<Running>>,
    interrupted: &std::sync::atomic::AtomicBool,
    tty: bool,
    progress_every: std::time::Duration,
) -> Result<Applied, CliError> {
    let mut interrupts = Interrupts::install();
    tokio::pin!(applying);
    let every = if tty {
        std::time::Duration::from_secs(1)
    } else {
        progress_every.max(std::time::Duration::from_secs(1))
    };
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    // set by the first Ctrl-C: when the running step must have ended
    let mut stopping: Option<tokio::time::Instant> = None;
    loop {
        let deadline = stopping.unwrap_or_else(tokio::time::Instant::now);
        tokio::select! {
            r = &mut applying => return Ok(r),
            _ = tokio::time::sleep_until(deadline), if stopping.is_some() => {
                return Err(CliError::Interrupted(format!(
                    "interrupted: the running step did not end within {}s; quitting. Its statement may still be running; its tables' locks expire within their lifetime (or `delta-operator unlock`)",
                    INTERRUPT_GRACE.as_secs()
                )));
            }
            _ = interrupts.recv() => {
                if stopping.is_some() {
                    return Err(CliError::Interrupted("interrupted again: quitting now. The running statement may still be running; the tables' locks expire within their lifetime (or `delta-operator unlock`)".into()));
                }
                interrupted.store(true, std::sync::atomic::Ordering::SeqCst);
                match backend.cancel().await {
                    Some(said) => eprintln!("interrupted: {said}; no further step starts, the locks are released as the apply ends (Ctrl-C again to quit at once)"),
                    None => eprintln!("interrupted: no further step starts; the running step ends, then the locks are released (Ctrl-C again to quit at once)"),
                }
                stopping = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
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
    }
}

/// The closing report of an apply that ran; exit 1 when a step or table failed, 5
/// when tables were left to another apply.
fn conclude(plan: &Plan, report: &ApplyReport, a: &ApplyArgs, json: bool, runs: Runs) -> Exit {
    for l in &report.locked {
        eprintln!(
            "locked: {} was not applied, the other tables went on: {}",
            l.table, l.by
        );
    }
    // views, functions and volumes the rules refused (or that wait for one) count as tables do
    let refused_objects: Vec<&crate::plan::ObjectPlan> =
        plan.objects.iter().filter(|o| o.is_refused()).collect();
    let finished = !report.failed()
        && refused_objects.is_empty()
        && report.locked.is_empty()
        && report.tables.iter().all(|t| {
            matches!(
                t.status,
                crate::apply::TableStatus::Applied | crate::apply::TableStatus::Unchanged
            )
        });
    if let (true, Some(x)) = (finished, &a.approve) {
        super::approvals::done(x);
    }
    let exit = if report.failed() || report.any_table_failed() || !refused_objects.is_empty() {
        Exit::Failed
    } else if !report.locked.is_empty() {
        Exit::Locked
    } else {
        Exit::Ok
    };
    if json {
        println!("{}", report_json(report));
        return exit;
    }
    for o in &refused_objects {
        eprintln!("{}", object_refusal(o));
    }
    if report.is_empty() && !report.any_table_failed() && refused_objects.is_empty() {
        match runs {
            Runs::Everything => println!(
                "No changes. The tables match the manifests. (plan {})",
                plan.id
            ),
            Runs::Maintenance => println!("No maintenance is due. (plan {})", plan.id),
        }
        return exit;
    }
    print!("{}", tables_text(&report.tables));
    let not_run = report
        .steps
        .iter()
        .map(|s| &s.status)
        .chain(report.schema_steps.iter().map(|s| &s.status))
        .chain(report.object_steps.iter().map(|s| &s.status))
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
    exit
}

/// Why the apply did not start, with the plan (read again) shown where it
/// helps (what needs approval, what the rules reject).
fn refusal(e: ApplyError, plan: Option<Plan>, json: bool) -> CliError {
    match e {
        ApplyError::NeedsApproval { .. } | ApplyError::WrongApproval { .. } => {
            if let Some(plan) = &plan {
                print_plan(plan, Format::Text, true);
            }
            CliError::Refused(e)
        }
        ApplyError::Stale { .. } | ApplyError::Locked(_) => CliError::Refused(e),
        ApplyError::Rejected => {
            if let Some(plan) = plan {
                let tables = crate::apply::planned_tables(&plan);
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"plan_id": plan.id, "tables": tables})
                    );
                } else {
                    print_plan(&plan, Format::Text, true);
                    print!("{}", tables_text(&tables));
                }
            }
            CliError::NothingCanRun
        }
        e => CliError::Apply(e),
    }
}

/// Ctrl-C (SIGINT), or SIGTERM (a CI job cancelled, a container stopped): either stops the
/// apply the same way. The handlers are installed when this is made, before the apply is first
/// polled: a signal that arrives as the first step starts must not meet the default action,
/// which would end the process with its locks held.
struct Interrupts {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Interrupts {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Interrupts {}
    }

    /// The next SIGINT or SIGTERM.
    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                _ = next(&mut self.int) => {}
                _ = next(&mut self.term) => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// How long the running step may take to end after Ctrl-C before the CLI quits anyway.
const INTERRUPT_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The report as JSON: the plan id, every table's status and change, every step.
fn report_json(report: &crate::apply::ApplyReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| {
        serde_json::json!({"error": format!("the report could not be written: {e}")}).to_string()
    })
}

/// One line per table that did not simply apply or stay unchanged, naming why,
/// with the statements a blocked table would run (as a dry run shows them);
/// then a count of the rest.
fn tables_text(tables: &[crate::apply::TableReport]) -> String {
    use crate::apply::TableStatus;
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "Tables:");
    let unchanged = tables
        .iter()
        .filter(|t| t.status == TableStatus::Unchanged)
        .count();
    for t in tables.iter().filter(|t| t.status != TableStatus::Unchanged) {
        let why = match &t.status {
            TableStatus::Unchanged | TableStatus::Applied => String::new(),
            TableStatus::Failed { step, error } => {
                format!(
                    " at step {step}: {}",
                    error.lines().next().unwrap_or_default()
                )
            }
            TableStatus::Rejected { failures } => format!(
                " by {}",
                failures
                    .iter()
                    .map(|f| format!("{} ({})", f.rule, f.subject))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            TableStatus::Unreadable { why } => format!(", left alone: {why}"),
            TableStatus::Blocked { by } => format!(
                " by {}, left untouched",
                by.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            TableStatus::Locked { by } => format!(": {by}"),
            TableStatus::NotRun { why } | TableStatus::Deferred { why } => format!(": {why}"),
        };
        let change = serde_json::to_value(t.change)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(out, "  {}  {change}: {}{why}", t.table, t.status.word());
        for st in &t.would_run {
            let _ = writeln!(
                out,
                "      would run> {}",
                st.replace('\n', "\n                 ")
            );
        }
    }
    if unchanged > 0 {
        let _ = writeln!(out, "  {unchanged} unchanged");
    }
    out
}

/// One line for a view, function or volume the plan refused or blocked: left untouched.
fn object_refusal(o: &crate::plan::ObjectPlan) -> String {
    use crate::plan::ObjectOutcome;
    let why = match &o.outcome {
        ObjectOutcome::Rejected { failures } => format!(
            "rejected by {}",
            failures
                .iter()
                .map(|f| format!("{} ({})", f.rule, f.message))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ObjectOutcome::Blocked { by, .. } => format!("blocked by {}", by.join(", ")),
        ObjectOutcome::Accepted { .. } => "accepted".into(),
    };
    format!(
        "{} {}: {why}, left untouched",
        o.object.kind.word(),
        o.object
    )
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
