//! The decisions without I/O: plans, annotations and previous statuses in, statuses and events out.

use super::status::cut_text;
use super::*;
use delta_operator_api::reason::Phase;
use delta_operator_api::spec::crd::ApprovalState;
use delta_operator_backend::BackendError;
use delta_operator_backend::apply::StepReport;
use delta_operator_backend::apply::{ApplyError, ApplyReport, StepStatus};
use std::collections::BTreeMap;

fn cut_short() -> ApplyStatus {
    ApplyStatus {
        plan_id: "p1".into(),
        started_at: "t0".into(),
        step: 2,
        of: 3,
        current: Some("2/3 REPLACE TABLE (from staging)".into()),
        step_started_at: Some("t1".into()),
        restore_points: vec!["main.sales.orders@4".into()],
        statements: vec![],
        interruptions: 0,
    }
}

#[test]
fn a_step_that_ends_the_process_max_times_in_a_row_is_stalled_not_resumed() {
    // the first death of a step: Interrupted (resumed), counted once
    let first = process_ended(&cut_short(), 3, "orders");
    assert_eq!(first.reason, Reason::Interrupted);
    assert_eq!(first.apply.as_ref().unwrap().interruptions, 1);
    // the resumed apply, re-planned, runs the same step under another number: it carries the count
    let resumed = ApplyStatus {
        plan_id: "p2".into(),
        step: 1,
        of: 2,
        current: Some("1/2 REPLACE TABLE (from staging)".into()),
        ..first.apply.clone().unwrap()
    };
    assert_eq!(
        carried_interruptions(first.apply.as_ref(), "REPLACE TABLE (from staging)"),
        1
    );
    let second = process_ended(
        &ApplyStatus {
            interruptions: 1,
            ..resumed.clone()
        },
        3,
        "orders",
    );
    assert_eq!(second.reason, Reason::Interrupted);
    assert_eq!(second.apply.as_ref().unwrap().interruptions, 2);
    // the third death in a row: Stalled, saying what happened, what to do, how to retry
    let third = process_ended(second.apply.as_ref().unwrap(), 3, "orders");
    assert_eq!(third.reason, Reason::CrashLoop);
    assert_eq!(
        third.reason.phase(),
        delta_operator_api::reason::Phase::Stalled
    );
    let at = third.apply.as_ref().unwrap();
    assert_eq!(at.interruptions, 3);
    assert_eq!(at.restore_points, cut_short().restore_points, "kept");
    for said in [
        "step 1/2 REPLACE TABLE (from staging) of plan p2",
        "cut short 3 times in a row",
        "out of memory",
        "resources.limits.memory",
        "Spark Connect",
        "main.sales.orders@4",
        "kubectl annotate deltatable orders reconcile.fluxcd.io/requestedAt=",
    ] {
        assert!(third.message.contains(said), "{said}: {}", third.message);
    }
    // with a higher limit the same death is resumed again
    assert_eq!(
        process_ended(second.apply.as_ref().unwrap(), 4, "orders").reason,
        Reason::Interrupted
    );
    // a limit of 1 stalls at the first death; a death before any step never stalls
    assert_eq!(
        process_ended(&cut_short(), 1, "orders").reason,
        Reason::CrashLoop
    );
    let before_first = ApplyStatus {
        step: 0,
        current: None,
        interruptions: 5,
        ..cut_short()
    };
    assert_eq!(
        process_ended(&before_first, 1, "orders").reason,
        Reason::Interrupted
    );
}

