//! A DeltaSchema's own metadata, planned (`plan::schema`): its comment,
//! properties, owner and grants against the live schema, on both backends.

use std::collections::BTreeMap;

use delta_operator_core::model::{
    Grant, ObservedSchema, Privilege, SchemaMeta, SchemaMode, SchemaRef,
};
use delta_operator_core::plan::gate::{Decision, Policy, gate};
use delta_operator_core::plan::render::{json, markdown, text};
use delta_operator_core::plan::schema::{SchemaAction, SchemaOutcome, holds, plan_schema};
use delta_operator_core::plan::{self, Capabilities, Rule, SchemaScope, plan_schemas};

fn sales() -> SchemaRef {
    SchemaRef {
        catalog: "main".into(),
        schema: "sales".into(),
    }
}

fn grant(principal: &str, privileges: &[&str]) -> Grant {
    Grant {
        principal: principal.into(),
        privileges: privileges.iter().map(|p| Privilege::new(p)).collect(),
    }
}

fn declared() -> SchemaMeta {
    SchemaMeta {
        comment: Some("Sales data".into()),
        properties: BTreeMap::from([
            ("team".into(), Some("revenue".into())),
            ("gone".into(), None),
        ]),
        owner: Some("data-eng".into()),
        grants: vec![grant("analysts", &["USE SCHEMA", "SELECT"])],
        managed_location: None,
    }
}

/// Live: another comment, `team` set otherwise, an unnamed property, analysts
/// with MODIFY instead of SELECT, an unnamed principal, another owner.
fn live() -> ObservedSchema {
    ObservedSchema {
        comment: Some("old".into()),
        properties: BTreeMap::from([
            ("team".into(), "finance".into()),
            ("other".into(), "kept".into()),
        ]),
        owner: Some("admin".into()),
        grants: vec![
            grant("analysts", &["USE_SCHEMA", "MODIFY"]),
            grant("auditors", &["SELECT"]),
        ],
        ..ObservedSchema::new(sales())
    }
}

fn titles(p: &plan::SchemaPlan) -> Vec<String> {
    p.steps()
        .iter()
        .map(|s| format!("{}. {} [{}]", s.number, s.action.title(), s.class))
        .collect()
}

#[test]
fn a_silent_spec_on_a_live_schema_has_no_schema_plan() {
    let caps = Capabilities::databricks();
    assert!(plan_schema(&sales(), &SchemaMeta::default(), Some(&live()), &caps).is_none());
    // not even on the lake: a DeltaSchema without metadata is what every lake user writes
    let folder = ObservedSchema::new(sales());
    assert!(
        plan_schema(
            &sales(),
            &SchemaMeta::default(),
            Some(&folder),
            &Capabilities::lake()
        )
        .is_none()
    );
}

#[test]
fn a_silent_spec_still_creates_an_absent_schema() {
    for caps in [Capabilities::databricks(), Capabilities::lake()] {
        let p = plan_schema(&sales(), &SchemaMeta::default(), None, &caps)
            .expect("an absent schema has a plan");
        assert_eq!(titles(&p), ["1. CREATE SCHEMA [meta]"], "{}", caps.backend);
        assert_eq!(
            p.steps()[0].action,
            SchemaAction::Create {
                comment: None,
                properties: BTreeMap::new(),
                managed_location: None
            }
        );
        assert!(p.notes[0].contains("never drops a schema"), "{:?}", p.notes);
        let undo = p.steps()[0].undo.as_deref().unwrap();
        assert!(undo.contains("never run"), "{undo}");
    }
    // on the lake the undo is the folder's, not SQL
    let p = plan_schema(
        &sales(),
        &SchemaMeta::default(),
        None,
        &Capabilities::lake(),
    )
    .unwrap();
    assert_eq!(
        p.steps()[0].undo.as_deref(),
        Some(
            "remove the folder main/sales/ once it is empty (shown, never run: the operator never drops a schema)"
        )
    );
}

