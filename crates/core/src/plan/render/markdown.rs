//! The markdown rendering: a pull-request comment. A marker line lets CI find
//! and update its own comment.

use std::fmt::Write;

use super::{human_bytes, plural, refused, totals};
use crate::plan::rules::RuleFailure;
use crate::plan::schema::{SchemaOutcome, SchemaPlan};
use crate::plan::{
    CheckWhen, ObjectOutcome, ObjectPlan, Outcome, Plan, RiskClass, TableAction, TablePlan,
};

fn dot(class: RiskClass) -> &'static str {
    match class {
        RiskClass::Maintenance => "🔵",
        RiskClass::Meta => "🟢",
        RiskClass::Feature => "🟡",
        RiskClass::Rewrite => "🟠",
        RiskClass::Destructive => "🔴",
    }
}

pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    header(&mut out, plan);
    for sp in &plan.schemas {
        if sp.is_accepted() && sp.steps().is_empty() && sp.notes.is_empty() {
            continue;
        }
        schema_section(&mut out, sp);
    }
    for t in &plan.tables {
        if t.action == TableAction::Unchanged && t.steps().is_empty() && t.is_accepted() {
            continue;
        }
        table_section(&mut out, t);
    }
    for o in &plan.objects {
        if o.action == TableAction::Unchanged && o.steps().is_empty() && o.is_accepted() {
            continue;
        }
        object_section(&mut out, o);
    }
    if !plan.unmanaged.is_empty() {
        out.push_str("#### Unmanaged tables, left untouched\n\n");
        for u in &plan.unmanaged {
            let _ = writeln!(out, "- `{u}`");
        }
    }
    if !plan.unmanaged_objects.is_empty() {
        out.push_str("#### Unmanaged views, functions and volumes, left untouched\n\n");
        for u in &plan.unmanaged_objects {
            let _ = writeln!(out, "- {} `{u}`", u.kind.word());
        }
    }
    out
}

fn object_section(out: &mut String, o: &ObjectPlan) {
    let word = match o.action {
        TableAction::Create => "create",
        TableAction::Update => "update",
        TableAction::Destroy => "destroy",
        TableAction::Keep => "orphan, kept",
        TableAction::Unchanged | TableAction::Deferred => "unchanged",
    };
    let _ = writeln!(
        out,
        "#### {} `{}` — {word}\n",
        o.object.kind.word(),
        o.object
    );
    for n in &o.notes {
        let _ = writeln!(out, "- _{n}_");
    }
    out.push('\n');
    let steps = match &o.outcome {
        ObjectOutcome::Accepted { steps } => steps,
        ObjectOutcome::Rejected { failures: f } => return failures(out, f),
        ObjectOutcome::Blocked { by, would_run } => {
            let _ = writeln!(
                out,
                "- ✗ blocked: it depends on {}, which cannot be applied\n",
                by.iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            would_run
        }
    };
    if steps.is_empty() {
        return;
    }
    step_table(
        out,
        steps.iter().map(|st| Row {
            number: st.number,
            title: st.action.title(&o.object),
            class: st.class,
            warnings: &st.warnings,
            notes: &st.notes,
            undo: st.undo.as_deref(),
            window: None,
        }),
    );
    let sql: Vec<&String> = steps.iter().flat_map(|st| &st.statements).collect();
    if !sql.is_empty() {
        let body: String = sql.iter().map(|x| format!("{x}\n")).collect();
        let fence = fence_for(&body);
        let _ = writeln!(
            out,
            "<details><summary>statements: {}</summary>\n\n{fence}sql\n{body}{fence}\n\n</details>\n",
            plural(sql.len(), "statement")
        );
    }
}

/// The plan's id, its totals, and the callouts a reviewer must not miss.
fn header(out: &mut String, plan: &Plan) {
    let _ = writeln!(out, "<!-- delta-operator:plan:{} -->", plan.backend);
    let _ = writeln!(out, "### delta-operator plan `{}`\n", plan.id);
    let (changes, steps) = totals(&plan.summary);
    let _ = writeln!(out, "**{changes}** · {steps}\n");
    if plan.summary.rejected > 0 {
        let _ = writeln!(
            out,
            "> [!CAUTION]\n> {} refused by the safety rules or blocked by a refused parent; each is left untouched, the other tables are applied.\n",
            refused(plan)
        );
    }
    let destructive: Vec<String> =
        plan.destructive_steps()
            .map(|(t, st)| format!("`{}` step {}", t.table, st.number))
            .chain(plan.destructive_object_steps().map(|(o, st)| {
                format!("{} `{}` step {}", o.object.kind.word(), o.object, st.number)
            }))
            .collect();
    if !destructive.is_empty() {
        let _ = writeln!(
            out,
            "> [!WARNING]\n> Destroys data: {}. Approve with `--approve {}` (or annotate `delta-operator.io/approve={}`).\n",
            destructive.join(", "),
            plan.id,
            plan.id
        );
    }
}

/// One row of a steps table: what a step of a table or of a schema shows.
struct Row<'a> {
    number: usize,
    title: String,
    class: RiskClass,
    warnings: &'a [String],
    notes: &'a [String],
    undo: Option<&'a str>,
    /// Until when the undo works (a restore's window).
    window: Option<String>,
}

