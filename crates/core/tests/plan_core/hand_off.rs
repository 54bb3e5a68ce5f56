//! Hand-offs: what another tool owns is never planned, by any route, and is still known.

use super::*;
use delta_operator_core::model::{HandOff, Handed};

fn handing(aspects: &[Handed], prefixes: &[&str]) -> HandOff {
    HandOff {
        aspects: aspects.iter().copied().collect(),
        property_prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
        to: ["dbt".to_string()].into(),
    }
}

#[test]
fn a_handed_off_part_is_never_planned_even_when_a_spec_declares_it() {
    // validation refuses these declarations; the diff is the net behind it
    let (mut d, mut o) = orders();
    d.tags.insert("domain".into(), Some("sales".into()));
    dcol(&mut d, "amount").comment = Some("in cents".into());
    d.grants.push(Grant {
        principal: "analysts".into(),
        privileges: vec![Privilege::new("SELECT")],
    });
    d.owner = Some("data-eng".into());
    d.properties
        .insert("pipelines.reset.allowed".into(), Some("false".into()));
    d.properties
        .insert("delta.appendOnly".into(), Some("true".into()));
    o.checks.push(Check {
        name: "positive".into(),
        expression: "amount > 0".into(),
    });
    owning(&mut o, &["check:positive"]);
    d.hand_off = handing(
        &[
            Handed::Tags,
            Handed::Comments,
            Handed::Grants,
            Handed::Owner,
            Handed::Checks,
        ],
        &["pipelines."],
    );
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(p.is_accepted(), "{:#?}", p.outcome);
    let kinds: Vec<&str> = p.changes.iter().map(kind).collect();
    // the recorded CHECK the spec no longer declares is not dropped: Checks are dbt's
    assert_eq!(kinds, ["SetProperty"], "{:#?}", p.changes);
    assert!(matches!(&p.changes[0], Change::SetProperty { key, .. } if key == "delta.appendOnly"));
    assert!(
        p.notes.iter().any(|n| n
            == "handed off, never planned here: tags, grants, owner, comments, CHECK constraints, properties pipelines.* (to dbt)"),
        "{:?}",
        p.notes
    );
    // without the hand-off the same spec plans all of them
    d.hand_off = HandOff::default();
    let p = plan_table(&d, Some(&o), &dbx());
    assert!(p.changes.len() >= 7, "{:#?}", p.changes);
}

#[test]
fn what_is_handed_off_is_still_known_to_the_rewrite() {
    // a masked table still refuses a rebuild with masks handed off
    let (mut d, mut o) = orders();
    d.partitioned_by = Some(vec!["note".into()]);
    lcol(&mut o, "note").mask = Some(Mask {
        function: "main.sec.redact".into(),
        using_columns: vec![],
    });
    d.hand_off = handing(&[Handed::Masks], &[]);
    assert_eq!(
        failures(&plan_table(&d, Some(&o), &dbx())),
        ["RewriteRefused"]
    );

    // a renamed column's tags are still put back after the replace with tags handed off
    let (mut d, mut o) = orders();
    lcol(&mut o, "note").tags.insert("pii".into(), "yes".into());
    dcol(&mut d, "amount").data_type = DataType::String;
    dcol(&mut d, "amount").using = Some("format_number(amount, 0)".into());
    let c = dcol(&mut d, "note");
    c.name = "remark".to_string();
    c.renamed_from = Some("note".to_string());
    d.partitioned_by = Some(vec!["remark".to_string()]);
    d.hand_off = handing(&[Handed::Tags], &[]);
    let p = plan_table(&d, Some(&o), &dbx());
    let titles: Vec<String> = p.steps().iter().map(|s| s.action.title()).collect();
    assert!(
        titles.iter().any(|t| t == "SET TAGS on remark"),
        "the put-back keeps another tool's tags: {titles:?}"
    );
}