#[test]
fn every_declared_field_is_a_step_and_what_is_not_named_is_left_alone() {
    let p = plan_schema(
        &sales(),
        &declared(),
        Some(&live()),
        &Capabilities::databricks(),
    )
    .unwrap();
    assert_eq!(
        titles(&p),
        [
            "1. COMMENT ON SCHEMA [meta]",
            "2. SET DBPROPERTIES (team) [meta]",
            "3. GRANT SELECT ON SCHEMA TO analysts [meta]",
            "4. REVOKE MODIFY ON SCHEMA FROM analysts [meta]",
            "5. OWNER TO data-eng [meta]",
        ]
    );
    let s = p.steps();
    assert_eq!(
        s[0].undo.as_deref(),
        Some("COMMENT ON SCHEMA main.sales IS 'old'")
    );
    assert_eq!(s[1].undo.as_deref(), Some("was: 'team'='finance'"));
    // the revoke is visible: a warning and its undo
    assert_eq!(
        s[3].warnings,
        [
            "analysts loses MODIFY on main.sales, and with it on every object of the schema that inherits it"
        ]
    );
    assert_eq!(
        s[3].undo.as_deref(),
        Some("GRANT MODIFY ON SCHEMA main.sales TO analysts")
    );
    assert_eq!(
        s[4].undo.as_deref(),
        Some("ALTER SCHEMA main.sales OWNER TO admin")
    );
    // `other` (not named), `gone` (null, not live) and auditors (not named) have no step
    let all = format!("{:?}", s);
    assert!(!all.contains("other") && !all.contains("gone") && !all.contains("auditors"));
}

#[test]
fn a_schema_that_matches_plans_nothing() {
    let mut l = live();
    l.comment = Some("Sales data".into());
    l.properties.insert("team".into(), "revenue".into());
    l.owner = Some("data-eng".into());
    l.grants[0] = grant("ANALYSTS", &["select", "use_schema"]);
    let caps = Capabilities::databricks();
    let p = plan_schema(&sales(), &declared(), Some(&l), &caps).unwrap();
    assert!(p.is_accepted() && p.steps().is_empty(), "{p:?}");
    let whole = plan::finish(&caps, vec![], vec![]).with_schemas(vec![p], &caps);
    assert!(!whole.has_changes());
    assert_eq!(gate(&whole, Policy::Auto, None), Decision::NothingToDo);
}

#[test]
fn an_empty_comment_clears_and_undoes_to_the_live_one() {
    let want = SchemaMeta {
        comment: Some(String::new()),
        ..SchemaMeta::default()
    };
    let p = plan_schema(&sales(), &want, Some(&live()), &Capabilities::databricks()).unwrap();
    assert_eq!(
        p.steps()[0].action,
        SchemaAction::SetComment {
            comment: String::new()
        }
    );
    let mut none = live();
    none.comment = None;
    assert!(
        plan_schema(&sales(), &want, Some(&none), &Capabilities::databricks())
            .unwrap()
            .steps()
            .is_empty()
    );
}

#[test]
fn the_lake_refuses_each_field_a_folder_cannot_hold_by_name() {
    let caps = Capabilities::lake();
    let p = plan_schema(&sales(), &declared(), None, &caps).unwrap();
    let SchemaOutcome::Rejected { failures } = &p.outcome else {
        panic!("accepted on the lake: {p:?}");
    };
    let subjects: Vec<&str> = failures.iter().map(|f| f.subject.as_str()).collect();
    assert_eq!(
        subjects,
        [
            "spec.comment",
            "spec.properties",
            "spec.owner",
            "spec.grants"
        ]
    );
    for f in failures {
        assert_eq!(f.rule, Rule::NotSupportedByBackend);
        assert!(f.message.contains("folder"), "{}", f.message);
        assert!(
            f.fix.contains(&format!("remove {}", f.subject)),
            "{}",
            f.fix
        );
    }
    let whole = plan::finish(&caps, vec![], vec![]).with_schemas(vec![p], &caps);
    assert_eq!(whole.summary.rejected, 1);
    assert_eq!(
        gate(&whole, Policy::Auto, Some(&whole.id)),
        Decision::Rejected
    );
    let shown = text::render(&whole);
    assert!(
        shown.contains("✗ NotSupportedByBackend (spec.comment)"),
        "{shown}"
    );
    assert!(
        shown.contains("✗ 1 schema refused by the rules above"),
        "{shown}"
    );
    // a null property only removes: a folder trivially holds none
    let only_removal = SchemaMeta {
        properties: BTreeMap::from([("gone".into(), None)]),
        ..SchemaMeta::default()
    };
    let p = plan_schema(&sales(), &only_removal, None, &caps).unwrap();
    assert!(p.is_accepted());
    assert_eq!(titles(&p), ["1. CREATE SCHEMA [meta]"]);
}

