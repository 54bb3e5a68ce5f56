//! Maintenance (issue 34): compaction, vacuum and checkpoints planned when
//! due, from the table's measured health and "now", never beside a rewrite,
//! and gated as the lowest risk class.

use delta_operator_core::model::{
    Checkpointing, Compaction, Maintenance, RecordedRestorePoint, TableHealth, Vacuum,
};

use super::*;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// 2026-12-06 00:00 UTC.
const NOW: i64 = 1_796_515_200_000;

fn all_maintenance() -> Maintenance {
    Maintenance {
        compaction: Some(Compaction {
            when_small_files: 100,
            target_file_bytes: 128 << 20,
            z_order_by: vec![],
            every_ms: None,
        }),
        vacuum: Some(Vacuum {
            retain_hours: 168,
            allow_short_retention: false,
            keep_restore_points_days: 7,
            every_ms: 24 * 3_600_000,
        }),
        checkpoint: Some(Checkpointing {
            every_versions: 100,
        }),
    }
}

/// A healthy table: few small files, vacuumed an hour ago, checkpointed.
fn healthy() -> TableHealth {
    TableHealth {
        files: 20,
        small_files: 3,
        versions_since_checkpoint: Some(4),
        last_compaction_ms: None,
        last_vacuum_ms: Some(NOW - HOUR),
        last_vacuum_retention_hours: Some(168),
        predictive_optimization: false,
        restore_points: vec![],
    }
}

fn maintained(m: Maintenance, h: TableHealth) -> (DesiredTable, ObservedTable) {
    let (mut d, mut o) = orders();
    d.maintenance = Some(m);
    o.health = Some(h);
    (d, o)
}

fn plan_now(d: &DesiredTable, o: &ObservedTable, now: Option<i64>) -> Plan {
    plan::plan_at(
        std::slice::from_ref(d),
        std::slice::from_ref(o),
        &[],
        &lake(),
        now,
    )
}

fn titles(p: &Plan) -> Vec<String> {
    steps(&p.tables[0])
}

#[test]
fn nothing_is_due_on_a_healthy_table() {
    let (d, o) = maintained(all_maintenance(), healthy());
    let p = plan_now(&d, &o, Some(NOW));
    assert!(titles(&p).is_empty(), "{:?}", titles(&p));
    assert!(!p.has_changes());
    assert_eq!(gate(&p, Policy::Auto, None), Decision::NothingToDo);
}

#[test]
fn each_is_due_by_its_threshold_or_schedule_in_order() {
    let mut h = healthy();
    h.small_files = 150;
    h.files = 160;
    h.versions_since_checkpoint = Some(100);
    h.last_vacuum_ms = Some(NOW - 25 * HOUR);
    let (d, o) = maintained(all_maintenance(), h);
    let p = plan_now(&d, &o, Some(NOW));
    assert_eq!(
        titles(&p),
        vec![
            "1. OPTIMIZE (bin-pack to 128Mi) [maintenance]",
            "2. VACUUM RETAIN 168 HOURS [maintenance]",
            "3. CHECKPOINT [maintenance]",
        ]
    );
    assert_eq!(p.risk(), Some(RiskClass::Maintenance));
    assert_eq!(p.summary.maintenance, 3);
    assert_eq!(
        p.tables[0].action,
        TableAction::Unchanged,
        "no change to the spec"
    );
    // the lowest class: Auto runs it, Manual waits, Observe never
    assert_eq!(gate(&p, Policy::Auto, None), Decision::Apply);
    assert!(matches!(
        gate(&p, Policy::Manual, None),
        Decision::NeedsApproval { .. }
    ));
    assert_eq!(gate(&p, Policy::Observe, None), Decision::Observe);
    let text = plan::render::text::render(&p);
    assert!(text.contains("unchanged, maintenance due"), "{text}");
    assert!(text.contains("3 maintenance"), "{text}");
}