#[test]
fn interruptions_carry_only_into_the_same_step() {
    let died = ApplyStatus {
        interruptions: 2,
        ..cut_short()
    };
    assert_eq!(
        step_title("2/3 REPLACE TABLE (from staging)"),
        "REPLACE TABLE (from staging)"
    );
    assert_eq!(step_title("ADD COLUMNS (note)"), "ADD COLUMNS (note)");
    assert_eq!(
        carried_interruptions(Some(&died), "REPLACE TABLE (from staging)"),
        2
    );
    // another step (the plan changed, or the step is past): counted from nothing
    assert_eq!(carried_interruptions(Some(&died), "ADD COLUMNS (note)"), 0);
    assert_eq!(
        carried_interruptions(None, "REPLACE TABLE (from staging)"),
        0
    );
    let not_started = ApplyStatus {
        current: None,
        ..died
    };
    assert_eq!(
        carried_interruptions(Some(&not_started), "REPLACE TABLE (from staging)"),
        0
    );
}

#[test]
fn a_crash_loop_is_retried_on_a_new_reconcile_request_or_a_changed_spec() {
    // the status echoed the request and saw the generation: nothing new
    assert!(!retry_requested(Some("1"), Some("1"), Some(3), Some(3)));
    assert!(!retry_requested(None, None, Some(3), Some(3)));
    // kubectl annotate … reconcile.fluxcd.io/requestedAt=<new> (or flux reconcile)
    assert!(retry_requested(Some("2"), Some("1"), Some(3), Some(3)));
    assert!(retry_requested(Some("1"), None, Some(3), Some(3)));
    // the spec changed
    assert!(retry_requested(None, None, Some(4), Some(3)));
}

#[test]
fn a_step_left_at_shutdown_names_what_may_still_run() {
    let r = abandoned(&cut_short(), vec!["01ef-stmt".into()]);
    assert_eq!(r.reason, Reason::Interrupted);
    assert!(
        r.message.contains("01ef-stmt") && r.message.contains("may still be running"),
        "{}",
        r.message
    );
    assert_eq!(
        r.apply.as_ref().unwrap().statements,
        vec!["01ef-stmt".to_string()]
    );
    let w = still_running(&cut_short(), "01ef-stmt", "RUNNING", "main.sales.orders");
    assert_eq!(w.reason, Reason::Interrupted);
    assert!(
        w.message.contains("still RUNNING")
            && w.message.contains("nothing runs on main.sales.orders"),
        "{}",
        w.message
    );
}

#[test]
fn a_shutdown_mid_apply_is_interrupted_not_failed_and_says_where() {
    let failed = Report::new(Reason::ApplyFailed, "step 2 failed: statement cancelled");
    let r = interrupted(failed, &cut_short());
    assert_eq!(r.reason, Reason::Interrupted);
    assert_eq!(
        r.reason.phase(),
        delta_operator_api::reason::Phase::Progressing
    );
    assert!(
        r.message
            .contains("at step 2/3 REPLACE TABLE (from staging) of plan p1")
            && r.message.contains("main.sales.orders@4"),
        "{}",
        r.message
    );
    assert_eq!(r.apply, Some(cut_short()));
    // an apply that finished before the shutdown took hold is simply done
    let done = interrupted(Report::new(Reason::InSync, "ok"), &cut_short());
    assert_eq!(done.reason, Reason::InSync);
}

#[test]
fn restore_points_of_an_apply_cut_short_stay_in_last_applied() {
    let last = keep_restore_points(None, &cut_short(), "t9");
    assert_eq!(last.restore_points, vec!["main.sales.orders@4".to_string()]);
    assert_eq!(last.steps_applied, 1);
    let newer = LastApplied {
        plan_id: "p2".into(),
        time: "t9".into(),
        steps_applied: 1,
        restore_points: vec!["main.sales.orders@6".into(), "main.sales.orders@4".into()],
        undo_windows: vec![],
    };
    let last = keep_restore_points(Some(newer), &cut_short(), "t9");
    assert_eq!(last.plan_id, "p2");
    assert_eq!(
        last.restore_points,
        vec![
            "main.sales.orders@4".to_string(),
            "main.sales.orders@6".to_string()
        ]
    );
}

use delta_operator_core::model::{
    DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedColumn, ObservedTable, TableRef,
};
use delta_operator_core::plan::{Capabilities, plan};

