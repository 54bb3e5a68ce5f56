//! The terminal rendering, in the spirit of stevin and Terraform.

use std::fmt::Write;

use super::{human_bytes, plural, refused, totals};
use crate::plan::schema::SchemaOutcome;
use crate::plan::{
    CheckWhen, ObjectOutcome, ObjectPlan, ObjectStep, Outcome, Plan, SchemaPlan, Step, TableAction,
    TablePlan, gate,
};

/// The whole plan with every step's statements and checks.
pub fn render(plan: &Plan) -> String {
    render_with(plan, true)
}

/// The plan; `statements: false` shows the steps without what they run (`--no-sql`).
pub fn render_with(plan: &Plan, statements: bool) -> String {
    let mut out = String::new();
    for s in &plan.schemas {
        if s.is_accepted() && s.steps().is_empty() && s.notes.is_empty() {
            continue;
        }
        schema(&mut out, s);
        out.push('\n');
    }
    for t in &plan.tables {
        if t.action == TableAction::Unchanged && t.steps().is_empty() && t.is_accepted() {
            continue;
        }
        table_with(&mut out, t, statements);
        out.push('\n');
    }
    for o in &plan.objects {
        if o.action == TableAction::Unchanged && o.steps().is_empty() && o.is_accepted() {
            continue;
        }
        object_with(&mut out, o, statements);
        out.push('\n');
    }
    for u in &plan.unmanaged {
        let _ = writeln!(
            out,
            "{u}   unmanaged — no owner marker and no spec, left untouched\n"
        );
    }
    for u in &plan.unmanaged_objects {
        let _ = writeln!(
            out,
            "{u}   unmanaged {} — no owner marker and no spec, left untouched\n",
            u.kind.word()
        );
    }
    let s = &plan.summary;
    let (changes, steps) = totals(s);
    let _ = writeln!(out, "Plan: {changes} · {steps}");
    if s.deferred > 0 {
        let _ = writeln!(
            out,
            "… {} deferred: absent, and a narrow scope waits for the tool that owns them to create them.",
            plural(s.deferred, "table")
        );
    }
    if s.rejected > 0 {
        let _ = match gate::gate(plan, gate::Policy::Auto, Some(plan.id.as_str())) {
            gate::Decision::Rejected if plan.schemas.iter().any(|s| !s.is_accepted()) => writeln!(
                out,
                "✗ {} refused by the rules above: nothing is applied until the spec is fixed.",
                refused(plan)
            ),
            gate::Decision::Rejected => writeln!(
                out,
                "✗ {} refused or blocked (see ✗ above): nothing else is planned to change.",
                refused(plan)
            ),
            _ => writeln!(
                out,
                "✗ {} refused or blocked (see ✗ above): each is left untouched; the other tables are applied.",
                refused(plan)
            ),
        };
    }
    let destructive: Vec<String> = plan
        .destructive_steps()
        .map(|(t, st)| format!("{} step {}", t.table, st.number))
        .chain(
            plan.destructive_object_steps()
                .map(|(o, st)| format!("{} {} step {}", o.object.kind.word(), o.object, st.number)),
        )
        .collect();
    if !destructive.is_empty() {
        let _ = writeln!(
            out,
            "⚠ Destroys something ({}): apply needs --approve {} (in a cluster: the annotation delta-operator.io/approve={})",
            destructive.join(", "),
            plan.id,
            plan.id
        );
    }
    let _ = writeln!(out, "Plan id: {}", plan.id);
    out
}

fn header(t: &TablePlan) -> String {
    let (mark, word) = match t.action {
        TableAction::Create => ("+", "create"),
        TableAction::Update => ("~", "update"),
        TableAction::Destroy => ("-", "destroy"),
        TableAction::Unchanged if !t.steps().is_empty() => ("=", "unchanged, maintenance due"),
        TableAction::Unchanged => ("=", "unchanged"),
        TableAction::Keep => ("·", "orphan, kept"),
        TableAction::Deferred => ("…", "deferred"),
    };
    let size = t
        .size_bytes
        .map(|b| format!("  ({})", human_bytes(b)))
        .unwrap_or_default();
    format!("{}   {mark} {word}{size}", t.table)
}

/// One table: header, its changes, its numbered steps (or why there are none).
pub fn table(out: &mut String, t: &TablePlan) {
    table_with(out, t, true)
}

