//! A rewrite's phases on the lake, and what an interrupted run leaves behind.
//!
//! Every run has its own id (`TableRun::id`): its staging copy is
//! `.staging/<catalog>/<schema>/<table>/<run>/`, its rewritten files are
//! `<table>/delta-operator-rewrite-<run>/`. Nothing of one run can be mistaken
//! for another's, and what a crash leaves (a staging copy, files written but
//! never committed) is found by the next read, shown in the plan, and removed
//! by its first step (`Action::RemoveLeftovers`).

use std::collections::HashSet;

use deltalake::DeltaTable;
use deltalake::kernel::Action as DeltaAction;
use deltalake::kernel::transaction::CommitProperties;
use futures::StreamExt;
use serde_json::Value;

use super::replace::{self, MAX_CATCH_UP_ROUNDS, NotCommitted, Since};
use super::rewrite::{self, Checks, RUN_FOLDER_PREFIX, Sink, StreamSpec};
use super::{LakeBackend, STAGING, delta_err, fence, lock, rel};
use delta_operator_backend::{
    BackendError, StepOutcome, StepProgress, TableRun, failpoint, slow_failpoint,
};
use delta_operator_core::model::{Leftover, LeftoverKind, STAGED_FROM_PROPERTY, TableRef};
use delta_operator_core::plan::Step;
use delta_operator_core::plan::steps::{Rewrite, RewritePhase};

/// The commit info key of the run that wrote a commit (the version a staging
/// copy was made from is `STAGED_FROM_PROPERTY`, shared with the SQL backends).
pub const RUN: &str = "delta-operator.run";

/// The folder holding a table's staging copies, one per run.
pub fn staging_root(t: &TableRef) -> String {
    format!("{STAGING}/{}/{}/{}", t.catalog, t.schema, t.table)
}

/// One run's staging copy.
pub fn staging_rel(t: &TableRef, run: &str) -> String {
    format!("{}/{run}", staging_root(t))
}

/// One run's rewritten files, inside the table's folder.
fn run_rel(t: &TableRef, run: &str) -> String {
    format!("{}/{}", rel(t), rewrite::run_folder(run))
}

/// The table version a staging copy was made from (its commit's info).
async fn staged_from(staging: &DeltaTable) -> Option<u64> {
    let info = staging.history(Some(1)).next().await?.ok()?;
    info.info.get(STAGED_FROM_PROPERTY).and_then(Value::as_u64)
}

/// The start time a run id carries (milliseconds, base 36 before the dash).
fn run_started_ms(run: &str) -> Option<i64> {
    i64::from_str_radix(run.split('-').next()?, 36).ok()
}

/// Where the rows of a replace come from in its first pass.
enum FirstPass<'a> {
    /// The table itself, at the version read (a write-once rewrite).
    Table,
    /// The run's checked staging copy.
    Staging(&'a DeltaTable),
}

impl LakeBackend {
    /// The commit properties of a run's step (step, class, writer, and the run).
    fn run_props(
        &self,
        run: &TableRun,
        step: &Step,
        mut extra: Vec<(String, Value)>,
    ) -> CommitProperties {
        extra.push((RUN.to_string(), Value::String(run.id.clone())));
        self.commit_props_with(step, extra)
    }

    pub(super) async fn rewrite(
        &self,
        run: &TableRun,
        step: &Step,
        rw: &Rewrite,
        phase: RewritePhase,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        let t = &run.table;
        match phase {
            RewritePhase::WriteOnce => {
                let base = self.open_table(t).await?;
                self.replace(run, step, rw, base, FirstPass::Table, progress)
                    .await
            }
            RewritePhase::Stage => self.stage(run, step, rw, progress).await,
            RewritePhase::Replace => {
                let srel = staging_rel(t, &run.id);
                let at = self.root.display(&srel);
                if !self.root.is_table(&srel).await? {
                    return Err(BackendError::Refused {
                        message: format!(
                            "no staging copy of this run at {at}; nothing was replaced; plan and apply again"
                        ),
                    });
                }
                let staging = deltalake::open_table(self.root.url(&srel)?)
                    .await
                    .map_err(delta_err)?;
                let Some(from) = staged_from(&staging).await else {
                    return Err(BackendError::Refused {
                        message: format!(
                            "the staging copy at {at} does not say which version it was made from; nothing was replaced; apply again"
                        ),
                    });
                };
                let base = self.open_table_at(t, from).await?;
                self.replace(run, step, rw, base, FirstPass::Staging(&staging), progress)
                    .await
            }
            RewritePhase::ReplaceChecked => Err(BackendError::Unsupported {
                backend: delta_operator_core::plan::BackendKind::Lake,
                what:
                    "a replace from itself after a stage (the lake replaces from the staging copy)"
                        .into(),
            }),
            RewritePhase::DropStaging => {
                self.root.remove_folder(&staging_rel(t, &run.id)).await?;
                // no empty `.staging/<catalog>/<schema>/<table>` folders are left behind
                self.root.remove_empty_up_to(&staging_root(t), STAGING);
                Ok(StepOutcome::default())
            }
        }
    }