fn caps() -> Capabilities {
    Capabilities::lake()
}

fn desired(columns: &[&str]) -> DesiredTable {
    DesiredTable::new(
        TableRef::new("main", "sales", "orders"),
        "team/orders",
        columns
            .iter()
            .map(|c| DesiredColumn::new(c, DataType::Long, true))
            .collect(),
    )
}

fn observed(columns: &[&str]) -> ObservedTable {
    ObservedTable {
        properties: BTreeMap::from([(OWNER_PROPERTY.to_string(), "team/orders".to_string())]),
        version: Some(3),
        ..ObservedTable::new(
            TableRef::new("main", "sales", "orders"),
            columns
                .iter()
                .map(|c| ObservedColumn::new(c, DataType::Long, true))
                .collect(),
        )
    }
}

fn seen<'a>() -> Seen<'a> {
    Seen {
        kind: "deltatable",
        namespace: "team",
        name: "orders",
        policy: Policy::Auto,
        drift_policy: DriftPolicy::Report,
        approval: None,
        spent: None,
        paused: false,
        previous_plan: None,
        was_in_sync: false,
        context: None,
    }
}

/// The report is announced as a Warning Event (its outcome's, `Context::announce`),
/// and notes no second event of its own saying the same.
fn warned(r: &Report) -> bool {
    crate::outcome::announced_as(r.reason) == Some(kube::runtime::events::EventType::Warning)
        && r.events.iter().all(|e| e.message != r.message)
}

fn report(next: Next) -> Report {
    match next {
        Next::Report(r) => r,
        Next::Apply { .. } => panic!("expected a status, got apply"),
    }
}

#[test]
fn a_matching_table_is_in_sync_and_announces_nothing() {
    let p = plan(&[desired(&["id"])], &[observed(&["id"])], &[], &caps());
    let r = report(decide(&p, &seen()));
    assert_eq!(r.reason, Reason::InSync);
    assert!(r.events.is_empty() && r.drifted.is_none() && r.plan.is_none());
}

#[test]
fn an_additive_change_is_applied_and_a_destructive_one_waits_for_its_id() {
    let add = plan(
        &[desired(&["id", "note"])],
        &[observed(&["id"])],
        &[],
        &caps(),
    );
    match decide(&add, &seen()) {
        Next::Apply { events } => {
            assert_eq!(events.len(), 1);
            assert_eq!(events[0].reason, EventReason::PlanCreated);
        }
        other => panic!("expected apply, got {other:?}"),
    }
    let drop = plan(
        &[desired(&["id"])],
        &[observed(&["id", "note"])],
        &[],
        &caps(),
    );
    let r = report(decide(&drop, &seen()));
    assert_eq!(r.reason, Reason::ApprovalRequired);
    assert!(r.awaiting());
    let cmd = r
        .plan
        .as_ref()
        .and_then(|p| p.approve_command.clone())
        .unwrap();
    assert!(cmd.ends_with(&format!(
        "delta-operator.io/approve={} --overwrite",
        drop.id
    )));
    assert!(warned(&r));
    // the same plan seen again: no second event (its outcome's repeats: outcome.rs)
    let again = Seen {
        previous_plan: Some(drop.id.as_str()),
        ..seen()
    };
    assert!(report(decide(&drop, &again)).events.is_empty());
    // another plan's approval approves nothing, and says which plan is current
    let wrong = Seen {
        approval: Some("0000000000000000"),
        ..seen()
    };
    let r = report(decide(&drop, &wrong));
    assert_eq!(r.reason, Reason::ApprovalRequired);
    assert!(
        r.message
            .contains("approves 0000000000000000, but the plan is now"),
        "{}",
        r.message
    );
    let right = Seen {
        approval: Some(drop.id.as_str()),
        ..seen()
    };
    assert!(matches!(decide(&drop, &right), Next::Apply { .. }));
}

