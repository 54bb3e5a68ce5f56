//! What the spec is silent about is left alone, `null` removes, and ownership.

use super::*;

#[test]
fn what_the_spec_is_silent_about_is_left_alone() {
    let (d, mut o) = orders();
    o.properties.insert(
        "delta.logRetentionDuration".into(),
        "interval 60 days".into(),
    );
    o.properties
        .insert("delta.feature.deletionVectors".into(), "supported".into());
    o.properties
        .insert("delta.columnMapping.maxColumnId".into(), "3".into());
    o.tags.insert("cost-center".into(), "42".into());
    o.grants.push(Grant {
        principal: "auditors".into(),
        privileges: vec!["SELECT".into()],
    });
    o.comment = Some("set by hand".into());
    o.owner = Some("alice".into());
    lcol(&mut o, "note").comment = Some("hand-written".into());
    lcol(&mut o, "note")
        .tags
        .insert("pii".into(), "maybe".into());
    lcol(&mut o, "note").default = Some("'x'".into());
    o.cluster_by = Some(vec!["id".into()]);
    for caps in [lake(), dbx()] {
        let p = plan_table(&d, Some(&o), &caps);
        assert_eq!(
            p.changes,
            vec![],
            "{}: nothing is diffed away by omission",
            caps.backend
        );
        assert_eq!(p.action, TableAction::Unchanged);
        assert!(p.is_accepted() && p.steps().is_empty());
        assert_eq!(
            p.notes,
            vec![
                "properties not in the spec, left untouched: delta.logRetentionDuration"
                    .to_string()
            ],
            "internal properties and the owner marker are not reported; managed-elsewhere ones are"
        );
    }
}

#[test]
fn grants_to_principals_the_spec_does_not_name_are_left_alone() {
    let (mut d, mut o) = orders();
    o.grants.push(Grant {
        principal: "auditors".into(),
        privileges: vec!["SELECT".into(), "MODIFY".into()],
    });
    o.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec!["SELECT".into()],
    });
    d.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec!["SELECT".into(), "MODIFY".into()],
    });
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        p.changes,
        vec![Change::Grant {
            principal: "analysts".into(),
            privileges: vec!["MODIFY".into()]
        }]
    );
}

#[test]
fn revoke_is_visible_with_a_warning_and_its_undo() {
    let (mut d, mut o) = orders();
    o.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec!["SELECT".into(), "MODIFY".into()],
    });
    d.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec!["SELECT".into()],
    });
    let p = plan_table(&d, Some(&o), &dbx());
    let s = step(&p, "REVOKE MODIFY FROM analysts");
    assert_eq!(s.warnings, vec!["analysts loses MODIFY".to_string()]);
    assert_eq!(
        undo_of(&p, s),
        by_steps(vec![Action::Grant {
            principal: "analysts".into(),
            privileges: vec![Privilege::new("MODIFY")]
        }])
    );
}

#[test]
fn null_removes_only_what_is_live() {
    let (mut d, mut o) = orders();
    d.properties.insert("delta.appendOnly".into(), None);
    d.tags.insert("pii".into(), None);
    dcol(&mut d, "note").tags.insert("pii".into(), None);
    // nothing of it is live: nothing to remove
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(p.changes, vec![]);
    o.properties
        .insert("delta.appendOnly".into(), "true".into());
    o.tags.insert("pii".into(), "no".into());
    lcol(&mut o, "note").tags.insert("pii".into(), "yes".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        p.changes,
        vec![
            Change::UnsetProperty {
                key: "delta.appendOnly".into(),
                from: "true".into()
            },
            Change::UnsetTableTag {
                key: "pii".into(),
                from: "no".into()
            },
            Change::UnsetColumnTag {
                column: "note".into(),
                key: "pii".into(),
                from: "yes".into()
            },
        ]
    );
    assert_eq!(
        undo_of(&p, step(&p, "UNSET TBLPROPERTIES (delta.appendOnly)")),
        by_steps(vec![Action::SetProperties {
            properties: BTreeMap::from([("delta.appendOnly".into(), "true".into())])
        }])
    );
    assert_eq!(
        undo_of(&p, step(&p, "UNSET TAGS (pii)")),
        by_steps(vec![Action::SetTableTags {
            tags: BTreeMap::from([("pii".into(), "no".into())])
        }])
    );
}

#[test]
fn equivalent_sql_is_not_a_change() {
    let (mut d, mut o) = orders();
    d.checks.push(Check {
        name: "Positive".into(),
        expression: "amount   >  0".into(),
    });
    o.checks.push(Check {
        name: "positive".into(),
        expression: "AMOUNT > 0".into(),
    });
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(p.changes, vec![]);
    // but a string literal's case is significant
    d.checks[0].expression = "note = 'A'".into();
    o.checks[0].expression = "note = 'a'".into();
    let p = plan_table(&d, Some(&o), &lake());
    assert_eq!(
        p.changes.iter().map(kind).collect::<Vec<_>>(),
        vec!["DropCheck", "AddCheck", "SetProperty"],
        "the changed CHECK, and the operator's record of it"
    );
}

// ---------------------------------------------------------------------------
// Ownership

#[test]
fn ownership_missing_marker_claims_matching_is_nothing_other_is_refused() {
    let (d, mut o) = orders();
    // matching marker: nothing to do
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(p.action, TableAction::Unchanged);
    assert_eq!(p.resource.as_deref(), Some("sales/orders"));

    // no marker: a visible Claim step, and nothing else
    o.properties.remove(OWNER_PROPERTY);
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(p.action, TableAction::Update);
    assert_eq!(steps(&p), vec!["1. CLAIM ownership [meta]"]);
    assert_eq!(
        p.steps()[0].action,
        Action::Claim {
            marker: "sales/orders".into(),
            constraints: None,
            scope: Scope::Full,
        }
    );

    // another resource's marker: refused, with who owns it
    o.properties
        .insert(OWNER_PROPERTY.into(), "billing/orders".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(failures(&p), vec!["OwnedByAnotherResource"]);
    let f = failure(&p, "OwnedByAnotherResource");
    assert!(
        f.message.contains("billing/orders") && f.fix.contains("billing/orders"),
        "{f:?}"
    );
    assert!(p.steps().is_empty());
}