    /// Writes the converted rows into the staging table of this run (created
    /// only if absent) and checks them against the original, which is untouched.
    async fn stage(
        &self,
        run: &TableRun,
        step: &Step,
        rw: &Rewrite,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        let t = &run.table;
        let srel = staging_rel(t, &run.id);
        let at = self.root.display(&srel);
        if self.root.is_table(&srel).await? {
            return Err(BackendError::Refused {
                message: format!(
                    "a staging copy of this run already exists at {at}; nothing was staged"
                ),
            });
        }
        let source = self.open_table(t).await?;
        let from = source.version().unwrap_or(0) as u64;
        let baseline = rewrite::baseline_of(&source, None, rw).await?;
        (progress.note)(&format!("staging {} rows at {at}", baseline.rows));
        let target = rewrite::target_schema(rw, true)?;
        let config = source
            .snapshot()
            .map_err(delta_err)?
            .metadata()
            .configuration()
            .clone();
        let checks = Checks::for_table(&config, &target)?;
        let url = self.root.url_for_write(&srel)?;
        let mut sink = Sink::new(&url, "", target.clone(), rw.partitioned_by.clone())?;
        // safe casts: a value that does not convert becomes NULL in the staging copy, where the check finds it
        let spec = StreamSpec {
            select: rw,
            target,
            strict: false,
            converted: baseline.converted.iter().map(|(i, _, _)| *i).collect(),
            checks: &checks,
            crash_mid_stream: Some("during-stage"),
            expected_rows: u64::try_from(baseline.rows).ok(),
        };
        let written = rewrite::convert_into(&source, None, &spec, &mut sink, progress).await;
        if let Err(e) = written {
            self.root.remove_folder(&srel).await?;
            self.root.remove_empty_up_to(&staging_root(t), STAGING);
            return Err(match e {
                BackendError::CheckFailed { message } => BackendError::CheckFailed {
                    message: message
                        .replace("the table is untouched", "the original table is untouched"),
                },
                other => other,
            });
        }
        // the staging table's first commit names exactly these files; it fails if the table exists
        run.fence().await?;
        let schema = rewrite::target_struct(rw, true)?;
        deltalake::DeltaTable::try_from_url(url)
            .await
            .map_err(delta_err)?
            .create()
            .with_table_name(format!("{}_staging", t.table))
            .with_columns(schema.fields().cloned())
            .with_partition_columns(rw.partitioned_by.clone())
            .with_actions(sink.adds().iter().cloned().map(DeltaAction::Add))
            .with_commit_properties(self.run_props(
                run,
                step,
                vec![(STAGED_FROM_PROPERTY.to_string(), Value::from(from))],
            ))
            .await
            .map_err(delta_err)?;
        let staging = deltalake::open_table(self.root.url(&srel)?)
            .await
            .map_err(delta_err)?;
        if let Err(problem) = rewrite::check_staged(&staging, rw, &baseline).await {
            return Err(BackendError::CheckFailed {
                message: format!(
                    "{problem}; the original table is untouched; the staging copy is kept at {at} to inspect"
                ),
            });
        }
        failpoint("after-stage");
        Ok(StepOutcome {
            detail: Some(format!(
                "staged {} rows at {at} from version {from}, checked",
                baseline.rows
            )),
        })
    }

