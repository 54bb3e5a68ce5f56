//! Scopes: what a narrow-scope spec plans, mirrors, defers and never drops.

use super::*;
use delta_operator_core::model::Unstated;
use delta_operator_core::model::property::SCOPE_PROPERTY;

/// `orders` at `scope`, declaring only `amount` (type and nullability unstated), live with
/// three more columns a job added, and an unmarked (pipeline-made) table.
fn annotated(scope: Scope) -> (DesiredTable, ObservedTable) {
    let mut amount = col("amount", "void");
    amount.unstated = Unstated {
        data_type: true,
        nullable: true,
    };
    amount.comment = Some("in cents".into());
    amount.tags.insert("pii".into(), Some("no".into()));
    let mut d = desired("orders", vec![amount]);
    d.scope = scope;
    let (_, mut o) = orders();
    o.properties.remove(OWNER_PROPERTY);
    o.columns.push(ocol("added_by_job", "string"));
    (d, o)
}

#[test]
fn a_narrow_scope_claims_at_its_scope_and_plans_only_what_it_manages() {
    let (mut d, o) = annotated(Scope::Annotations);
    d.tags.insert("domain".into(), Some("sales".into()));
    d.comment = Some("orders, by the pipeline".into());
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(p.is_accepted(), "{:#?}", p.outcome);
    let kinds: Vec<&str> = p.changes.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "Claim",
            "SetTableComment",
            "SetTableTag",
            "SetColumnComment",
            "SetColumnTag"
        ],
        "no column is dropped, added or retyped: {:#?}",
        p.changes
    );
    assert!(matches!(
        &p.changes[0],
        Change::Claim {
            scope: Scope::Annotations,
            ..
        }
    ));
    // the claim records the scope on the table, in the same write as the marker
    let Action::Claim { scope, .. } = &p.steps()[0].action else {
        panic!("{:#?}", p.steps()[0])
    };
    assert_eq!(*scope, Scope::Annotations);
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("3 live column(s) the spec does not list")
                && n.contains("scope Annotations")),
        "{:?}",
        p.notes
    );
    assert!(p.steps().iter().all(|s| s.class == RiskClass::Meta));
}

#[test]
fn what_a_narrow_scope_mirrors_refuses_the_plan_by_name_and_says_each_difference() {
    let (mut d, o) = annotated(Scope::Annotations);
    d.properties
        .insert("delta.appendOnly".into(), Some("true".into()));
    d.columns.push(col("missing", "string"));
    dcol(&mut d, "amount").nullable = false;
    dcol(&mut d, "amount").unstated.nullable = false;
    let p = plan_table(&d, Some(&o), &dbx());
    let Outcome::Rejected { failures } = &p.outcome else {
        panic!("{:#?}", p.outcome)
    };
    let rules: Vec<String> = failures.iter().map(|f| f.rule.to_string()).collect();
    assert_eq!(
        rules,
        ["UnmanagedAspectDrift", "UnmanagedAspectDrift"],
        "{failures:#?}"
    );
    let columns = &failures[0];
    assert!(
        columns
            .message
            .contains("scope Annotations does not manage the table's columns")
    );
    assert!(
        columns
            .message
            .contains("missing is declared, but the table has no such column")
    );
    assert!(
        columns.message.contains("amount  nullable → NOT NULL"),
        "{}",
        columns.message
    );
    assert!(
        columns.fix.contains("spec.scope: Metadata") || columns.fix.contains("spec.scope: Full")
    );
    assert!(
        failures[1].message.contains("property delta.appendOnly"),
        "{}",
        failures[1].message
    );
    assert!(
        failures[1].fix.contains("spec.scope: Metadata"),
        "{}",
        failures[1].fix
    );
}

#[test]
fn at_scope_tags_comments_are_mirrored_and_tags_managed() {
    let (d, o) = annotated(Scope::Tags);
    let p = plan_table(&d, Some(&o), &dbx());
    assert_eq!(failures(&p), ["UnmanagedAspectDrift"]);
    let mut d = d;
    dcol(&mut d, "amount").comment = None;
    let p = plan_table(&d, Some(&o), &dbx());
    let kinds: Vec<&str> = p.changes.iter().map(kind).collect();
    assert_eq!(kinds, ["Claim", "SetColumnTag"], "{:#?}", p.outcome);
}

#[test]
fn an_absent_table_is_deferred_below_full_and_created_at_full() {
    for scope in [Scope::Metadata, Scope::Annotations, Scope::Tags] {
        let (mut d, _) = annotated(scope);
        d.scope = scope;
        let p = plan_table(&d, None, &dbx());
        assert_eq!(p.action, TableAction::Deferred);
        assert!(p.is_deferred() && !p.is_refused() && p.steps().is_empty());
        let plan = plan::finish(&Capabilities::databricks(), vec![p], vec![]);
        assert_eq!((plan.summary.deferred, plan.summary.rejected), (1, 0));
        assert!(!plan.has_changes());
        assert_eq!(gate(&plan, Policy::Auto, None), Decision::NothingToDo);
        let text = plan::render::text::render(&plan);
        assert!(text.contains("deferred"), "{text}");
    }
    let (d, _) = orders();
    assert_eq!(plan_table(&d, None, &dbx()).action, TableAction::Create);
}