/// What the executor reports after running every step of `p`.
fn ran_all(p: &Plan) -> Result<(Plan, ApplyReport), ApplyError> {
    let steps = p
        .tables
        .iter()
        .flat_map(|t| {
            t.steps().iter().map(|st| StepReport {
                table: t.table.clone(),
                number: st.number,
                title: st.action.title(),
                class: st.class,
                status: StepStatus::Applied,
                restore_point: Some(3),
                detail: None,
                still_running: None,
            })
        })
        .collect();
    Ok((
        p.clone(),
        ApplyReport {
            plan_id: p.id.clone(),
            steps,
            schema_steps: vec![],
            object_steps: vec![],
            locked: vec![],
            tables: vec![],
        },
    ))
}

#[test]
fn an_approval_is_spent_once_and_the_same_plan_again_waits_for_a_new_one() {
    let drop = plan(
        &[desired(&["id"])],
        &[observed(&["id", "note"])],
        &[],
        &caps(),
    );
    let id = drop.id.to_string();
    let approved = Seen {
        approval: Some(id.as_str()),
        ..seen()
    };
    assert!(matches!(decide(&drop, &approved), Next::Apply { .. }));
    let done = applied(
        &drop,
        &approved,
        &ran_all(&drop),
        "t1",
        None,
        Reason::ApplyFailed,
    );
    assert_eq!(done.reason, Reason::InSync);
    let spent = done
        .approval
        .clone()
        .expect("the apply spends the approval");
    assert_eq!(
        (spent.plan_id.as_str(), spent.value.as_str(), spent.state),
        (id.as_str(), id.as_str(), ApprovalState::Spent)
    );
    assert_eq!(spent.spent_at, "t1");
    assert!(
        done.events
            .iter()
            .any(|e| e.reason == EventReason::ApprovalConsumed && e.message.contains("spent"))
    );

    // the table was restored: the same plan, the same id, the annotation still there
    let again = Seen {
        approval: Some(id.as_str()),
        spent: Some(&spent),
        previous_plan: None,
        ..seen()
    };
    let r = report(decide(&drop, &again));
    assert_eq!(r.reason, Reason::ApprovalRequired, "{}", r.message);
    assert!(
        r.message.contains(&format!(
            "its approval {id} was spent when plan {id} was applied at t1"
        )),
        "{}",
        r.message
    );
    let status = r.plan.as_ref().unwrap();
    let fresh = format!("{id}-2");
    assert_eq!(status.approval.as_deref(), Some(fresh.as_str()));
    assert!(
        status.approve_command.as_deref().is_some_and(
            |c| c.ends_with(&format!("delta-operator.io/approve={fresh} --overwrite"))
        ),
        "{status:?}"
    );
    assert!(warned(&r));

    // a new approval runs it, and is spent in turn, remembering the first
    let renewed = Seen {
        approval: Some(fresh.as_str()),
        ..again.clone()
    };
    assert!(matches!(decide(&drop, &renewed), Next::Apply { .. }));
    let done = applied(
        &drop,
        &renewed,
        &ran_all(&drop),
        "t2",
        None,
        Reason::ApplyFailed,
    );
    let spent2 = done.approval.expect("spent again");
    assert_eq!(spent2.value, fresh);
    assert_eq!(spent2.earlier, vec![id.clone()]);
    // Git putting the first value back approves nothing either
    let reverted = Seen {
        approval: Some(id.as_str()),
        spent: Some(&spent2),
        ..seen()
    };
    let r = report(decide(&drop, &reverted));
    assert_eq!(r.reason, Reason::ApprovalRequired);
    assert_eq!(r.plan.unwrap().approval, Some(format!("{id}-3")));
}