/// The `| # | step | risk | notes |` table.
fn step_table<'a>(out: &mut String, rows: impl Iterator<Item = Row<'a>>) {
    out.push_str("| # | step | risk | notes |\n|---|---|---|---|\n");
    for r in rows {
        let mut notes: Vec<String> = r.warnings.iter().map(|w| format!("⚠ {w}")).collect();
        notes.extend(r.notes.iter().cloned());
        if let Some(u) = r.undo {
            match &r.window {
                Some(w) => notes.push(format!("undo: `{u}` ({w})")),
                None => notes.push(format!("undo: `{u}`")),
            }
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} {} | {} |",
            r.number,
            r.title.replace('|', "\\|"),
            dot(r.class),
            r.class,
            notes.join("<br>").replace('|', "\\|")
        );
    }
    out.push('\n');
}

/// The rules a table or schema broke, each with its fix.
fn failures(out: &mut String, failures: &[RuleFailure]) {
    for f in failures {
        let _ = writeln!(
            out,
            "- ✗ **{}** ({}): {} — fix: {}",
            f.rule, f.subject, f.message, f.fix
        );
    }
    out.push('\n');
}

fn schema_section(out: &mut String, sp: &SchemaPlan) {
    let word = if sp.creates() { "create" } else { "update" };
    let _ = writeln!(out, "#### schema `{}` — {word}\n", sp.schema);
    for n in &sp.notes {
        let _ = writeln!(out, "- _{n}_");
    }
    out.push('\n');
    match &sp.outcome {
        SchemaOutcome::Accepted { steps } if !steps.is_empty() => {
            step_table(
                out,
                steps.iter().map(|st| Row {
                    number: st.number,
                    title: st.action.title(),
                    class: st.class,
                    warnings: &st.warnings,
                    notes: &st.notes,
                    undo: st.undo.as_deref(),
                    window: None,
                }),
            );
            let sql: Vec<&String> = steps.iter().flat_map(|st| &st.statements).collect();
            if !sql.is_empty() {
                let body: String = sql.iter().map(|x| format!("{x}\n")).collect();
                let fence = fence_for(&body);
                let _ = writeln!(
                    out,
                    "<details><summary>schema statements: {}</summary>\n\n{fence}sql\n{body}{fence}\n\n</details>\n",
                    plural(sql.len(), "statement")
                );
            }
        }
        SchemaOutcome::Accepted { .. } => {}
        SchemaOutcome::Rejected { failures: f } => failures(out, f),
    }
}

fn table_section(out: &mut String, t: &TablePlan) {
    let size = t
        .size_bytes
        .map(|b| format!(" ({})", human_bytes(b)))
        .unwrap_or_default();
    let action = match t.action {
        TableAction::Create => "create",
        TableAction::Update => "update",
        TableAction::Destroy => "destroy",
        TableAction::Unchanged => "unchanged",
        TableAction::Keep => "orphan, kept",
        TableAction::Deferred => "deferred",
    };
    let _ = writeln!(out, "#### `{}` — {action}{size}\n", t.table);
    for c in &t.changes {
        let _ = writeln!(
            out,
            "- `{}` {}",
            c.marker(),
            c.describe().replace('|', "\\|")
        );
    }
    for n in &t.notes {
        let _ = writeln!(out, "- _{n}_");
    }
    out.push('\n');
    match &t.outcome {
        Outcome::Accepted { steps } if !steps.is_empty() => {
            step_table(
                out,
                steps.iter().map(|st| Row {
                    number: st.number,
                    title: st.action.title(),
                    class: st.class,
                    warnings: &st.warnings,
                    notes: &st.notes,
                    undo: st.undo.as_deref(),
                    window: st.undo_window.as_ref().and_then(|w| w.in_plan()),
                }),
            );
            for st in steps {
                statements(out, st);
            }
        }
        Outcome::Accepted { .. } => {}
        Outcome::Rejected { failures: f } => failures(out, f),
        Outcome::Deferred { why } => {
            let _ = writeln!(out, "- ⏸ deferred: {why}\n");
        }
        Outcome::Blocked { by, would_run } => {
            let names: Vec<String> = by.iter().map(|b| format!("`{b}`")).collect();
            let _ = writeln!(
                out,
                "- ✗ blocked by {} ({} step{} wait for them)\n",
                names.join(", "),
                would_run.len(),
                if would_run.len() == 1 { "" } else { "s" }
            );
        }
    }
}

/// A collapsible block with what a step runs: checks before, statements, checks after.
fn statements(out: &mut String, st: &crate::plan::Step) {
    if st.statements.is_empty() && st.checks.is_empty() {
        return;
    }
    let mut body = String::new();
    let before = st.checks.iter().filter(|c| c.when == CheckWhen::Before);
    let after = st.checks.iter().filter(|c| c.when == CheckWhen::After);
    for c in before {
        let _ = writeln!(
            body,
            "-- check before (refuses {})\n{}",
            one_line(&c.refuses),
            c.query
        );
    }
    for s in &st.statements {
        let _ = writeln!(body, "{s}");
    }
    for c in after {
        let _ = writeln!(
            body,
            "-- check after (refuses {})\n{}",
            one_line(&c.refuses),
            c.query
        );
    }
    let fence = fence_for(&body);
    let _ = writeln!(
        out,
        "<details><summary>step {} — {}: {}</summary>\n\n{fence}sql\n{body}{fence}\n\n</details>\n",
        st.number,
        html_escape(&st.action.title()),
        plural(st.statements.len(), "statement")
    );
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// A code fence longer than any run of backticks in the text (identifiers are backquoted).
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(super::fence_for("ALTER TABLE `a`"), "```");
        assert_eq!(super::fence_for("COMMENT IS 'x ```` y'"), "`````");
    }
}
