//! Why a resource is where it is: every reason the controllers write into the
//! Ready, Reconciling and Stalled conditions. Each reason fixes its kstatus
//! phase, so the same situation reads the same for tables and schemas, and the
//! Argo CD health checks (gitops/argocd/health/*.lua, the table-shaped kinds made
//! from resource.lua.in by generate.sh) match reasons from a
//! block generated from this enum (`lua_block`; a test keeps the files current).

use std::fmt;

use delta_operator_core::plan::rules::Rule;

/// Where a reason puts a resource, in kstatus terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Ready=True: the live table matches the spec.
    InSync,
    /// Reconciling=True: steps run, or something that arrives by itself is awaited.
    Progressing,
    /// Writes are off (paused, policy Observe): neither reconciling nor stalled.
    Holding,
    /// Stalled=True: a person must act (approve, fix the spec, grant a permission).
    Stalled,
}

/// A condition reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The live table matches the spec.
    InSync,
    /// Policy Observe: drift is shown, never applied.
    Observing,
    /// `delta-operator.io/paused: "true"`.
    Paused,
    /// The resource is not in the operator's cache yet.
    NotCached,
    /// The table's DeltaSchema is not applied yet.
    SchemaNotFound,
    /// A stopped SQL warehouse is starting.
    WarehouseStarting,
    /// Another apply (a CLI run) holds the table.
    Locked,
    /// The table moved between plan and apply; planning again.
    PlanStale,
    /// The apply lock was lost mid-apply; the rest runs next time.
    LeaseLost,
    /// Reading the live tables failed in a way worth retrying (network, storage).
    ReadRetrying,
    /// A table it references by foreign key is not declared or not Ready yet.
    WaitingForParent,
    /// A view, function or table it depends on in the dependency graph (a relation a
    /// view's query reads, a function it calls) is declared and not Ready yet: named.
    WaitingForDependency,
    /// The table does not exist and the spec's scope does not create it: it is
    /// governed once the tool that owns it creates it (requeued, never Stalled).
    Deferred,
    /// Steps of an approved plan are running (status.apply says which).
    Applying,
    /// An apply was cut short (shutdown, a lost pod); the next reconcile re-plans and resumes.
    Interrupted,
    /// A plan waits for `delta-operator.io/approve=<plan id>`.
    ApprovalRequired,
    /// The spec breaks a rule validation checks.
    InvalidSpec,
    /// The schema names a target the operator config does not have.
    UnknownTarget,
    /// The target could not be opened when the operator started.
    TargetUnavailable,
    /// The target's tenancy rules do not allow this namespace or schema.
    Forbidden,
    /// Reading the live tables failed and retrying will not help.
    ReadFailed,
    /// A step failed.
    ApplyFailed,
    /// An apply step ended the operator process (out of memory, killed) so many
    /// times in a row (`--max-step-interruptions`) that it is not resumed again
    /// until a person asks for a retry.
    CrashLoop,
    /// Dropping a deleted resource's table failed.
    DeleteFailed,
    /// Not planned: a table it references by foreign key was refused.
    Blocked,
    /// A DeltaTable it references by foreign key failed (is Stalled): named, transitively.
    ParentFailed,
    /// `driftPolicy: Fail`: the live table differs from the spec and the plan is
    /// not being applied (policy Observe or Manual, a pause, an approval awaited).
    DriftDetected,
    /// The planner refused a change: the rule's name is the reason.
    Refused(Rule),
}

impl Reason {
    /// Every reason but `Refused`, whose rules are `Rule::ALL`.
    pub const FIXED: [Reason; 27] = [
        Reason::InSync,
        Reason::Observing,
        Reason::Paused,
        Reason::NotCached,
        Reason::SchemaNotFound,
        Reason::WarehouseStarting,
        Reason::Locked,
        Reason::PlanStale,
        Reason::LeaseLost,
        Reason::ReadRetrying,
        Reason::WaitingForParent,
        Reason::WaitingForDependency,
        Reason::Deferred,
        Reason::Applying,
        Reason::Interrupted,
        Reason::ApprovalRequired,
        Reason::InvalidSpec,
        Reason::UnknownTarget,
        Reason::TargetUnavailable,
        Reason::Forbidden,
        Reason::ReadFailed,
        Reason::ApplyFailed,
        Reason::CrashLoop,
        Reason::DeleteFailed,
        Reason::Blocked,
        Reason::ParentFailed,
        Reason::DriftDetected,
    ];