#[test]
fn removing_a_live_schema_property_is_refused_on_databricks() {
    let want = SchemaMeta {
        properties: BTreeMap::from([("other".into(), None), ("absent".into(), None)]),
        ..SchemaMeta::default()
    };
    let p = plan_schema(&sales(), &want, Some(&live()), &Capabilities::databricks()).unwrap();
    let SchemaOutcome::Rejected { failures } = &p.outcome else {
        panic!("accepted: {p:?}");
    };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].subject, "spec.properties.other");
    assert_eq!(failures[0].rule, Rule::NotSupportedByBackend);
}

#[test]
fn an_absent_schema_is_created_first_with_what_its_create_carries() {
    let want = SchemaMeta {
        managed_location: Some("abfss://lake@acct.dfs.core.windows.net/sales".into()),
        ..declared()
    };
    let p = plan_schema(&sales(), &want, None, &Capabilities::databricks()).unwrap();
    assert_eq!(
        titles(&p),
        [
            "1. CREATE SCHEMA [meta]",
            "2. GRANT SELECT, USE SCHEMA ON SCHEMA TO analysts [meta]",
            "3. OWNER TO data-eng [meta]",
        ]
    );
    let s = p.steps();
    // the comment, the properties with a value (a null one has nothing to remove) and the location
    assert_eq!(
        s[0].action,
        SchemaAction::Create {
            comment: Some("Sales data".into()),
            properties: BTreeMap::from([("team".into(), "revenue".into())]),
            managed_location: Some("abfss://lake@acct.dfs.core.windows.net/sales".into()),
        }
    );
    // the undo is shown, never run: the operator never drops a schema
    let undo = s[0].undo.as_deref().unwrap();
    assert!(
        undo.starts_with("DROP SCHEMA main.sales RESTRICT"),
        "{undo}"
    );
    assert!(undo.contains("never run"), "{undo}");
    assert!(p.notes[0].contains("does not exist"), "{:?}", p.notes);
    assert!(p.notes[0].contains("never drops a schema"), "{:?}", p.notes);
    assert!(holds(&s[0].action, Some(&live())));
    assert!(!holds(&s[0].action, None));
    // counted as an addition, and shown as one
    let caps = Capabilities::databricks();
    let whole = plan::finish(&caps, vec![], vec![]).with_schemas(vec![p], &caps);
    assert_eq!((whole.summary.add, whole.summary.change), (1, 0));
    assert_eq!(gate(&whole, Policy::Auto, None), Decision::Apply);
    let t = text::render(&whole);
    assert!(t.contains("main.sales   + schema create"), "{t}");
    assert!(t.contains("1. CREATE SCHEMA"), "{t}");
    assert!(
        t.contains("Plan: 1 to add, 0 to change, 0 to destroy"),
        "{t}"
    );
    let md = markdown::render(&whole);
    assert!(md.contains("#### schema `main.sales` — create"), "{md}");
    let back = json::parse(&json::render(&whole)).unwrap();
    assert_eq!(back, whole);
}

#[test]
fn an_empty_comment_on_an_absent_schema_creates_it_without_one() {
    let want = SchemaMeta {
        comment: Some(String::new()),
        ..SchemaMeta::default()
    };
    let p = plan_schema(&sales(), &want, None, &Capabilities::databricks()).unwrap();
    assert!(matches!(
        &p.steps()[0].action,
        SchemaAction::Create { comment: None, .. }
    ));
}

#[test]
fn an_existing_schema_is_never_created_and_keeps_its_location() {
    let want = SchemaMeta {
        managed_location: Some("s3://bucket/sales".into()),
        ..SchemaMeta::default()
    };
    let p = plan_schema(&sales(), &want, Some(&live()), &Capabilities::databricks()).unwrap();
    assert!(p.is_accepted() && p.steps().is_empty(), "{p:?}");
    assert!(
        p.notes[0].contains("only when the operator creates the schema"),
        "{:?}",
        p.notes
    );
    let p = plan_schema(
        &sales(),
        &declared(),
        Some(&live()),
        &Capabilities::databricks(),
    )
    .unwrap();
    assert!(!p.creates());
    assert!(
        p.steps()
            .iter()
            .all(|s| !matches!(s.action, SchemaAction::Create { .. }))
    );
}