    /// Replaces the table with the rewritten rows in one commit conditioned on
    /// the version they were read from; appends that land meanwhile are
    /// converted too and the commit tried again (bounded), anything else ends
    /// it with nothing committed.
    async fn replace(
        &self,
        run: &TableRun,
        step: &Step,
        rw: &Rewrite,
        base: DeltaTable,
        first: FirstPass<'_>,
        progress: StepProgress<'_>,
    ) -> Result<StepOutcome, BackendError> {
        let target = rewrite::target_schema(rw, false)?;
        let config = base
            .snapshot()
            .map_err(delta_err)?
            .metadata()
            .configuration()
            .clone();
        let checks = Checks::for_table(&config, &target)?;
        let folder_rel = run_rel(&run.table, &run.id);
        let url = self.root.url_for_write(&folder_rel)?;
        let folder = rewrite::run_folder(&run.id);
        let mut sink = Sink::new(&url, &folder, target.clone(), rw.partitioned_by.clone())?;
        let pass = Pass {
            rw,
            target,
            checks: &checks,
            progress,
        };
        let done = self
            .write_and_commit(run, step, &pass, base, first, &folder_rel, &mut sink)
            .await;
        if done.is_err() {
            // nothing was replaced: the run's written files go (a crash instead leaves them to
            // the next plan's RemoveLeftovers)
            let _ = self.root.remove_folder(&folder_rel).await;
        }
        done
    }

    /// The first pass, then the commit conditioned on the version it read, converting what
    /// writers appended meanwhile (bounded rounds). Any error: nothing was committed.
    #[allow(clippy::too_many_arguments)]
    async fn write_and_commit(
        &self,
        run: &TableRun,
        step: &Step,
        pass: &Pass<'_>,
        base: DeltaTable,
        first: FirstPass<'_>,
        folder_rel: &str,
        sink: &mut Sink,
    ) -> Result<StepOutcome, BackendError> {
        let t = &run.table;
        let schema = rewrite::target_struct(pass.rw, false)?;
        let staged = matches!(first, FirstPass::Staging(_));
        let first_rows = match first {
            FirstPass::Table => first_pass_from_table(pass, &base, sink).await?,
            FirstPass::Staging(staging) => {
                first_pass_from_staging(pass, &base, staging, sink).await?
            }
        };
        failpoint("before-commit");
        // tests pause here (a stalled holder, or one whose lock is broken meanwhile)
        slow_failpoint("before-commit").await;
        let mut base = base;
        let mut caught_up = 0i64;
        for round in 0..=MAX_CATCH_UP_ROUNDS {
            let read = base.version().unwrap_or(0);
            // fenced: the lock is renewed now (or lost, and nothing is committed),
            // and every file the commit names is still there
            run.fence().await?;
            self.own_files_present(folder_rel, sink.adds().len())
                .await?;
            failpoint("after-fence");
            // tests pause here too: a holder stalled between its fence and its commit, whose
            // files a second apply removes meanwhile (the fencing commit of `remove_leftovers`
            // makes this commit conflict; the next round's fence then finds the lock lost)
            slow_failpoint("after-fence").await;
            match replace::commit(
                &base,
                &schema,
                &pass.rw.partitioned_by,
                sink.adds(),
                self.run_props(run, step, vec![]),
            )
            .await
            {
                Ok(version) => {
                    failpoint("after-replace");
                    let also = if caught_up > 0 {
                        format!(
                            ", plus {caught_up} rows appended meanwhile ({round} catch-up rounds)"
                        )
                    } else {
                        String::new()
                    };
                    let from = if staged { "replaced from" } else { "rewrote" };
                    return Ok(StepOutcome {
                        detail: Some(format!(
                            "{from} {first_rows} rows{also}; committed as version {version}, read from version {read}"
                        )),
                    });
                }
                Err(NotCommitted::Failed(e)) => return Err(e),
                Err(NotCommitted::Moved) if round == MAX_CATCH_UP_ROUNDS => break,
                Err(NotCommitted::Moved) => {}
            }
            let (newer, rows) = match self.catch_up(t, pass, &base, read, staged, sink).await {
                Ok(caught) => caught,
                Err(e) => {
                    // a run that lost its lock says so first, whatever landed meanwhile
                    run.fence().await?;
                    return Err(e);
                }
            };
            caught_up += rows;
            base = newer;
        }
        Err(BackendError::Refused {
            message: format!(
                "{t} took new commits in each of {MAX_CATCH_UP_ROUNDS} attempts to replace it; nothing was replaced. Pause its writers for a moment (or apply when they are quieter) and apply again"
            ),
        })
    }