    pub fn phase(self) -> Phase {
        use Reason::*;
        match self {
            InSync => Phase::InSync,
            Observing | Paused => Phase::Holding,
            NotCached | SchemaNotFound | WarehouseStarting | Locked | PlanStale | LeaseLost
            | ReadRetrying | WaitingForParent | WaitingForDependency | Deferred | Applying
            | Interrupted => Phase::Progressing,
            ApprovalRequired | InvalidSpec | UnknownTarget | TargetUnavailable | Forbidden
            | ReadFailed | ApplyFailed | CrashLoop | DeleteFailed | Blocked | ParentFailed
            | DriftDetected | Refused(_) => Phase::Stalled,
        }
    }

    /// Stalled, but waiting for a decision rather than a fix: Argo CD shows it
    /// Suspended, not Degraded.
    pub fn awaits_approval(self) -> bool {
        self == Reason::ApprovalRequired
    }

    /// Every reason, `Refused` once per rule.
    pub fn all() -> impl Iterator<Item = Reason> {
        Reason::FIXED
            .into_iter()
            .chain(Rule::ALL.into_iter().map(Reason::Refused))
    }

    /// The generated block at the top of each Argo CD health check.
    pub fn lua_block() -> String {
        let names = |phase: Phase| {
            Reason::all()
                .filter(|r| r.phase() == phase)
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let awaiting: Vec<String> = Reason::all()
            .filter(|r| r.awaits_approval())
            .map(|r| format!("{r} = true"))
            .collect();
        format!(
            "{LUA_BEGIN}\n\
             -- Progressing: {}\n\
             -- Holding: {}\n\
             -- Stalled: {}\n\
             -- Stalled reasons that wait for an approval, not a fix (Suspended, not Degraded):\n\
             local AWAITING_APPROVAL = {{{}}}\n\
             {LUA_END}\n",
            names(Phase::Progressing),
            names(Phase::Holding),
            names(Phase::Stalled),
            awaiting.join(", ")
        )
    }
}

/// The first line of the generated block.
pub const LUA_BEGIN: &str = "-- BEGIN generated from the Reason enum (crates/api/src/reason.rs): \
do not edit; DELTA_OPERATOR_BLESS=1 cargo test -p delta-operator-api rewrites it";
/// The last line of the generated block.
pub const LUA_END: &str = "-- END generated";

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Refused(rule) => write!(f, "{rule}"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_name() {
        let names: Vec<String> = Reason::all().map(|r| r.to_string()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(
            Reason::Refused(Rule::OwnedByAnotherResource).to_string(),
            "OwnedByAnotherResource"
        );
        assert_eq!(Reason::NotCached.phase(), Phase::Progressing);
        assert_eq!(Reason::WaitingForDependency.phase(), Phase::Progressing);
        assert_eq!(
            Reason::WaitingForDependency.to_string(),
            "WaitingForDependency"
        );
        assert_eq!(
            Reason::Refused(Rule::RewriteRefused).phase(),
            Phase::Stalled
        );
    }

    /// The Argo CD checks carry the block this enum generates: the sources
    /// (the template of the table-shaped kinds and deltaschema.lua) are
    /// rewritten under DELTA_OPERATOR_BLESS=1; the files generate.sh makes
    /// from the template must carry it too (run generate.sh after a bless).
    #[test]
    fn the_argocd_health_checks_carry_the_generated_reasons() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gitops/argocd/health");
        let block = Reason::lua_block();
        let bless = std::env::var("DELTA_OPERATOR_BLESS").is_ok_and(|v| v == "1");
        for (file, source) in [
            ("resource.lua.in", true),
            ("deltaschema.lua", true),
            ("deltatable.lua", false),
            ("deltaview.lua", false),
            ("deltafunction.lua", false),
            ("deltavolume.lua", false),
        ] {
            let path = dir.join(file);
            let lua = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let (Some(start), Some(end)) = (lua.find(LUA_BEGIN), lua.find(LUA_END)) else {
                panic!("{} has no generated block ({LUA_BEGIN})", path.display());
            };
            let end = end + LUA_END.len() + 1;
            if lua[start..end] == block {
                continue;
            }
            if bless && source {
                let updated = format!("{}{block}{}", &lua[..start], &lua[end..]);
                std::fs::write(&path, updated).expect("writing the Lua file");
                eprintln!(
                    "rewrote {}; now run gitops/argocd/generate.sh",
                    path.display()
                );
            } else if source {
                panic!(
                    "{} is stale: rerun with DELTA_OPERATOR_BLESS=1, then gitops/argocd/generate.sh\n--- expected\n{block}--- found\n{}",
                    path.display(),
                    &lua[start..end]
                );
            } else if bless {
                eprintln!(
                    "{} is stale: now run gitops/argocd/generate.sh (it is made from resource.lua.in)",
                    path.display()
                );
            } else {
                panic!(
                    "{} is stale: run gitops/argocd/generate.sh (it is made from resource.lua.in)",
                    path.display()
                );
            }
        }
    }
}