/// `table`, with or without the statements.
pub fn table_with(out: &mut String, t: &TablePlan, statements: bool) {
    let _ = writeln!(out, "{}", header(t));
    for c in &t.changes {
        let _ = writeln!(out, "  {} {}", c.marker(), c.describe());
    }
    // a new table shows its columns, so a reviewer sees what will exist
    if let (TableAction::Create, Some(d)) = (t.action, t.desired.as_deref()) {
        for c in &d.columns {
            let _ = writeln!(
                out,
                "    + {} {}{}",
                c.name,
                c.data_type,
                if c.nullable { "" } else { " not null" }
            );
        }
    }
    for n in &t.notes {
        let _ = writeln!(out, "  · {n}");
    }
    match &t.outcome {
        Outcome::Accepted { steps } => steps_with(out, steps, statements),
        Outcome::Rejected { failures } => {
            let _ = writeln!(out, "  ✗ refused — nothing in this table will be applied:");
            for f in failures {
                let _ = writeln!(out, "    ✗ {} ({}): {}", f.rule, f.subject, f.message);
                let _ = writeln!(out, "        fix: {}", f.fix);
            }
        }
        Outcome::Deferred { why } => {
            let _ = writeln!(out, "  ⏸ deferred: {why}");
        }
        Outcome::Blocked { by, would_run } => {
            let names: Vec<String> = by.iter().map(ToString::to_string).collect();
            let parents_only = by.iter().all(|b| {
                t.desired
                    .iter()
                    .flat_map(|d| &d.foreign_keys)
                    .any(|fk| fk.references == *b)
            });
            let _ = writeln!(
                out,
                "  ✗ blocked: {} {}, which cannot be applied",
                if parents_only {
                    "its foreign keys depend on"
                } else {
                    "it depends on"
                },
                names.join(", ")
            );
            if !would_run.is_empty() {
                let _ = writeln!(out, "  what would run once they are fixed (not run now):");
                steps_with(out, would_run, statements);
            }
        }
    }
}

/// Numbered steps with their warnings, notes and (with `statements`) checks,
/// statements and undo.
fn steps_with(out: &mut String, steps: &[Step], statements: bool) {
    for s in steps {
        // the size of what the step scans or rewrites
        let size = s
            .est_bytes
            .map(|b| format!("  ({})", human_bytes(b)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    {:>2}. {:<36} [{}]{size}",
            s.number,
            s.action.title(),
            s.class
        );
        for w in &s.warnings {
            let _ = writeln!(out, "        ⚠ {w}");
        }
        for n in &s.notes {
            let _ = writeln!(out, "        · {n}");
        }
        if statements {
            for c in s.checks.iter().filter(|c| c.when == CheckWhen::Before) {
                indented(out, "check before: ", &c.query);
                indented(out, "  refuses ", &c.refuses);
            }
            for st in &s.statements {
                indented(out, "> ", &st.to_string());
            }
            for c in s.checks.iter().filter(|c| c.when == CheckWhen::After) {
                indented(out, "check after: ", &c.query);
                indented(out, "  refuses ", &c.refuses);
            }
        }
        if let Some(u) = &s.undo {
            // the window of a restore: until when it works (display only, not in the plan id)
            let window = s
                .undo_window
                .as_ref()
                .and_then(|w| w.in_plan())
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            let _ = writeln!(out, "        undo: {u}{window}");
        }
    }
}

/// `text` under a step, after `lead`; a statement's own line breaks (a
/// comment literal) keep the indent, so the next step never looks like part of it.
fn indented(out: &mut String, lead: &str, text: &str) {
    let pad = " ".repeat(8 + lead.chars().count());
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "        {lead}{line}");
        } else {
            let _ = writeln!(out, "{pad}{line}");
        }
    }
}

