//! The compile phase (delta-engine's lower → … → plan → **compile** → execute):
//! each backend turns every accepted step into what it will run, purely, from
//! the observed state the plan was made from. The plan carries the result and
//! its id hashes it, so an approval approves exactly these statements, and the
//! executor runs the statements of the plan it re-derived (same id).
//!
//! What only the run can know is a placeholder, named by the step's notes:
//! [`RUN`] (the apply's run id, naming its staging copy) and [`VERSION`] (the
//! table's Delta version when the step starts, which the staged check then
//! compares against). The executor binds them for every backend alike
//! (`Compiler::bind`): it compiles the step again as shown, refuses a step whose
//! plan shows anything else, then compiles it with the run's values and hands
//! the backend that: never by editing the text, which may hold a user's
//! literal that happens to contain a placeholder.

use serde::{Deserialize, Serialize};

use super::capabilities::BackendKind;
use super::object::{ObjectOutcome, ObjectPlan, ObjectStep};
use super::planner::{Outcome, TablePlan};
use super::rules::{Rule, RuleFailure};
use super::schema::{SchemaOutcome, SchemaPlan, SchemaStep};
use super::statement::Statement;
use super::steps::{Action, RewritePhase, Step};
use super::{Parts, Plan, finish_parts};
use crate::model::{ObservedTable, SchemaRef, TableRef};

/// The run id of the apply, bound when the step starts.
pub const RUN: &str = "{run}";
/// The table's Delta version when the step starts.
pub const VERSION: &str = "{version}";

/// When a check runs, relative to the step's statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckWhen {
    Before,
    After,
}

/// A check a step runs: its query and what makes it refuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCheck {
    pub when: CheckWhen,
    pub query: String,
    /// What makes it refuse, in words (and what the engine checks by itself too).
    pub refuses: String,
}

/// The run's values for the placeholders: [`RunBinding::SHOWN`] compiles the
/// text the plan shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunBinding<'a> {
    /// The apply's run id.
    pub run: &'a str,
    /// The table's Delta version when the step starts (`None` keeps [`VERSION`]).
    pub version: Option<u64>,
}

impl RunBinding<'static> {
    /// The plan's text: both placeholders.
    pub const SHOWN: RunBinding<'static> = RunBinding {
        run: RUN,
        version: None,
    };
}

/// Why a backend has no statements for a step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The backend has no statement for this action at all (the planner's
    /// rules should have refused it): the words name the action.
    #[error("{0}")]
    Unsupported(String),
    /// The step's input cannot be compiled (a privilege the backend does not
    /// know, an empty list that needs an item): the words say what is wrong.
    #[error("{0}")]
    Invalid(String),
}

/// Steps whose statements name the table's version when they start (a stage,
/// a clone): bound to a run, they need it read.
pub fn pins_version(action: &Action) -> bool {
    matches!(
        action,
        Action::CloneTable { .. }
            | Action::Rewrite {
                phase: RewritePhase::Stage,
                ..
            }
    )
}

/// What a backend runs for one step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compiled {
    pub statements: Vec<Statement>,
    pub checks: Vec<StepCheck>,
    /// What a reviewer needs to read the statements (placeholders, strategies).
    pub notes: Vec<String>,
    /// How to undo the step, in the backend's own terms: its rendering of
    /// the core's typed undo (`undo::of_step`). None: no undo is known.
    pub undo: Option<String>,
}

/// What a backend runs for one object step, and how to undo it in its own
/// terms (a drop's undo: the object's old DDL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompiledObject {
    pub statements: Vec<String>,
    pub undo: Option<String>,
}

/// A backend's compiler: pure, from the plan's inputs alone. `earlier` are the
/// table's steps before this one (a statement may depend on what they set).
pub trait Compiler: Send + Sync {
    /// The step compiled with `binding`'s values for the placeholders.
    fn bind(
        &self,
        plan: &TablePlan,
        observed: Option<&ObservedTable>,
        earlier: &[Step],
        step: &Step,
        binding: &RunBinding<'_>,
    ) -> Result<Compiled, CompileError>;