#[test]
fn an_approval_is_not_spent_by_an_apply_that_needed_none_or_ran_no_destructive_step() {
    let add = plan(
        &[desired(&["id", "note"])],
        &[observed(&["id"])],
        &[],
        &caps(),
    );
    // an annotation naming an additive plan: nothing needed approving, nothing is spent
    let with = Seen {
        approval: Some(add.id.as_str()),
        ..seen()
    };
    let r = applied(&add, &with, &ran_all(&add), "t", None, Reason::ApplyFailed);
    assert_eq!(r.approval, None);
    // a destructive plan whose step did not run (already true): not spent
    let drop = plan(
        &[desired(&["id"])],
        &[observed(&["id", "note"])],
        &[],
        &caps(),
    );
    let approved = Seen {
        approval: Some(drop.id.as_str()),
        ..seen()
    };
    let mut skipped = ran_all(&drop);
    if let Ok((_, report)) = &mut skipped {
        for s in &mut report.steps {
            s.status = StepStatus::Skipped;
        }
    }
    let r = applied(&drop, &approved, &skipped, "t", None, Reason::ApplyFailed);
    assert_eq!(r.approval, None);
    // Manual: any step that ran spends it
    let manual = Seen {
        policy: Policy::Manual,
        approval: Some(add.id.as_str()),
        ..seen()
    };
    let r = applied(
        &add,
        &manual,
        &ran_all(&add),
        "t",
        None,
        Reason::ApplyFailed,
    );
    assert_eq!(r.approval.map(|a| a.value), Some(add.id.to_string()));
}

#[test]
fn paused_and_observe_never_apply() {
    let add = plan(
        &[desired(&["id", "note"])],
        &[observed(&["id"])],
        &[],
        &caps(),
    );
    let paused = Seen {
        paused: true,
        ..seen()
    };
    let r = report(decide(&add, &paused));
    assert_eq!(r.reason, Reason::Paused);
    assert_eq!(r.drifted.as_deref(), Some("+0 ~1 -0"));
    let observe = Seen {
        policy: Policy::Observe,
        ..seen()
    };
    let r = report(decide(&add, &observe));
    assert_eq!(r.reason, Reason::Observing);
    assert!(r.plan.is_some());
}

#[test]
fn drift_after_being_in_sync_is_announced() {
    let add = plan(
        &[desired(&["id", "note"])],
        &[observed(&["id"])],
        &[],
        &caps(),
    );
    let was = Seen {
        was_in_sync: true,
        paused: true,
        ..seen()
    };
    let r = report(decide(&add, &was));
    assert_eq!(r.events[0].reason, EventReason::DriftDetected);
}

#[test]
fn a_transient_read_failure_is_retried_and_a_failed_step_stalls() {
    let add = plan(
        &[desired(&["id", "note"])],
        &[observed(&["id"])],
        &[],
        &caps(),
    );
    let transient = Err(ApplyError::Read(BackendError::Transient(
        "connection reset".into(),
    )));
    let r = applied(&add, &seen(), &transient, "t", None, Reason::ApplyFailed);
    assert_eq!(r.reason, Reason::ReadRetrying);
    let refused = Err(ApplyError::Read(
        delta_operator_backend::BackendError::Config("no root".into()),
    ));
    let r = applied(&add, &seen(), &refused, "t", None, Reason::ApplyFailed);
    assert_eq!(r.reason, Reason::ApplyFailed);
    assert!(warned(&r), "{}", r.message);
    assert!(r.message.contains("no root"), "{}", r.message);
}

#[test]
fn long_plan_text_is_cut_at_a_line_and_says_so() {
    let text: String = (0..100).map(|i| format!("line {i} é\n")).collect();
    let cut = cut_text(text.clone(), 100);
    assert!(cut.len() < 300, "{cut}");
    assert!(cut.starts_with("line 0 é\nline 1 é\n"));
    assert!(
        cut.ends_with("`kubectl delta plan NAME --full` prints the whole plan (the ConfigMap delta-plan.<kind>.<name>)\n"),
        "{cut}"
    );
    assert!(
        cut.lines()
            .filter(|l| l.starts_with("line "))
            .all(|l| l.ends_with('é')),
        "{cut}"
    );
    assert_eq!(cut_text("short\n".into(), 100), "short\n");
}

