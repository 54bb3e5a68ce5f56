//! Prerequisites already met, destructive steps, and the typed undo of steps.

use super::*;

#[test]
fn widening_on_databricks_skips_the_prerequisite_when_already_enabled() {
    let (mut d, mut o) = orders();
    dcol(&mut d, "amount").data_type = DataType::Long;
    o.properties
        .insert("delta.enableTypeWidening".into(), "true".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(steps(&p), vec!["1. ALTER COLUMN amount TYPE bigint [meta]"]);
}

#[test]
fn a_default_needs_its_table_feature_first_unless_the_table_has_it() {
    let (mut d, mut o) = orders();
    dcol(&mut d, "note").default = Some("'n/a'".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        steps(&p),
        vec![
            "1. enable allowColumnDefaults [feature]",
            "2. SET DEFAULT on note [meta]"
        ]
    );
    let prereq = step(&p, "enable allowColumnDefaults");
    assert!(prereq.serves.is_empty(), "a prerequisite serves no change");
    assert_eq!(
        prereq.warnings,
        vec!["raises the table's protocol version; older clients lose access".to_string()]
    );
    o.properties.insert(
        "delta.feature.allowColumnDefaults".into(),
        "supported".into(),
    );
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(steps(&p), vec!["1. SET DEFAULT on note [meta]"]);
}

#[test]
fn drop_column_is_destructive_on_both_backends_with_a_restore_hint() {
    let (mut d, o) = orders();
    d.columns.retain(|c| c.name != "note");

    let p = plan_table(&d, Some(&o), &dbx());
    let s = step(&p, "DROP COLUMN note");
    assert_eq!(s.class, RiskClass::Destructive);
    assert_eq!(undo_of(&p, s), restore());
    assert_eq!(
        s.warnings,
        vec!["drops column note and its data".to_string()]
    );
    let prereq = step(&p, "enable columnMapping");
    assert!(
        prereq.serves.is_empty(),
        "a prerequisite serves no change of its own"
    );
    assert!(
        prereq.warnings.iter().any(|w| w.contains("streaming")),
        "column mapping warns about streaming readers: {:?}",
        prereq.warnings
    );

    let p = plan_table(&d, Some(&o), &lake());
    let s = step(&p, "REPLACE TABLE (from itself)");
    assert_eq!(
        s.class,
        RiskClass::Destructive,
        "a rewrite that drops a column is destructive"
    );
    assert!(
        s.warnings
            .iter()
            .any(|w| w == "drops note along with the rewrite"),
        "{:?}",
        s.warnings
    );
    let Action::Rewrite { rewrite, .. } = &s.action else {
        unreachable!()
    };
    assert_eq!(rewrite.drops, vec!["note".to_string()]);
    assert_eq!(rewrite.columns.len(), 2);
    let plan = plan::finish(&lake(), vec![p], vec![]);
    assert_eq!(plan.risk(), Some(RiskClass::Destructive));
    assert_eq!(plan.destructive_steps().count(), 1);
}

#[test]
fn without_a_readable_version_the_undo_says_there_is_no_restore_point() {
    let (mut d, mut o) = orders();
    o.version = None;
    d.columns.retain(|c| c.name != "note");
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        undo_of(&p, step(&p, "DROP COLUMN note")),
        Some(Undo::Restore { version: None })
    );
    assert_eq!(p.version, None);
}

#[test]
fn restore_hints_carry_the_observed_version() {
    let (mut d, mut o) = orders();
    o.version = Some(1234);
    d.columns.retain(|c| c.name != "note");
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(p.version, Some(1234));
    assert_eq!(p.size_bytes, Some(SIZE));
    assert_eq!(
        undo_of(&p, step(&p, "REPLACE TABLE (from itself)")),
        Some(Undo::Restore {
            version: Some(1234)
        })
    );
}

#[test]
fn undo_hints_of_metadata_steps() {
    let (mut d, mut o) = orders();
    o.properties.remove(OWNER_PROPERTY);
    o.properties
        .insert("delta.appendOnly".into(), "false".into());
    o.comment = Some("old".into());
    o.checks.push(Check {
        name: "stale".into(),
        expression: "id > 0".into(),
    });
    owning(&mut o, &["check:stale"]);
    d.properties
        .insert("delta.appendOnly".into(), Some("true".into()));
    d.properties.insert(
        "delta.logRetentionDuration".into(),
        Some("interval 30 days".into()),
    );
    d.comment = Some("new".into());
    let c = dcol(&mut d, "note");
    c.name = "remark".into();
    c.renamed_from = Some("note".into());
    let p = plan_table(&d, Some(&o), &dbx());
    let undo = |title: &str| undo_of(&p, step(&p, title));
    assert_eq!(
        undo("CLAIM ownership"),
        by_steps(vec![Action::UnsetProperties {
            keys: vec![OWNER_PROPERTY.into()]
        }])
    );
    assert_eq!(
        undo("COMMENT ON TABLE"),
        by_steps(vec![Action::SetTableComment {
            comment: "old".into()
        }])
    );
    assert_eq!(
        undo("SET TBLPROPERTIES (delta.appendOnly, delta.logRetentionDuration)"),
        by_steps(vec![
            Action::SetProperties {
                properties: BTreeMap::from([("delta.appendOnly".into(), "false".into())])
            },
            Action::UnsetProperties {
                keys: vec!["delta.logRetentionDuration".into()]
            },
        ])
    );
    assert_eq!(
        undo("DROP CONSTRAINT stale"),
        by_steps(vec![Action::AddCheck {
            check: Check {
                name: "stale".into(),
                expression: "id > 0".into()
            }
        }])
    );
    assert_eq!(
        undo("RENAME COLUMN note TO remark"),
        by_steps(vec![Action::RenameColumn {
            from: "remark".into(),
            to: "note".into()
        }])
    );
    // two property changes are one SET TBLPROPERTIES step serving both
    let set = step(
        &p,
        "SET TBLPROPERTIES (delta.appendOnly, delta.logRetentionDuration)",
    );
    assert_eq!(set.serves.len(), 2);
    for i in &set.serves {
        assert!(
            matches!(p.changes[*i], Change::SetProperty { .. }),
            "{:?}",
            p.changes[*i]
        );
    }
}

#[test]
fn a_default_set_or_dropped_is_undone_by_the_other() {
    // removed: undone by setting the old expression again
    let (mut d, mut o) = orders();
    lcol(&mut o, "note").default = Some("'n/a'".into());
    dcol(&mut d, "note").drops_default = true;
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        undo_of(&p, step(&p, "DROP DEFAULT on note")),
        by_steps(vec![Action::SetDefault {
            column: "note".into(),
            expression: "'n/a'".into()
        }])
    );
    // set where there was none: undone by dropping it
    let (mut d, o) = orders();
    dcol(&mut d, "note").default = Some("'n/a'".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        undo_of(&p, step(&p, "SET DEFAULT on note")),
        by_steps(vec![Action::DropDefault {
            column: "note".into()
        }])
    );
    // silent (omitted): nothing planned, the live default stays
    let (d, mut o) = orders();
    lcol(&mut o, "note").default = Some("'n/a'".into());
    assert!(plan_table(&d, Some(&o), &dbx()).steps().is_empty());
}