    /// After a commit another writer beat: converts the files appended since `read` into the
    /// sink too (as the first pass did: strictly when writing once, with safe casts and the
    /// stage's check when staged) and returns the table at its newest version and the rows
    /// added. Anything but appends since `read` refuses: the next apply plans against it.
    async fn catch_up(
        &self,
        t: &TableRef,
        pass: &Pass<'_>,
        base: &DeltaTable,
        read: u64,
        staged: bool,
        sink: &mut Sink,
    ) -> Result<(DeltaTable, i64), BackendError> {
        let (latest, adds) = match replace::since(base, read).await? {
            Since::Other { version, what } => {
                return Err(BackendError::Transient(format!(
                    "version {version} of {t} landed while the rewrite ran ({what}); nothing was replaced, and the next apply plans against it"
                )));
            }
            Since::Appends { latest, adds } => (latest, adds),
        };
        let newer = self.open_table_at(t, latest).await?;
        if adds.is_empty() {
            // commits of no files (a fencing commit, a commitInfo of another writer): nothing
            // to convert, and the next round's fence says whether this run still holds the table
            return Ok((newer, 0));
        }
        (pass.progress.note)(&format!(
            "{} files appended since version {read}: converting them too",
            adds.len()
        ));
        let b = rewrite::baseline_of(&newer, Some(&adds), pass.rw).await?;
        let spec = pass.spec(pass.rw, !staged, &b, None);
        let stats = rewrite::convert_into(&newer, Some(&adds), &spec, sink, pass.progress)
            .await
            .map_err(untouched)?;
        if let Some(problem) =
            rewrite::compare(pass.rw, &b, stats.rows, &stats.non_null, &stats.present)
        {
            return Err(BackendError::CheckFailed {
                message: format!("rows appended meanwhile: {problem}; the table is untouched"),
            });
        }
        Ok((newer, stats.rows))
    }

    /// The run's rewritten files are all still in its folder (nobody took them
    /// for leftovers): a commit naming missing files would leave a table no
    /// reader can open.
    async fn own_files_present(&self, folder_rel: &str, adds: usize) -> Result<(), BackendError> {
        let present = self
            .root
            .list_files(folder_rel)
            .await?
            .iter()
            .filter(|(name, _)| name.ends_with(".parquet"))
            .count();
        if present < adds {
            return Err(BackendError::LockLost(format!(
                "{} holds {present} of the {adds} files this rewrite wrote (something removed them while it ran); nothing was committed: plan and apply again",
                self.root.display(folder_rel)
            )));
        }
        Ok(())
    }

