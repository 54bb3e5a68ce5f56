//! Step order, numbering, prerequisites.

use super::*;

#[test]
fn steps_follow_the_fixed_order_and_are_numbered_from_one() {
    let (mut d, mut o) = orders();
    o.columns.push(ocol("legacy", "string"));
    o.checks.push(Check {
        name: "stale".into(),
        expression: "id > 0".into(),
    });
    owning(&mut o, &["check:stale"]);
    d.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec!["SELECT".into()],
    });
    d.owner = Some("data-eng".into());
    d.checks.push(Check {
        name: "positive".into(),
        expression: "amount > 0".into(),
    });
    d.cluster_by = Some(vec!["id".into()]);
    d.columns.push(col("status", "string"));
    dcol(&mut d, "id").comment = Some("the key".into());
    dcol(&mut d, "amount").data_type = DataType::Long;
    let c = dcol(&mut d, "note");
    c.name = "remark".into();
    c.renamed_from = Some("note".into());
    d.comment = Some("All orders".into());

    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(
        steps(&p),
        vec![
            "1. enable columnMapping [feature]",
            "2. enable typeWidening [feature]",
            "3. DROP CONSTRAINT stale [meta]",
            "4. COMMENT ON TABLE [meta]",
            "5. RENAME COLUMN note TO remark [meta]",
            "6. ADD COLUMN status [meta]",
            "7. ALTER COLUMN amount TYPE bigint [meta]",
            "8. COMMENT ON COLUMN id [meta]",
            "9. CLUSTER BY (id) [meta]",
            "10. DROP COLUMN legacy [destructive]",
            "11. ADD CONSTRAINT positive CHECK [meta]",
            "12. SET TBLPROPERTIES (delta-operator.io/constraints) [meta]",
            "13. GRANT SELECT TO analysts [meta]",
            "14. SET OWNER data-eng [meta]",
        ]
    );
    // the rename and the drop both need column mapping: one prerequisite step, not two
    let n = p
        .steps()
        .iter()
        .filter(|s| s.action == Action::EnableColumnMapping)
        .count();
    assert_eq!(n, 1);
    // serves points each step at a change of the matching kind
    for s in p.steps() {
        for i in &s.serves {
            let k = kind(&p.changes[*i]);
            let title = s.action.title();
            let ok = match k {
                "DropCheck" => title.starts_with("DROP CONSTRAINT"),
                "AddCheck" => title.starts_with("ADD CONSTRAINT"),
                "SetTableComment" => title == "COMMENT ON TABLE",
                "RenameColumn" => title.starts_with("RENAME"),
                "AddColumn" => title.starts_with("ADD COLUMN"),
                "ChangeType" => title.starts_with("ALTER COLUMN"),
                "SetColumnComment" => title.starts_with("COMMENT ON COLUMN"),
                "SetClustering" => title.starts_with("CLUSTER BY"),
                "DropColumn" => title.starts_with("DROP COLUMN"),
                "Grant" => title.starts_with("GRANT"),
                "SetOwner" => title.starts_with("SET OWNER"),
                "SetProperty" => title.starts_with("SET TBLPROPERTIES"),
                _ => false,
            };
            assert!(ok, "step {title:?} serves change {i} of kind {k}");
        }
    }
    let plan = plan::finish(&dbx(), vec![p], vec![]);
    assert_eq!(plan.summary.steps, 14);
    assert_eq!(plan.summary.change, 1);
    assert_eq!(plan.summary.rewrites, 0);
    // streaming readers (mapping), older clients (widening), dropped data, the CHECK's table scan, the owner hand-over
    assert_eq!(plan.summary.warnings, 5);
}

#[test]
fn column_mapping_already_on_means_no_prerequisite() {
    let (mut d, mut o) = orders();
    o.properties
        .insert("delta.columnMapping.mode".into(), "name".into());
    d.columns.retain(|c| c.name != "note");
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(steps(&p), vec!["1. DROP COLUMN note [destructive]"]);
    // the live property the spec is silent about is left alone, and said out loud
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("delta.columnMapping.mode")),
        "{:?}",
        p.notes
    );
}

/// A table in `id` mode already has physical column names: a rename or a drop
/// is made in place, and no step tries to turn mapping on (Delta refuses
/// switching `id` to `name`, and `holds` already counts `id` as mapped).
#[test]
fn column_mapping_in_id_mode_means_no_prerequisite() {
    for caps in [dbx(), lake()] {
        let (mut d, mut o) = orders();
        o.properties
            .insert("delta.columnMapping.mode".into(), "id".into());
        d.columns.retain(|c| c.name != "note");
        let p = plan_table(&d, Some(&o), &caps);
        assert!(
            !p.steps()
                .iter()
                .any(|s| matches!(s.action, Action::EnableColumnMapping)),
            "{:?}: {:?}",
            caps.backend,
            steps(&p)
        );
        // the planner and `holds` agree: what the plan would add already holds
        assert!(holds(&Action::EnableColumnMapping, Some(&o)));
    }
}

#[test]
fn create_steps_in_order() {
    let (mut d, _) = orders();
    d.tags.insert("domain".into(), Some("sales".into()));
    d.tags.insert("gone".into(), None);
    dcol(&mut d, "note")
        .tags
        .insert("pii".into(), Some("yes".into()));
    dcol(&mut d, "note").mask = Some(Mask {
        function: "main.sec.redact".into(),
        using_columns: vec![],
    });
    d.checks.push(Check {
        name: "positive".into(),
        expression: "amount > 0".into(),
    });
    d.primary_key = Some(PrimaryKey {
        name: None,
        columns: vec!["id".into()],
    });
    d.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec!["SELECT".into()],
    });
    d.owner = Some("data-eng".into());
    let p = plan_table(&d, None, &dbx());
    assert_eq!(p.action, TableAction::Create);
    assert_eq!(
        steps(&p),
        vec![
            "1. CREATE TABLE [meta]",
            "2. SET TAGS (domain) [meta]",
            "3. SET TAGS on note [meta]",
            "4. SET MASK on note [meta]",
            "5. ADD CONSTRAINT positive CHECK [meta]",
            "6. ADD PRIMARY KEY [meta]",
            "7. GRANT SELECT TO analysts [meta]",
            "8. SET OWNER data-eng [meta]",
        ]
    );
    let create = &p.steps()[0];
    assert_eq!(undo_of(&p, create), by_steps(vec![Action::DropTable]));
    assert!(
        create
            .notes
            .iter()
            .any(|n| n.contains(OWNER_PROPERTY) && n.contains("sales/orders")),
        "{:?}",
        create.notes
    );
    assert_eq!(create.est_bytes, None);
    assert_eq!(p.size_bytes, None);
    assert_eq!(p.version, None);
}