/// Drift held back (policy Manual, Observe, a pause): under driftPolicy Report the
/// resource's phase is what it always was; under Fail it is Stalled with reason
/// DriftDetected (kstatus Failed, Argo CD Degraded), saying how to approve.
#[test]
fn drift_policy_fail_degrades_drift_that_is_not_applied_and_report_does_not() {
    let add = plan(
        &[desired(&["id", "note"])],
        &[observed(&["id"])],
        &[],
        &caps(),
    );
    let held = [
        Seen {
            policy: Policy::Manual,
            ..seen()
        },
        Seen {
            policy: Policy::Observe,
            ..seen()
        },
        Seen {
            paused: true,
            ..seen()
        },
    ];
    let reported = [Reason::ApprovalRequired, Reason::Observing, Reason::Paused];
    for (s, want) in held.iter().zip(reported) {
        let r = report(decide(&add, s));
        assert_eq!(r.reason, want, "Report keeps today's reason: {}", r.message);
        assert_eq!(r.reason.awaits_approval(), want == Reason::ApprovalRequired);
        let fail = Seen {
            drift_policy: DriftPolicy::Fail,
            ..s.clone()
        };
        let r = report(decide(&add, &fail));
        assert_eq!(r.reason, Reason::DriftDetected, "{want}: {}", r.message);
        assert_eq!(r.reason.phase(), Phase::Stalled);
        assert!(!r.awaiting(), "Degraded, not Suspended");
        assert!(warned(&r), "{}", r.message);
        assert_eq!(r.drifted.as_deref(), Some("+0 ~1 -0"));
        let status = r.plan.as_ref().unwrap();
        assert_eq!(status.approval.as_deref(), Some(add.id.as_str()));
        let cmd = status.approve_command.as_deref().unwrap();
        assert!(
            cmd.ends_with(&format!("delta-operator.io/approve={} --overwrite", add.id)),
            "{cmd}"
        );
        for said in ["driftPolicy Fail", "+0 ~1 -0", cmd] {
            assert!(r.message.contains(said), "{said}: {}", r.message);
        }
    }
    // Manual: approving the plan applies it (then InSync, nothing drifted)
    let approved = Seen {
        policy: Policy::Manual,
        drift_policy: DriftPolicy::Fail,
        approval: Some(add.id.as_str()),
        ..seen()
    };
    assert!(matches!(decide(&add, &approved), Next::Apply { .. }));
    // Observe and a pause never apply: approving the plan acknowledges its drift
    for s in [
        Seen {
            policy: Policy::Observe,
            ..approved.clone()
        },
        Seen {
            paused: true,
            ..approved.clone()
        },
    ] {
        let r = report(decide(&add, &s));
        assert!(
            matches!(r.reason, Reason::Observing | Reason::Paused),
            "{}: {}",
            r.reason,
            r.message
        );
    }
    // an approval of another plan acknowledges nothing
    let other = Seen {
        policy: Policy::Observe,
        drift_policy: DriftPolicy::Fail,
        approval: Some("0000000000000000"),
        ..seen()
    };
    assert_eq!(report(decide(&add, &other)).reason, Reason::DriftDetected);
    // Auto applies drift at once: Fail changes nothing there, nor for a table in sync
    let auto = Seen {
        drift_policy: DriftPolicy::Fail,
        ..seen()
    };
    assert!(matches!(decide(&add, &auto), Next::Apply { .. }));
    let same = plan(&[desired(&["id"])], &[observed(&["id"])], &[], &caps());
    assert_eq!(report(decide(&same, &auto)).reason, Reason::InSync);
    // a destructive plan under Auto waits for approval: under Fail that drift degrades too
    let drop = plan(
        &[desired(&["id"])],
        &[observed(&["id", "note"])],
        &[],
        &caps(),
    );
    let r = report(decide(&drop, &auto));
    assert_eq!(r.reason, Reason::DriftDetected);
    assert!(r.message.contains("destructive"), "{}", r.message);
    // a schema's drift says schema
    let schema = Seen {
        kind: "deltaschema",
        policy: Policy::Observe,
        ..auto.clone()
    };
    assert!(
        report(decide(&add, &schema))
            .message
            .contains("the live schema differs")
    );
}