    /// The step as the plan shows it (placeholders unbound).
    fn compile(
        &self,
        plan: &TablePlan,
        observed: Option<&ObservedTable>,
        earlier: &[Step],
        step: &Step,
    ) -> Result<Compiled, CompileError> {
        self.bind(plan, observed, earlier, step, &RunBinding::SHOWN)
    }

    /// A schema step's statements (a backend that keeps no schema metadata
    /// never gets one: its rules refuse them).
    fn compile_schema(
        &self,
        _schema: &SchemaRef,
        step: &SchemaStep,
    ) -> Result<Vec<String>, CompileError> {
        Err(CompileError::Unsupported(format!(
            "this backend has no statement for {}",
            step.action.title()
        )))
    }

    /// A view, function or volume step's statements (a backend without
    /// catalog objects never gets one: `NotSupportedByBackend` refuses them).
    fn compile_object(
        &self,
        plan: &ObjectPlan,
        step: &ObjectStep,
    ) -> Result<CompiledObject, CompileError> {
        Err(CompileError::Unsupported(format!(
            "this backend has no statement for {}",
            step.action.title(&plan.object)
        )))
    }
}

/// Compiles every accepted table of a plan. A step the backend cannot compile
/// refuses its table (nothing of it runs), naming the step; the id is
/// recomputed over the statements.
pub fn compile(plan: Plan, compiler: &dyn Compiler) -> Plan {
    let backend = plan.backend;
    compile_all(backend, plan.into_parts(), compiler)
}

/// `compile` of plans not yet numbered (`plan_tables`, `plan_schemas`): the
/// totals and the id are made once, over the compiled statements.
pub fn compile_parts(
    backend: BackendKind,
    tables: Vec<TablePlan>,
    schemas: Vec<SchemaPlan>,
    unmanaged: Vec<TableRef>,
    compiler: &dyn Compiler,
) -> Plan {
    let parts = Parts {
        tables,
        schemas,
        unmanaged,
        ..Parts::default()
    };
    compile_all(backend, parts, compiler)
}

/// `compile_parts` of every part, objects included: a step that does not
/// compile refuses its table or object, and what depends on it is blocked;
/// the totals and the id are made once, over the compiled statements.
pub fn compile_all(backend: BackendKind, parts: Parts, compiler: &dyn Compiler) -> Plan {
    let Parts {
        tables,
        schemas,
        objects,
        unmanaged,
        unmanaged_objects,
        order,
    } = parts;
    let mut tables: Vec<TablePlan> = tables
        .into_iter()
        .map(|t| compile_table(t, compiler))
        .collect();
    let mut objects: Vec<ObjectPlan> = objects
        .into_iter()
        .map(|o| compile_object(o, compiler))
        .collect();
    // a table or object its compiler refused blocks its dependents, as a rule's refusal does
    super::graph::block(&mut tables, &mut objects);
    let schemas = schemas
        .into_iter()
        .map(|s| compile_schema(s, compiler))
        .collect();
    finish_parts(
        backend,
        Parts {
            tables,
            schemas,
            objects,
            unmanaged,
            unmanaged_objects,
            order,
        },
    )
}