#[test]
fn thresholds_are_measured_against_the_spec() {
    let mut m = all_maintenance();
    m.compaction.as_mut().unwrap().when_small_files = 3;
    m.checkpoint.as_mut().unwrap().every_versions = 4;
    let (d, o) = maintained(m, healthy());
    let p = plan_now(&d, &o, Some(NOW));
    assert_eq!(
        titles(&p),
        vec![
            "1. OPTIMIZE (bin-pack to 128Mi) [maintenance]",
            "2. CHECKPOINT [maintenance]"
        ]
    );
    // one below the threshold: not due
    let mut h = healthy();
    h.small_files = 2;
    h.versions_since_checkpoint = Some(3);
    let mut m = all_maintenance();
    m.compaction.as_mut().unwrap().when_small_files = 3;
    m.checkpoint.as_mut().unwrap().every_versions = 4;
    let (d, o) = maintained(m, h);
    assert!(titles(&plan_now(&d, &o, Some(NOW))).is_empty());
}

#[test]
fn schedules_need_the_clock_and_are_measured_from_the_last_run() {
    let mut m = all_maintenance();
    m.compaction.as_mut().unwrap().every_ms = Some(12 * 3_600_000);
    let mut h = healthy();
    h.last_compaction_ms = Some(NOW - 13 * HOUR);
    h.last_vacuum_ms = None; // never vacuumed: due at once
    let (d, o) = maintained(m.clone(), h.clone());
    assert_eq!(
        titles(&plan_now(&d, &o, Some(NOW))),
        vec![
            "1. OPTIMIZE (bin-pack to 128Mi) [maintenance]",
            "2. VACUUM RETAIN 168 HOURS [maintenance]"
        ]
    );
    // without a clock no schedule is due (thresholds still are)
    assert!(titles(&plan_now(&d, &o, None)).is_empty());
    // compacted 11 h ago: not yet
    h.last_compaction_ms = Some(NOW - 11 * HOUR);
    h.last_vacuum_ms = Some(NOW - 23 * HOUR);
    let (d, o) = maintained(m, h);
    assert!(titles(&plan_now(&d, &o, Some(NOW))).is_empty());
}

