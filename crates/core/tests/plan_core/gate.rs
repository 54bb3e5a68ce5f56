//! The gate.

use super::*;

/// (no steps, meta-only, destructive, rejected) plans.
fn gate_plans() -> (Plan, Plan, Plan, Plan) {
    let (d, o) = orders();
    let empty = plan::plan(
        std::slice::from_ref(&d),
        std::slice::from_ref(&o),
        &[],
        &dbx(),
    );
    let mut d_add = d.clone();
    d_add.columns.push(col("status", "string"));
    let meta = plan::plan(&[d_add], std::slice::from_ref(&o), &[], &dbx());
    let mut d_drop = d.clone();
    d_drop.columns.retain(|c| c.name != "note");
    let destructive = plan::plan(&[d_drop], std::slice::from_ref(&o), &[], &dbx());
    let mut d_bad = d;
    d_bad.columns.push(not_null(col("status", "string")));
    let rejected = plan::plan(&[d_bad], &[o], &[], &dbx());
    (empty, meta, destructive, rejected)
}

#[test]
fn gate_decisions() {
    let (empty, meta, destructive, rejected) = gate_plans();
    assert_eq!(meta.risk(), Some(RiskClass::Meta));
    assert_eq!(destructive.risk(), Some(RiskClass::Destructive));
    let wrong = "0123456789abcdef";
    assert_ne!(wrong, meta.id);
    assert_ne!(wrong, destructive.id);
    let needs = |p: &Plan, reason: &str| Decision::NeedsApproval {
        id: p.id.clone(),
        reason: reason.into(),
    };
    let wrong_for = |p: &Plan| Decision::WrongApproval {
        id: p.id.clone(),
        approved: wrong.into(),
    };
    let cases: Vec<(&str, &Plan, Policy, Option<&str>, Decision)> = vec![
        // nothing to do, whatever the policy
        (
            "empty auto",
            &empty,
            Policy::Auto,
            None,
            Decision::NothingToDo,
        ),
        (
            "empty manual",
            &empty,
            Policy::Manual,
            None,
            Decision::NothingToDo,
        ),
        (
            "empty observe",
            &empty,
            Policy::Observe,
            None,
            Decision::NothingToDo,
        ),
        // rejected beats everything, even a correct approval
        (
            "rejected auto",
            &rejected,
            Policy::Auto,
            None,
            Decision::Rejected,
        ),
        (
            "rejected manual approved",
            &rejected,
            Policy::Manual,
            Some(rejected.id.as_str()),
            Decision::Rejected,
        ),
        (
            "rejected observe",
            &rejected,
            Policy::Observe,
            None,
            Decision::Rejected,
        ),
        // Auto: meta runs, with or without any approval
        ("auto meta", &meta, Policy::Auto, None, Decision::Apply),
        (
            "auto meta wrong approval",
            &meta,
            Policy::Auto,
            Some(wrong),
            Decision::Apply,
        ),
        (
            "auto meta right approval",
            &meta,
            Policy::Auto,
            Some(meta.id.as_str()),
            Decision::Apply,
        ),
        // Auto: destructive waits for this exact plan's id
        (
            "auto destructive",
            &destructive,
            Policy::Auto,
            None,
            needs(&destructive, "the plan has destructive steps"),
        ),
        (
            "auto destructive wrong",
            &destructive,
            Policy::Auto,
            Some(wrong),
            wrong_for(&destructive),
        ),
        (
            "auto destructive other plan's id",
            &destructive,
            Policy::Auto,
            Some(meta.id.as_str()),
            Decision::WrongApproval {
                id: destructive.id.clone(),
                approved: meta.id.to_string(),
            },
        ),
        (
            "auto destructive right",
            &destructive,
            Policy::Auto,
            Some(destructive.id.as_str()),
            Decision::Apply,
        ),
        // Manual: every non-empty plan waits
        (
            "manual meta",
            &meta,
            Policy::Manual,
            None,
            needs(&meta, "policy Manual approves every plan"),
        ),
        (
            "manual meta wrong",
            &meta,
            Policy::Manual,
            Some(wrong),
            wrong_for(&meta),
        ),
        (
            "manual meta right",
            &meta,
            Policy::Manual,
            Some(meta.id.as_str()),
            Decision::Apply,
        ),
        (
            "manual destructive",
            &destructive,
            Policy::Manual,
            None,
            needs(&destructive, "the plan has destructive steps"),
        ),
        (
            "manual destructive right",
            &destructive,
            Policy::Manual,
            Some(destructive.id.as_str()),
            Decision::Apply,
        ),
        // Observe never applies, even approved
        (
            "observe meta",
            &meta,
            Policy::Observe,
            None,
            Decision::Observe,
        ),
        (
            "observe meta right",
            &meta,
            Policy::Observe,
            Some(meta.id.as_str()),
            Decision::Observe,
        ),
        (
            "observe destructive right",
            &destructive,
            Policy::Observe,
            Some(destructive.id.as_str()),
            Decision::Observe,
        ),
    ];
    let errors: Vec<String> = cases
        .into_iter()
        .filter_map(|(name, p, policy, approved, want)| {
            let got = gate(p, policy, approved);
            (got != want).then(|| format!("{name}: got {got:?}, expected {want:?}"))
        })
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert_eq!(Policy::default(), Policy::Auto);
}