/// One schema's metadata: header, its numbered steps (or why there are none).
pub fn schema(out: &mut String, s: &SchemaPlan) {
    let word = if s.steps().is_empty() && s.is_accepted() {
        "= schema unchanged"
    } else if s.creates() {
        "+ schema create"
    } else {
        "~ schema update"
    };
    let _ = writeln!(out, "{}   {word}", s.schema);
    for n in &s.notes {
        let _ = writeln!(out, "  · {n}");
    }
    match &s.outcome {
        SchemaOutcome::Accepted { steps } => {
            for st in steps {
                let _ = writeln!(
                    out,
                    "    {:>2}. {:<36} [{}]",
                    st.number,
                    st.action.title(),
                    st.class
                );
                for w in &st.warnings {
                    let _ = writeln!(out, "        ⚠ {w}");
                }
                for n in &st.notes {
                    let _ = writeln!(out, "        · {n}");
                }
                for x in &st.statements {
                    indented(out, "> ", x);
                }
                if let Some(u) = &st.undo {
                    let _ = writeln!(out, "        undo: {u}");
                }
            }
        }
        SchemaOutcome::Rejected { failures } => {
            let _ = writeln!(out, "  ✗ refused — nothing in this schema will be applied:");
            for f in failures {
                let _ = writeln!(out, "    ✗ {} ({}): {}", f.rule, f.subject, f.message);
                let _ = writeln!(out, "        fix: {}", f.fix);
            }
        }
    }
}

/// One view, function or volume: header, its numbered steps (or why there are none).
pub fn object(out: &mut String, o: &ObjectPlan) {
    object_with(out, o, true)
}

/// `object`, with or without the statements.
pub fn object_with(out: &mut String, o: &ObjectPlan, statements: bool) {
    let word = o.object.kind.word();
    let (mark, what) = match o.action {
        TableAction::Create => ("+", "create"),
        TableAction::Update => ("~", "update"),
        TableAction::Destroy => ("-", "destroy"),
        TableAction::Keep => ("·", "orphan, kept"),
        TableAction::Unchanged | TableAction::Deferred => ("=", "unchanged"),
    };
    let _ = writeln!(out, "{}   {mark} {word} {what}", o.object);
    for n in &o.notes {
        let _ = writeln!(out, "  · {n}");
    }
    match &o.outcome {
        ObjectOutcome::Accepted { steps } => object_steps(out, o, steps, statements),
        ObjectOutcome::Rejected { failures } => {
            let _ = writeln!(out, "  ✗ refused — nothing of this {word} will be applied:");
            for f in failures {
                let _ = writeln!(out, "    ✗ {} ({}): {}", f.rule, f.subject, f.message);
                let _ = writeln!(out, "        fix: {}", f.fix);
            }
        }
        ObjectOutcome::Blocked { by, would_run } => {
            let _ = writeln!(
                out,
                "  ✗ blocked: it depends on {}, which cannot be applied",
                by.join(", ")
            );
            if !would_run.is_empty() {
                let _ = writeln!(out, "  what would run once they are fixed (not run now):");
                object_steps(out, o, would_run, statements);
            }
        }
    }
}

fn object_steps(out: &mut String, o: &ObjectPlan, steps: &[ObjectStep], statements: bool) {
    for st in steps {
        let _ = writeln!(
            out,
            "    {:>2}. {:<36} [{}]",
            st.number,
            st.action.title(&o.object),
            st.class
        );
        for w in &st.warnings {
            let _ = writeln!(out, "        ⚠ {w}");
        }
        for n in &st.notes {
            let _ = writeln!(out, "        · {n}");
        }
        if statements {
            for x in &st.statements {
                indented(out, "> ", x);
            }
        }
        if let Some(u) = &st.undo {
            indented(out, "undo: ", u);
        }
    }
}

/// One line per object step, for status fields: `1. CREATE VIEW [meta]`.
pub fn object_step_lines(o: &ObjectPlan) -> Vec<String> {
    o.steps()
        .iter()
        .map(|st| {
            format!(
                "{}. {} [{}]",
                st.number,
                st.action.title(&o.object),
                st.class
            )
        })
        .collect()
}

/// One line per schema step, for status fields: `1. COMMENT ON SCHEMA [meta]`.
pub fn schema_step_lines(s: &SchemaPlan) -> Vec<String> {
    s.steps()
        .iter()
        .map(|st| format!("{}. {} [{}]", st.number, st.action.title(), st.class))
        .collect()
}

/// One line per step, for status fields: `3. ADD COLUMN status [meta]`.
pub fn step_lines(t: &TablePlan) -> Vec<String> {
    t.steps()
        .iter()
        .map(|s| format!("{}. {} [{}]", s.number, s.action.title(), s.class))
        .collect()
}