#[test]
fn a_managed_location_is_refused_on_the_lake_by_name() {
    let want = SchemaMeta {
        managed_location: Some("s3://bucket/sales".into()),
        ..SchemaMeta::default()
    };
    let p = plan_schema(&sales(), &want, None, &Capabilities::lake()).unwrap();
    let SchemaOutcome::Rejected { failures } = &p.outcome else {
        panic!("accepted on the lake: {p:?}");
    };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].subject, "spec.managedLocation");
    assert_eq!(failures[0].rule, Rule::NotSupportedByBackend);
}

#[test]
fn the_plan_id_covers_the_schema_and_the_summary_counts_it() {
    let caps = Capabilities::databricks();
    let base = plan::finish(&caps, vec![], vec![]);
    // a plan without schema plans keeps its id
    assert_eq!(base.clone().with_schemas(vec![], &caps).id, base.id);
    let scope = SchemaScope {
        schema: sales(),
        mode: SchemaMode::Additive,
        meta: declared(),
    };
    let with = |l: ObservedSchema, m: SchemaMeta| {
        let scope = SchemaScope {
            meta: m,
            ..scope.clone()
        };
        base.clone()
            .with_schemas(plan_schemas(&[scope], &[l], &caps), &caps)
    };
    let p = with(live(), declared());
    assert_eq!(p.summary.change, 1);
    assert_eq!(p.summary.steps, 5);
    assert_eq!(p.summary.warnings, 2);
    assert_ne!(p.id, base.id);
    let mut other_live = live();
    other_live.grants.pop(); // auditors gone: not named, but the live state moved
    assert_ne!(with(other_live, declared()).id, p.id);
    let mut other_spec = declared();
    other_spec.owner = Some("someone-else".into());
    assert_ne!(with(live(), other_spec).id, p.id);
    assert_eq!(with(live(), declared()).id, p.id);
    // Auto applies it (every schema step is meta); Manual waits for this id
    assert_eq!(gate(&p, Policy::Auto, None), Decision::Apply);
    assert!(matches!(
        gate(&p, Policy::Manual, None),
        Decision::NeedsApproval { id, .. } if id == p.id
    ));
    assert_eq!(gate(&p, Policy::Manual, Some(&p.id)), Decision::Apply);
}

#[test]
fn holds_reads_the_live_schema() {
    let l = live();
    let set = |k: &str, v: &str| SchemaAction::SetProperties {
        properties: BTreeMap::from([(k.to_string(), v.to_string())]),
    };
    assert!(holds(&set("team", "finance"), Some(&l)));
    assert!(!holds(&set("team", "revenue"), Some(&l)));
    let g = |p: &[&str]| SchemaAction::Grant {
        principal: "Analysts".into(),
        privileges: p.iter().map(|x| Privilege::new(x)).collect(),
    };
    assert!(holds(&g(&["MODIFY"]), Some(&l)));
    assert!(!holds(&g(&["SELECT"]), Some(&l)));
    let r = SchemaAction::Revoke {
        principal: "analysts".into(),
        privileges: vec![Privilege::new("SELECT")],
    };
    assert!(holds(&r, Some(&l)));
    assert!(holds(
        &SchemaAction::SetOwner {
            owner: "admin".into()
        },
        Some(&l)
    ));
    assert!(!holds(
        &SchemaAction::SetComment {
            comment: "x".into()
        },
        None
    ));
}

#[test]
fn every_format_shows_the_schema_steps() {
    let caps = Capabilities::databricks();
    let p = plan::finish(&caps, vec![], vec![]).with_schemas(
        vec![plan_schema(&sales(), &declared(), Some(&live()), &caps).unwrap()],
        &caps,
    );
    let t = text::render(&p);
    assert!(t.contains("main.sales   ~ schema update"), "{t}");
    assert!(
        t.contains("4. REVOKE MODIFY ON SCHEMA FROM analysts"),
        "{t}"
    );
    assert!(
        t.contains("undo: GRANT MODIFY ON SCHEMA main.sales TO analysts"),
        "{t}"
    );
    assert!(
        t.contains("Plan: 0 to add, 1 to change, 0 to destroy · 5 steps"),
        "{t}"
    );
    let md = markdown::render(&p);
    assert!(md.contains("#### schema `main.sales` — update"), "{md}");
    assert!(md.contains("| 5 | OWNER TO data-eng | 🟢 meta |"), "{md}");
    let j = json::render(&p);
    let back = json::parse(&j).unwrap();
    assert_eq!(back, p);
    assert_eq!(
        plan::id::plan_id_all(back.backend, &back.tables, &back.schemas),
        p.id
    );
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["schemas"][0]["steps"][3]["action"], "revoke");
}
