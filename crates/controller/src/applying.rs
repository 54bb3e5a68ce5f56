//! The one way a reconcile changes a table: `Context::run_apply` runs the
//! executor for exactly one plan under the target's Lease, showing its
//! progress in status while it runs.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kube::Resource;

use crate::decide::{self, Seen};
use crate::{ApplyProgress, Context, Error, lock, table};
use delta_operator_api::spec::crd::ApplyStatus;
use delta_operator_backend::BackendError;
use delta_operator_backend::apply::{self, ApplyError, ApplyReport};
use delta_operator_core::plan::Plan;
use delta_operator_targets::AnyBackend;

/// How long a reconcile waits for a table another apply (a CLI run) holds before requeueing.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// How often status.apply's "running 14m" is refreshed while a step runs.
const APPLY_REFRESH: Duration = Duration::from_secs(15);
/// How often the warehouse statements a step runs are compared with status.apply.statements.
const STATEMENTS_EVERY: Duration = Duration::from_secs(1);

/// What the executor made of a plan: the plan as it ran and its report, or why it stopped.
pub type Applied = Result<(Plan, ApplyReport), ApplyError>;

/// How an apply a reconcile started ended, with its progress as it ended.
// one per apply, handed back once: the size of its larger variant costs nothing
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum ApplyEnd {
    /// The executor returned (whether every step ran or not: `result` says).
    Finished {
        result: Applied,
        progress: ApplyProgress,
    },
    /// A shutdown left it: its step did not end within the shutdown grace. The
    /// progress names the statements asked to cancel, which may still run.
    LeftAtShutdown { progress: ApplyProgress },
}

impl Context {
    /// Runs the executor for exactly `plan` (its id, the approval the resource
    /// carries), holding the target's Lease: the one way a reconcile changes a
    /// table, whether it applies a spec, drops a deleted resource's table or a
    /// strict schema's orphans.
    ///
    /// `show` writes the apply's progress into status: before the first step,
    /// at every step boundary and every APPLY_REFRESH while a step runs.
    /// `earlier` is an apply that was cut short (its restore points are kept).
    /// How it ended comes back with the progress as it ended (`ApplyEnd`).
    #[allow(clippy::too_many_arguments)]
    pub async fn run_apply<K, F, Fut, S, SFut>(
        &self,
        obj: &K,
        backend: &AnyBackend,
        target: &str,
        plan: &Plan,
        seen: &Seen<'_>,
        read_plan: F,
        earlier: Option<&ApplyStatus>,
        show: S,
    ) -> Result<ApplyEnd, Error>
    where
        K: Resource<DynamicType = ()>,
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Plan, BackendError>>,
        S: Fn(ApplyProgress) -> SFut,
        SFut: std::future::Future<Output = ()>,
    {
        let limit = self.config.targets.get(target);
        let limit = limit.map_or(1, |t| t.max_concurrent_applies);
        let written = lock::Written::by(plan);
        // sharded, each shard of a target has its own apply Lease: two replicas apply
        // different shards' tables of one target at once
        let shard = self.shards.of(obj);
        let lease_key = if self.shards.sharded() {
            format!("{target}-shard-{shard}")
        } else {
            target.to_string()
        };
        let lock = self.locks.acquire(&lease_key, limit, &written).await?;
        let alive = lock.flag();
        let shards = self.shards.clone();
        self.publish_all(obj, &[decide::apply_started(plan)]).await;
        let stopping = self.shutting_down.clone();
        // no new step after a shutdown began: the one running ends (or is cancelled), the rest waits
        let held = shards.clone();
        let may_continue = move || {
            alive.load(Ordering::SeqCst) && !stopping.load(Ordering::SeqCst) && held.holds(shard)
        };
        let (progress, mut changes) =
            tokio::sync::watch::channel(ApplyProgress::new(plan, &table::now(), earlier));
        let on_event = |e: apply::Event<'_>| {
            progress.send_if_modified(|p| p.record(&e, &table::now()));
        };
        // before every step the Lease is read back: a process that stalled past its
        // expiry does not run a step on a target another operator now applies to
        let lease = lock.fence();
        let fence = move || -> futures::future::BoxFuture<'static, Result<(), String>> {
            let lease = lease.clone();
            let shards = shards.clone();
            Box::pin(async move {
                // and the shard is still this replica's: one given back or lost is another's now
                if !shards.holds(shard) {
                    return Err(format!(
                        "this replica no longer holds shard {shard}; the replica holding it goes on"
                    ));
                }
                lease.check().await
            })
        };
        let opts = apply::Options {
            policy: seen.policy,
            lock_wait: LOCK_WAIT,
            on_event: &on_event,
            may_continue: &may_continue,
            fence: Some(&fence),
        };
        // the statements this apply starts, told apart from other applies' on the target
        let mine = delta_operator_backend::StatementLog::default();
        let run = delta_operator_backend::APPLY_STATEMENTS.scope(
            mine.clone(),
            apply::apply_planned(
                backend,
                read_plan,
                Some(plan.id.as_str()),
                // a spent approval approves nothing, here as in decide
                seen.in_force(),
                &opts,
            ),
        );
        tokio::pin!(run);
        let first = changes.borrow_and_update().clone();
        show(first).await;
        let mut refresh = tokio::time::interval(APPLY_REFRESH);
        refresh.tick().await;
        let mut statements = tokio::time::interval(STATEMENTS_EVERY);
        let give_up = self.shutdown_grace_over();
        tokio::pin!(give_up);
        let result = loop {
            tokio::select! {
                r = &mut run => break Some(r),
                // a step still running past the grace is left (its statements were asked to
                // cancel; a lake step is cut like a kill, which its commits are made to survive)
                _ = &mut give_up => break None,
                Ok(()) = changes.changed() => {
                    let now = changes.borrow_and_update().clone();
                    show(now).await;
                }
                _ = refresh.tick() => {
                    let now = changes.borrow().clone();
                    show(now).await;
                }
                // what a kill would leave running, named in status (shown by `changes`)
                _ = statements.tick() => {
                    progress.send_if_modified(|p| p.running(mine.mine(backend.writes_running())));
                }
            }
        };
        lock.release().await;
        let progress = changes.borrow().clone();
        Ok(match result {
            Some(result) => ApplyEnd::Finished { result, progress },
            None => self.left_at_shutdown(target, &mine, progress),
        })
    }

    /// An apply left at the shutdown grace: what it had running was asked to
    /// cancel, and its progress names those statements too.
    fn left_at_shutdown(
        &self,
        target: &str,
        mine: &delta_operator_backend::StatementLog,
        mut progress: ApplyProgress,
    ) -> ApplyEnd {
        let mut names = progress.status().statements.clone();
        for id in mine.mine(self.cancelled_on(target)) {
            if !names.contains(&id) {
                names.push(id);
            }
        }
        progress.running(names);
        ApplyEnd::LeftAtShutdown { progress }
    }

    /// Ends once a shutdown began and the grace after it passed.
    fn shutdown_grace_over(&self) -> impl std::future::Future<Output = ()> + use<> {
        let stopping = self.shutting_down.clone();
        let grace = self.shutdown_grace;
        async move {
            while !stopping.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            tokio::time::sleep(grace).await;
        }
    }
}