#[test]
fn a_vacuum_keeps_the_restore_points_recorded_within_the_window() {
    let mut h = healthy();
    h.last_vacuum_ms = Some(NOW - 2 * DAY);
    h.restore_points = vec![
        RecordedRestorePoint {
            version: 3,
            recorded_ms: NOW - 10 * DAY,
        },
        RecordedRestorePoint {
            version: 12,
            recorded_ms: NOW - 6 * DAY,
        },
        RecordedRestorePoint {
            version: 20,
            recorded_ms: NOW - HOUR,
        },
    ];
    let (d, o) = maintained(all_maintenance(), h);
    let p = plan_now(&d, &o, Some(NOW));
    let s = &p.tables[0].steps()[0];
    assert_eq!(
        s.action,
        Action::Vacuum {
            retain_hours: 168,
            keep_versions: vec![12, 20],
            keep_since_ms: Some(NOW - 6 * DAY),
        },
        "v3 is older than keepRestorePointsDays (7)"
    );
    assert_eq!(
        s.action.title(),
        "VACUUM RETAIN 168 HOURS (keeping the files of restore points v12, v20)"
    );
    assert!(
        s.notes.iter().any(|n| n.contains("--version 12, 20")),
        "{:?}",
        s.notes
    );
    assert!(
        s.warnings.iter().any(|w| w.contains("time travel")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn maintenance_waits_for_the_next_plan_beside_a_rewrite() {
    let mut h = healthy();
    h.small_files = 500;
    let (mut d, o) = maintained(all_maintenance(), h);
    // a type change the lake rewrites the table for
    dcol(&mut d, "amount").data_type = ty("string");
    let p = plan_now(&d, &o, Some(NOW));
    let t = &p.tables[0];
    assert!(
        t.steps()
            .iter()
            .any(|s| matches!(s.action, Action::Rewrite { .. })),
        "{:?}",
        steps(t)
    );
    assert!(
        t.steps().iter().all(|s| s.class != RiskClass::Maintenance),
        "{:?}",
        steps(t)
    );
    assert!(
        t.notes
            .iter()
            .any(|n| n.starts_with("maintenance waits for the next plan")
                && n.contains("OPTIMIZE")),
        "{:?}",
        t.notes
    );
}

#[test]
fn maintenance_follows_other_steps_numbered_after_them() {
    let mut h = healthy();
    h.versions_since_checkpoint = Some(250);
    let (mut d, o) = maintained(all_maintenance(), h);
    d.comment = Some("orders".into());
    let p = plan_now(&d, &o, Some(NOW));
    assert_eq!(
        titles(&p),
        vec!["1. COMMENT ON TABLE [meta]", "2. CHECKPOINT [maintenance]"]
    );
    assert_eq!(p.risk(), Some(RiskClass::Meta));
}

#[test]
fn none_is_planned_without_health_with_predictive_optimization_or_for_a_new_table() {
    let (d, mut o) = maintained(all_maintenance(), healthy());
    o.health = None;
    let p = plan_now(&d, &o, Some(NOW));
    assert!(titles(&p).is_empty());
    assert!(
        p.tables[0]
            .notes
            .iter()
            .any(|n| n.contains("did not measure")),
        "{:?}",
        p.tables[0].notes
    );
    let mut h = healthy();
    h.predictive_optimization = true;
    h.small_files = 1000;
    let (d, o) = maintained(all_maintenance(), h);
    let p = plan_now(&d, &o, Some(NOW));
    assert!(titles(&p).is_empty());
    assert!(
        p.tables[0]
            .notes
            .iter()
            .any(|n| n.contains("predictive optimization")),
        "{:?}",
        p.tables[0].notes
    );
    let (d, _) = maintained(all_maintenance(), healthy());
    let p = plan::plan_at(&[d], &[], &[], &lake(), Some(NOW));
    assert!(
        p.tables[0]
            .steps()
            .iter()
            .all(|s| s.class != RiskClass::Maintenance)
    );
}

#[test]
fn a_clustered_table_is_compacted_without_z_order() {
    let mut m = all_maintenance();
    m.compaction.as_mut().unwrap().z_order_by = vec!["amount".into()];
    let mut h = healthy();
    h.small_files = 200;
    let (d, mut o) = maintained(m.clone(), h.clone());
    let p = plan_now(&d, &o, Some(NOW));
    assert_eq!(
        titles(&p),
        vec!["1. OPTIMIZE ZORDER BY (amount) (to 128Mi) [maintenance]"]
    );
    o.cluster_by = Some(vec!["id".into()]);
    let mut d = d;
    d.cluster_by = Some(vec!["id".into()]);
    let p = plan_now(&d, &o, Some(NOW));
    assert_eq!(
        titles(&p),
        vec!["1. OPTIMIZE (bin-pack to 128Mi) [maintenance]"]
    );
}

#[test]
fn the_health_moves_no_plan_id_and_a_checkpoint_holds_once_written() {
    let (d, o) = maintained(all_maintenance(), healthy());
    let base = plan_now(&d, &o, Some(NOW)).id;
    let mut o2 = o.clone();
    o2.health.as_mut().unwrap().files = 40;
    o2.health.as_mut().unwrap().small_files = 7;
    assert_eq!(plan_now(&d, &o2, Some(NOW)).id, base, "appends move no id");
    let mut done = o.clone();
    assert!(!Action::Checkpoint.holds(Some(&done)));
    Action::Checkpoint.apply_to(&mut done);
    assert!(Action::Checkpoint.holds(Some(&done)));
    assert_eq!(Action::Checkpoint.inverse(&o), None);
}