    /// What interrupted runs left for this table: staging copies and rewritten
    /// files never committed. The run holding the table's lock right now is
    /// not interrupted, so its files are not listed.
    pub(super) async fn leftovers(
        &self,
        t: &TableRef,
        table: &DeltaTable,
    ) -> Result<Vec<Leftover>, BackendError> {
        let staging_runs = self.root.folders_under(&staging_root(t)).await?;
        let run_folders: Vec<String> = self
            .root
            .folders_under(&rel(t))
            .await?
            .into_iter()
            .filter(|f| f.starts_with(RUN_FOLDER_PREFIX))
            .collect();
        if staging_runs.is_empty() && run_folders.is_empty() {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        for run in staging_runs {
            // a run that may still be alive (the holder, a fresh heartbeat, its
            // process still here) keeps its files: it could wake up and commit
            if lock::run_may_be_alive(&self.root, t, &run, run_started_ms(&run)).await? {
                continue;
            }
            let files = self.root.list_files(&staging_rel(t, &run)).await?;
            out.push(Leftover {
                kind: LeftoverKind::StagingCopy,
                run: run.clone(),
                location: self.root.display(&staging_rel(t, &run)),
                files: files.len() as u64,
                bytes: files.iter().map(|(_, s)| s).sum(),
            });
        }
        if !run_folders.is_empty() {
            let snap = table.snapshot().map_err(delta_err)?;
            let live: HashSet<String> = snap
                .log_data()
                .iter()
                .filter_map(|f| f.path().split('/').next().map(str::to_string))
                .collect();
            for folder in run_folders {
                let run = folder.trim_start_matches(RUN_FOLDER_PREFIX).to_string();
                if live.contains(&folder)
                    || lock::run_may_be_alive(&self.root, t, &run, run_started_ms(&run)).await?
                    || self.committed(t, table, &run).await?
                {
                    continue;
                }
                let files = self.root.list_files(&run_rel(t, &run)).await?;
                out.push(Leftover {
                    kind: LeftoverKind::UncommittedFiles,
                    run,
                    location: self.root.display(&format!("{}/{folder}", rel(t))),
                    files: files.len() as u64,
                    bytes: files.iter().map(|(_, s)| s).sum(),
                });
            }
        }
        Ok(out)
    }

    /// Whether some commit of the table was written by `run` (its files then
    /// belong to the table's history, for time travel, until a VACUUM).
    /// Looks back only to the run's start; remembered once found.
    async fn committed(
        &self,
        t: &TableRef,
        table: &DeltaTable,
        run: &str,
    ) -> Result<bool, BackendError> {
        let key = (t.clone(), run.to_string());
        if self
            .committed_runs
            .lock()
            .map(|c| c.contains(&key))
            .unwrap_or(false)
        {
            return Ok(true);
        }
        let since = run_started_ms(run).unwrap_or(0);
        let mut history = std::pin::pin!(table.history(None));
        while let Some(info) = history.next().await {
            let info = info.map_err(delta_err)?;
            if info.info.get(RUN).and_then(Value::as_str) == Some(run) {
                if let Ok(mut c) = self.committed_runs.lock() {
                    c.insert(key);
                }
                return Ok(true);
            }
            if info.timestamp.is_some_and(|ts| ts < since - 60_000) {
                break;
            }
        }
        Ok(false)
    }

    /// Removes what the plan listed as left over, if it still is (read again under the lock).
    /// Before another run's rewritten files go, a fencing commit conditioned on the version
    /// they were judged at (`fence.rs`): a paused holder of that run can then no longer commit
    /// them. If a commit landed meanwhile, nothing is removed and they are judged again.
    pub(super) async fn remove_leftovers(
        &self,
        run: &TableRun,
        step: &Step,
    ) -> Result<StepOutcome, BackendError> {
        let t = &run.table;
        let mut now = None;
        for _ in 0..FENCE_ATTEMPTS {
            let table = self.open_table(t).await?;
            let found = self.leftovers(t, &table).await?;
            let fenced: Vec<String> = found
                .iter()
                .filter(|l| matches!(l.kind, LeftoverKind::UncommittedFiles))
                .map(|l| l.run.clone())
                .collect();
            if fenced.is_empty() || !fencing_enabled() {
                now = Some(found);
                break;
            }
            // the fencing commit, as every commit, only while this run holds the table
            run.fence().await?;
            let props = self.run_props(run, step, vec![]);
            match fence::commit(&table, &fenced, props).await {
                Ok(_) => {
                    now = Some(found);
                    break;
                }
                Err(NotCommitted::Failed(e)) => return Err(e),
                // a commit landed after the version read: perhaps the run committed them
                Err(NotCommitted::Moved) => {}
            }
        }
        let Some(now) = now else {
            return Err(fence::moved_message(t, FENCE_ATTEMPTS));
        };
        let mut removed = Vec::new();
        for l in &now {
            match l.kind {
                LeftoverKind::StagingCopy => {
                    self.root.remove_folder(&staging_rel(t, &l.run)).await?
                }
                LeftoverKind::UncommittedFiles => {
                    self.root.remove_folder(&run_rel(t, &l.run)).await?
                }
            }
            lock::forget_run(&self.root, t, &l.run).await;
            removed.push(format!("{} ({} files)", l.location, l.files));
        }
        // as after a staged apply: no empty `.staging/<catalog>/<schema>/<table>` folders left
        self.root.remove_empty_up_to(&staging_root(t), STAGING);
        Ok(StepOutcome {
            detail: Some(if removed.is_empty() {
                "nothing was left over any more".into()
            } else {
                format!("removed {}", removed.join(", "))
            }),
        })
    }
}

/// How often the leftovers are listed and fenced again when commits keep landing meanwhile.
const FENCE_ATTEMPTS: usize = 5;

/// Debug builds: `DELTA_OPERATOR_TEST_NO_FENCING_COMMIT=1` removes leftovers without the
/// fencing commit (the behaviour before it), so a test can show it fails without it.
fn fencing_enabled() -> bool {
    #[cfg(debug_assertions)]
    if std::env::var("DELTA_OPERATOR_TEST_NO_FENCING_COMMIT").is_ok_and(|v| v == "1") {
        return false;
    }
    true
}

/// What every pass of one replace shares: the rewrite, the schema it writes, the table's
/// checks, and where progress goes.
struct Pass<'a> {
    rw: &'a Rewrite,
    target: deltalake::arrow::datatypes::SchemaRef,
    checks: &'a Checks,
    progress: StepProgress<'a>,
}