/// An object's steps compiled; one that does not compile refuses the object.
/// A blocked object's would-run steps are compiled for the dry run.
fn compile_object(mut p: ObjectPlan, compiler: &dyn Compiler) -> ObjectPlan {
    let compiled = |p: &ObjectPlan, s: &ObjectStep| -> Result<ObjectStep, CompileError> {
        let c = compiler.compile_object(p, s)?;
        let mut s = s.clone();
        s.statements = c.statements;
        if c.undo.is_some() {
            s.undo = c.undo;
        }
        Ok(s)
    };
    match &p.outcome {
        ObjectOutcome::Rejected { .. } => p,
        ObjectOutcome::Blocked { would_run, by } => {
            let would_run = would_run
                .iter()
                .map(|s| compiled(&p, s).unwrap_or_else(|_| s.clone()))
                .collect();
            p.outcome = ObjectOutcome::Blocked {
                by: by.clone(),
                would_run,
            };
            p
        }
        ObjectOutcome::Accepted { steps } => {
            let mut out = Vec::with_capacity(steps.len());
            let mut failures = vec![];
            for s in steps {
                match compiled(&p, s) {
                    Ok(s) => out.push(s),
                    Err(why) => failures.push(RuleFailure {
                        rule: Rule::NotSupportedByBackend,
                        subject: format!("step {} {}", s.number, s.action.title(&p.object)),
                        message: format!("the backend cannot compile this step: {why}"),
                        fix: "change the spec so the plan does not need this step, or apply it by hand"
                            .into(),
                    }),
                }
            }
            p.outcome = if failures.is_empty() {
                ObjectOutcome::Accepted { steps: out }
            } else {
                ObjectOutcome::Rejected { failures }
            };
            p
        }
    }
}

fn compile_schema(mut p: SchemaPlan, compiler: &dyn Compiler) -> SchemaPlan {
    let SchemaOutcome::Accepted { steps } = &mut p.outcome else {
        return p;
    };
    let mut failures = Vec::new();
    for s in steps.iter_mut() {
        match compiler.compile_schema(&p.schema, s) {
            Ok(statements) => s.statements = statements,
            Err(why) => failures.push(RuleFailure {
                rule: Rule::NotSupportedByBackend,
                subject: format!("step {} {}", s.number, s.action.title()),
                message: format!("the backend cannot compile this step: {why}"),
                fix: "remove the field from the DeltaSchema's spec, or apply it by hand".into(),
            }),
        }
    }
    if !failures.is_empty() {
        p.outcome = SchemaOutcome::Rejected { failures };
    }
    p
}

fn compile_table(mut t: TablePlan, compiler: &dyn Compiler) -> TablePlan {
    if let Outcome::Blocked { would_run, .. } = &t.outcome {
        // what a blocked table would run, compiled for the dry run; a step that does not
        // compile keeps no statements (it is refused once its parents are fixed)
        let mut compiled = Vec::with_capacity(would_run.len());
        for (i, s) in would_run.iter().enumerate() {
            let mut s = s.clone();
            if let Ok(c) = compiler.compile(&t, t.observed.as_deref(), &would_run[..i], &s) {
                s.statements = c.statements;
                s.checks = c.checks;
                s.notes.extend(c.notes);
                s.undo = c.undo;
                s.undo_window =
                    super::undo_window::of_step(t.observed.as_deref(), &would_run[..i], &s);
            }
            compiled.push(s);
        }
        if let Outcome::Blocked { would_run, .. } = &mut t.outcome {
            *would_run = compiled;
        }
        return t;
    }
    let Outcome::Accepted { steps } = &t.outcome else {
        return t;
    };
    let mut compiled = Vec::with_capacity(steps.len());
    let mut failures = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match compiler.compile(&t, t.observed.as_deref(), &steps[..i], s) {
            Ok(c) => {
                let mut s = s.clone();
                s.statements = c.statements;
                s.checks = c.checks;
                s.notes.extend(c.notes);
                s.undo = c.undo;
                s.undo_window = super::undo_window::of_step(t.observed.as_deref(), &steps[..i], &s);
                compiled.push(s);
            }
            Err(why) => failures.push(RuleFailure {
                rule: Rule::NotSupportedByBackend,
                subject: format!("step {} {}", s.number, s.action.title()),
                message: format!("the backend cannot compile this step: {why}"),
                fix: "change the spec so the plan does not need this step, or apply it by hand"
                    .into(),
            }),
        }
    }
    t.outcome = if failures.is_empty() {
        Outcome::Accepted { steps: compiled }
    } else {
        Outcome::Rejected { failures }
    };
    t
}
