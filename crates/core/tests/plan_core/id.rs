//! The plan id.

use super::*;

fn id_input() -> (Vec<DesiredTable>, Vec<ObservedTable>) {
    let (mut d, o) = orders();
    d.columns.push(col("status", "string"));
    let new = desired(
        "customers",
        vec![not_null(col("id", "bigint")), col("name", "string")],
    );
    (vec![d, new], vec![o])
}

#[test]
fn the_plan_id_is_deterministic() {
    let (d, o) = id_input();
    let a = plan::plan(&d, &o, &[], &dbx());
    let b = plan::plan(&d, &o, &[], &dbx());
    assert_eq!(a.id, b.id);
    assert_eq!(a, b);
    assert_eq!(a.id.as_str().len(), 16);
    assert!(
        a.id.as_str()
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{}",
        a.id
    );
    // the order of the declarations does not matter (tables are planned in name order)
    let reversed: Vec<DesiredTable> = d.iter().rev().cloned().collect();
    assert_eq!(plan::plan(&reversed, &o, &[], &dbx()).id, a.id);
}

#[test]
fn the_plan_id_moves_with_the_world() {
    let (d, o) = id_input();
    let base = plan::plan(&d, &o, &[], &dbx()).id;
    // appends move the version and the size, not what the plan does: the same plan
    let mut appended = o.clone();
    appended[0].version = Some(VERSION + 1);
    appended[0].size_bytes = Some(SIZE + 1);
    assert_eq!(
        plan::plan(&d, &appended, &[], &dbx()).id,
        base,
        "data appended is not a new plan"
    );
    let mut moved = o.clone();
    moved[0].comment = Some("changed by someone else".into());
    assert_ne!(
        plan::plan(&d, &moved, &[], &dbx()).id,
        base,
        "anything else observed is part of the id"
    );
    let mut altered = o.clone();
    altered[0].columns.push(ocol("added_outside", "int"));
    assert_ne!(
        plan::plan(&d, &altered, &[], &dbx()).id,
        base,
        "a schema changed outside is a new plan"
    );
    let mut changed = d.clone();
    changed[0].comment = Some("x".into());
    assert_ne!(
        plan::plan(&changed, &o, &[], &dbx()).id,
        base,
        "anything desired is part of the id"
    );
    assert_ne!(
        plan::plan(&d, &o, &[], &lake()).id,
        base,
        "the backend is part of the id"
    );
    // strict vs additive changes an orphan's action, so the id
    let mut with_orphan = o.clone();
    with_orphan.push(live("retired", vec![ocol("a", "int")]));
    let additive = plan::plan(
        &d,
        &with_orphan,
        &[scope("sales", SchemaMode::Additive)],
        &dbx(),
    )
    .id;
    let strict = plan::plan(
        &d,
        &with_orphan,
        &[scope("sales", SchemaMode::Strict)],
        &dbx(),
    )
    .id;
    assert_ne!(additive, strict);
}

#[test]
fn the_plan_id_is_pinned() {
    // Pinned on purpose: approvals (`delta-operator.io/approve: <id>`) and the
    // stale-plan check compare ids computed by different binaries on different
    // machines. If this literal changes, the hashing or the serialization of
    // DesiredTable/ObservedTable/TableAction changed, and every approval given
    // by an older version silently stops matching: bump ID_VERSION in
    // src/plan/id.rs deliberately and update this value in the same change.
    let (d, o) = id_input();
    let plan = plan::plan(&d, &o, &[], &dbx());
    assert_eq!(plan.id, "18b087a54b645efc");
}

/// A compiler that writes one statement per step: `<prefix> <title>`.
struct Prefixed(&'static str);

impl plan::Compiler for Prefixed {
    fn bind(
        &self,
        _plan: &TablePlan,
        _observed: Option<&ObservedTable>,
        _earlier: &[plan::Step],
        step: &plan::Step,
        _binding: &plan::RunBinding<'_>,
    ) -> Result<plan::Compiled, plan::CompileError> {
        if self.0.is_empty() {
            return Err(plan::CompileError::Unsupported(
                "no statement for it".into(),
            ));
        }
        Ok(plan::Compiled {
            statements: vec![plan::Statement::Sql(format!(
                "{} {}",
                self.0,
                step.action.title()
            ))],
            ..Default::default()
        })
    }
}

#[test]
fn the_plan_id_covers_the_compiled_statements() {
    let (d, o) = id_input();
    let planned = plan::plan(&d, &o, &[], &dbx());
    assert!(planned.summary.steps > 0, "the input plans steps");
    let a = plan::compile::compile(planned.clone(), &Prefixed("A"));
    let again = plan::compile::compile(planned.clone(), &Prefixed("A"));
    let b = plan::compile::compile(planned.clone(), &Prefixed("B"));
    assert_eq!(a.id, again.id, "compiling is deterministic");
    assert_ne!(a.id, b.id, "a changed statement changes the id");
    assert_ne!(a.id, planned.id);
    let step = &a.tables[0].steps()[0];
    assert_eq!(step.statements, vec![format!("A {}", step.action.title())]);
    // a step the backend cannot compile refuses its table, naming the step
    let with_steps = planned
        .tables
        .iter()
        .filter(|t| !t.steps().is_empty())
        .count();
    let refused = plan::compile::compile(planned, &Prefixed(""));
    assert_eq!(refused.summary.rejected, with_steps);
    assert_eq!(refused.summary.steps, 0, "a refused table has no steps");
    let Outcome::Rejected { failures } = &refused.tables[0].outcome else {
        panic!("refused: {:?}", refused.tables[0].outcome)
    };
    assert!(
        failures[0].subject.starts_with("step 1 ")
            && failures[0].message.contains("no statement for it"),
        "{failures:?}"
    );
}