#[test]
fn a_later_wider_scope_is_a_visible_step_and_then_plans_the_whole_table() {
    let (d, mut o) = annotated(Scope::Annotations);
    o.properties.insert(OWNER_PROPERTY.into(), marker("orders"));
    o.properties
        .insert(SCOPE_PROPERTY.into(), "annotations".into());
    // the same scope: no scope step
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(
        !p.changes.iter().any(|c| kind(c) == "SetScope"),
        "{:#?}",
        p.changes
    );
    // Full: the scope step, and what Full manages (the unlisted columns are dropped)
    let (mut full, _) = orders();
    full.columns.retain(|c| c.name != "note");
    let p = plan_table(&full, Some(&o), &dbx());
    assert_eq!(
        p.changes[0],
        Change::SetScope {
            from: Scope::Annotations,
            to: Scope::Full
        }
    );
    assert!(p.changes.iter().any(|c| kind(c) == "DropColumn"));
    assert!(
        p.steps().iter().any(|s| matches!(
            &s.action,
            Action::UnsetProperties { keys } if keys == &[SCOPE_PROPERTY.to_string()]
        )),
        "{:#?}",
        p.steps()
    );
}

#[test]
fn a_table_governed_at_a_narrow_scope_is_never_dropped() {
    let (_, mut o) = orders();
    o.properties.insert(SCOPE_PROPERTY.into(), "tags".into());
    let p = plan_orphan(&o, true, &dbx());
    assert_eq!(p.action, TableAction::Keep);
    assert!(
        p.steps().is_empty() && p.notes[0].contains("scope Tags"),
        "{:?}",
        p.notes
    );
    let p = plan_delete(&o, &dbx());
    assert_eq!(p.action, TableAction::Keep);
    assert!(p.steps().is_empty());
    // a scope record nobody wrote is read as the narrowest scope, never as Full
    o.properties
        .insert(SCOPE_PROPERTY.into(), "everything".into());
    assert_eq!(plan_orphan(&o, true, &dbx()).action, TableAction::Keep);
    o.properties.remove(SCOPE_PROPERTY);
    assert_eq!(plan_orphan(&o, true, &dbx()).action, TableAction::Destroy);
}

#[test]
fn owned_constraints_are_not_dropped_or_recorded_below_metadata() {
    let (d, mut o) = annotated(Scope::Annotations);
    o.properties.insert(OWNER_PROPERTY.into(), marker("orders"));
    o.properties
        .insert(SCOPE_PROPERTY.into(), "annotations".into());
    o.checks.push(Check {
        name: "positive".into(),
        expression: "amount > 0".into(),
    });
    owning(&mut o, &["check:positive"]);
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(p.is_accepted(), "{:#?}", p.outcome);
    assert!(
        !p.changes
            .iter()
            .any(|c| matches!(kind(c), "DropCheck" | "SetProperty")),
        "{:#?}",
        p.changes
    );
}

#[test]
fn a_streaming_table_or_view_is_governed_at_the_annotation_scopes_only_and_never_marked() {
    use delta_operator_core::model::TableKind;
    for kind in [
        TableKind::StreamingTable,
        TableKind::MaterializedView,
        TableKind::View,
    ] {
        let (mut d, mut o) = annotated(Scope::Annotations);
        o.kind = kind;
        d.tags.insert("domain".into(), Some("sales".into()));
        let p = plan_table(&d, Some(&o), &dbx());
        assert!(p.is_accepted(), "{kind:?}: {:#?}", p.outcome);
        let kinds: Vec<&str> = p.changes.iter().map(kind_of).collect();
        assert_eq!(
            kinds,
            ["SetTableTag", "SetColumnComment", "SetColumnTag"],
            "{kind:?}: no claim, no marker: its ALTER takes no table property"
        );
        for scope in [Scope::Full, Scope::Metadata] {
            d.scope = scope;
            let p = plan_table(&d, Some(&o), &dbx());
            let Outcome::Rejected { failures } = &p.outcome else {
                panic!("{kind:?} at {scope}: {:#?}", p.outcome)
            };
            assert_eq!(failures.len(), 1);
            assert_eq!(failures[0].rule.to_string(), "ScopeTooWideForKind");
            assert!(
                failures[0].message.contains(kind.words()),
                "{}",
                failures[0].message
            );
            assert!(failures[0].fix.contains("spec.scope: Annotations"));
        }
    }
}

fn kind_of(c: &Change) -> &'static str {
    kind(c)
}

#[test]
fn a_narrow_scope_plan_id_rests_on_what_it_governs_only() {
    let (mut d, o) = annotated(Scope::Annotations);
    d.tags.insert("domain".into(), Some("sales".into()));
    let id = |o: &ObservedTable| {
        plan::plan(
            std::slice::from_ref(&d),
            std::slice::from_ref(o),
            &[],
            &dbx(),
        )
        .id
    };
    let base = id(&o);
    // what the job owns moves: its columns, the table comment, tags the spec does not name
    let mut moved = o.clone();
    moved.columns.push(ocol("c9", "string"));
    moved.comment = Some("the job's words".into());
    moved.tags.insert("owner-team".into(), "ingest".into());
    lcol(&mut moved, "id").comment = Some("the job's column".into());
    assert_eq!(
        id(&moved),
        base,
        "the job's own changes do not make the plan stale"
    );
    // what the spec governs moves: a new plan
    let mut governed = o.clone();
    lcol(&mut governed, "amount").comment = Some("in dollars".into());
    assert_ne!(id(&governed), base);
    let mut tagged = o.clone();
    tagged.tags.insert("domain".into(), "finance".into());
    assert_ne!(id(&tagged), base);
    // at Full, anything observed is part of the id, as before
    let mut full = d.clone();
    full.scope = Scope::Full;
    let full_id = |o: &ObservedTable| {
        plan::plan(
            std::slice::from_ref(&full),
            std::slice::from_ref(o),
            &[],
            &dbx(),
        )
        .id
    };
    assert_ne!(full_id(&moved), full_id(&o));
}