/// A plan whose only steps are a compaction that became due (40 small files, 20 make it due).
fn compaction_due() -> Plan {
    use delta_operator_core::model::maintenance::{Compaction, Maintenance, TableHealth};
    let d = DesiredTable {
        maintenance: Some(Maintenance {
            compaction: Some(Compaction {
                when_small_files: 20,
                target_file_bytes: 128 << 20,
                z_order_by: vec![],
                every_ms: None,
            }),
            ..Maintenance::default()
        }),
        ..desired(&["id"])
    };
    let o = ObservedTable {
        health: Some(TableHealth {
            files: 40,
            small_files: 40,
            ..TableHealth::default()
        }),
        ..observed(&["id"])
    };
    delta_operator_core::plan::plan_at(&[d], &[o], &[], &caps(), Some(1_000))
}

#[test]
fn maintenance_alone_is_not_drift_under_any_policy() {
    let p = compaction_due();
    assert!(p.has_changes() && !crate::maintenance::spec_drift(&p));
    let planned = crate::maintenance::planned(&p);
    assert_eq!(planned.len(), 1, "{p:?}");
    assert_eq!(planned[0].0, crate::metrics::MaintenanceKind::Compact);
    // Auto runs it: its plan is announced, no drift is (even after being in sync)
    let in_sync = Seen {
        was_in_sync: true,
        drift_policy: DriftPolicy::Fail,
        ..seen()
    };
    match decide(&p, &in_sync) {
        Next::Apply { events } => {
            assert!(
                events
                    .iter()
                    .all(|e| e.reason != EventReason::DriftDetected),
                "{events:?}"
            );
            assert!(
                events.iter().any(|e| e.reason == EventReason::PlanCreated
                    && e.message.contains("OPTIMIZE")
                    && e.message.contains("[maintenance]")),
                "{events:?}"
            );
        }
        other => panic!("expected apply, got {other:?}"),
    }
    // held back (Manual, Observe, a pause) under driftPolicy Fail: never DriftDetected, never drifted
    let held = [
        (Policy::Manual, false, Reason::ApprovalRequired),
        (Policy::Observe, false, Reason::Observing),
        (Policy::Auto, true, Reason::Paused),
    ];
    for (policy, paused, want) in held {
        let s = Seen {
            policy,
            paused,
            ..in_sync.clone()
        };
        let r = report(decide(&p, &s));
        assert_eq!(r.reason, want, "{}", r.message);
        assert!(r.drifted.is_none(), "{want}: not drift");
        assert!(r.plan.is_some(), "{want}: the plan is shown");
        if want == Reason::Observing {
            assert!(r.message.contains("maintenance due"), "{}", r.message);
            assert!(
                r.events
                    .iter()
                    .all(|e| e.reason != EventReason::DriftDetected),
                "{:?}",
                r.events
            );
        }
    }
    // run: in sync, and the run is found by kind
    let result = ran_all(&p);
    let r = applied(&p, &seen(), &result, "t", None, Reason::ApplyFailed);
    assert_eq!(r.reason, Reason::InSync);
    let (done, rep) = result.as_ref().unwrap();
    let runs = crate::maintenance::ran(done, rep);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kind, crate::metrics::MaintenanceKind::Compact);
    assert_eq!(runs[0].outcome, crate::metrics::RunOutcome::Ok);
    let note = maintenance_note(&runs[0], p.id.as_str());
    assert!(!note.warning && note.message.starts_with("compaction ran (plan "));
    // a failed compaction: failed, still no drift
    let (plan_ran, mut failed) = ran_all(&p).unwrap();
    failed.steps[0].status = StepStatus::Failed {
        error: "disk full".into(),
    };
    let runs = crate::maintenance::ran(&plan_ran, &failed);
    assert_eq!(runs[0].outcome, crate::metrics::RunOutcome::Failed);
    assert_eq!(runs[0].message, "disk full");
    assert!(maintenance_note(&runs[0], "p").warning);
    let r = applied(
        &p,
        &seen(),
        &Ok((plan_ran, failed)),
        "t",
        None,
        Reason::ApplyFailed,
    );
    assert_eq!(r.reason, Reason::ApplyFailed);
    assert!(r.drifted.is_none());
}