impl<'a> Pass<'a> {
    /// The stream of one pass: `select` read from the source, converted strictly (a value a
    /// cast cannot carry fails the pass) or not, the converted columns of `baseline` tracked.
    fn spec(
        &self,
        select: &'a Rewrite,
        strict: bool,
        baseline: &rewrite::Baseline,
        crash_mid_stream: Option<&'static str>,
    ) -> StreamSpec<'a> {
        StreamSpec {
            select,
            target: self.target.clone(),
            strict,
            converted: baseline.converted.iter().map(|(i, _, _)| *i).collect(),
            checks: self.checks,
            crash_mid_stream,
            expected_rows: u64::try_from(baseline.rows).ok(),
        }
    }
}

/// A write-once rewrite's first pass: every row of the version read, converted strictly and
/// compared with the baseline (rows, NULLs gained). Returns the rows written.
async fn first_pass_from_table(
    pass: &Pass<'_>,
    base: &DeltaTable,
    sink: &mut Sink,
) -> Result<i64, BackendError> {
    let baseline = rewrite::baseline_of(base, None, pass.rw).await?;
    (pass.progress.note)(&format!("rewriting {} rows in one pass", baseline.rows));
    let spec = pass.spec(pass.rw, true, &baseline, Some("during-replace"));
    let stats = rewrite::convert_into(base, None, &spec, sink, pass.progress)
        .await
        .map_err(untouched)?;
    if let Some(problem) = rewrite::compare(
        pass.rw,
        &baseline,
        stats.rows,
        &stats.non_null,
        &stats.present,
    ) {
        return Err(BackendError::CheckFailed {
            message: format!("{problem}; the table is untouched"),
        });
    }
    Ok(stats.rows)
}

/// A staged rewrite's first pass: the checked staging copy, copied by name. The copy must hold
/// exactly the rows of the version it was made from, and all of them must be copied.
async fn first_pass_from_staging(
    pass: &Pass<'_>,
    base: &DeltaTable,
    staging: &DeltaTable,
    sink: &mut Sink,
) -> Result<i64, BackendError> {
    let original = rewrite::row_count(base).await?;
    let staged_rows = rewrite::row_count(staging).await?;
    if staged_rows != original {
        return Err(BackendError::Refused {
            message: format!(
                "the staging copy holds {staged_rows} rows but version {} of the table holds {original}; nothing was replaced; apply again to stage it anew",
                base.version().unwrap_or(0)
            ),
        });
    }
    (pass.progress.note)(&format!(
        "replacing the table from {staged_rows} staged rows"
    ));
    let copy = rewrite::passthrough(pass.rw);
    let whole = rewrite::Baseline {
        rows: staged_rows,
        ..Default::default()
    };
    let spec = pass.spec(&copy, true, &whole, Some("during-replace"));
    let stats = rewrite::convert_into(staging, None, &spec, sink, pass.progress)
        .await
        .map_err(untouched)?;
    if stats.rows != original {
        return Err(BackendError::CheckFailed {
            message: format!(
                "{} rows were copied from the staging copy, expected {original}; the table is untouched",
                stats.rows
            ),
        });
    }
    Ok(stats.rows)
}

fn untouched(e: BackendError) -> BackendError {
    match e {
        BackendError::CheckFailed { message } if !message.contains("untouched") => {
            BackendError::CheckFailed {
                message: format!("{message}; the table is untouched"),
            }
        }
        other => other,
    }
}