/// A failed step of a view, function or volume fails the apply like a table's: the
/// resource is never Ready over an object that was not made.
#[test]
fn a_failed_object_step_fails_the_apply() {
    use delta_operator_backend::apply::ObjectStepReport;
    use delta_operator_core::model::{ObjectKind, ObjectRef};
    use delta_operator_core::plan::RiskClass;
    let p = plan(&[desired(&["id"])], &[], &[], &caps());
    let Ok((_, mut report)) = ran_all(&p) else {
        unreachable!("ran_all reports success");
    };
    let ok = applied(
        &p,
        &seen(),
        &Ok((p.clone(), report.clone())),
        "t1",
        None,
        Reason::ApplyFailed,
    );
    assert_eq!(ok.reason, Reason::InSync, "{}", ok.message);
    report.object_steps.push(ObjectStepReport {
        object: ObjectRef::new(ObjectKind::View, "main", "sales", "recent"),
        number: 1,
        title: "CREATE VIEW".into(),
        class: RiskClass::Meta,
        status: StepStatus::Failed {
            error: "[TABLE_OR_VIEW_NOT_FOUND] orders".into(),
        },
        detail: None,
    });
    let r = applied(
        &p,
        &seen(),
        &Ok((p.clone(), report)),
        "t1",
        None,
        Reason::ApplyFailed,
    );
    assert_eq!(r.reason, Reason::ApplyFailed, "{}", r.message);
    assert!(r.message.contains("CREATE VIEW failed"), "{}", r.message);
}

/// A view, function or volume the plan refuses is reported by the core's rule:
/// on a target without a metastore, `NotSupportedByBackend` (the one place
/// that refuses it; the controller does not check it again).
#[test]
fn an_object_the_plan_refuses_is_reported_by_its_rule() {
    use delta_operator_core::model::ResourceId;
    use delta_operator_core::model::object::{
        DesiredObject, ObjectBody, ObjectKind, ObjectRef, Reads,
    };
    use delta_operator_core::plan::rules::Rule;
    use delta_operator_core::plan::{finish_parts, plan_all_at};
    use std::sync::Arc;
    let volume = Arc::new(DesiredObject {
        owner_marker: ResourceId::new("shop", "raw"),
        object: ObjectRef::new(ObjectKind::Volume, "main", "sales", "raw"),
        body: ObjectBody::Volume,
        comment: None,
        tags: BTreeMap::new(),
        properties: BTreeMap::new(),
        grants: vec![],
        owner: None,
        reads: Reads::default(),
        outputs: Default::default(),
        refusals: vec![],
    });
    let plan_on = |caps: &Capabilities| {
        let parts = plan_all_at(&[], &[], &[Arc::clone(&volume)], &[], &[], caps, None);
        finish_parts(caps.backend, parts)
    };
    for caps in [Capabilities::lake(), Capabilities::spark_connect()] {
        let r = report(decide(&plan_on(&caps), &seen()));
        assert_eq!(r.reason, Reason::Refused(Rule::NotSupportedByBackend));
        assert_eq!(r.reason.phase(), Phase::Stalled);
        assert!(
            r.message.contains("Unity Catalog metastore") && r.message.contains("main.sales.raw"),
            "{}",
            r.message
        );
    }
    assert!(matches!(
        decide(&plan_on(&Capabilities::databricks()), &seen()),
        Next::Apply { .. }
    ));
}
