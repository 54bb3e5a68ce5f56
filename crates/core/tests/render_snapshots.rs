//! Snapshot tests of the three plan renderings (text, markdown, JSON) for one
//! fixed plan: a create, an update with a staged rewrite that drops a column
//! (destructive), a rejected table, a strict orphan that is dropped, an
//! additive orphan that is kept, an unchanged table (not shown) and an
//! unmanaged one.
//!
//! `UPDATE_SNAPSHOTS=1 cargo test --test render_snapshots` rewrites
//! `tests/snapshots/plan.{txt,md,json}`; read the diff before committing it.

use delta_operator_core::model::history::{CommitTime, TableHistory};
use std::collections::BTreeMap;
use std::path::PathBuf;

use delta_operator_core::model::type_syntax::parse_type;
use delta_operator_core::model::{
    Check, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedColumn, ObservedTable, SchemaMode,
    SchemaRef, TableRef,
};
use delta_operator_core::plan::render::{json, markdown, text};
use delta_operator_core::plan::undo::{self, Undo};
use delta_operator_core::plan::{self, Capabilities, Plan, SchemaScope, TableAction};

// ---------------------------------------------------------------------------
// The fixed plan

fn col(name: &str, t: &str, nullable: bool) -> DesiredColumn {
    DesiredColumn::new(name, parse_type(t).unwrap(), nullable)
}

fn ocol(name: &str, t: &str, nullable: bool) -> ObservedColumn {
    ObservedColumn::new(name, parse_type(t).unwrap(), nullable)
}

fn desired(schema: &str, name: &str, columns: Vec<DesiredColumn>) -> DesiredTable {
    DesiredTable::new(
        TableRef::new("main", schema, name),
        &format!("{schema}/{name}"),
        columns,
    )
}

fn live(
    schema: &str,
    name: &str,
    columns: Vec<ObservedColumn>,
    version: u64,
    size: u64,
) -> ObservedTable {
    ObservedTable {
        properties: BTreeMap::from([(OWNER_PROPERTY.to_string(), format!("{schema}/{name}"))]),
        version: Some(version),
        size_bytes: Some(size),
        ..ObservedTable::new(TableRef::new("main", schema, name), columns)
    }
}

fn fixed_plan() -> Plan {
    // + customers: created, with a CHECK
    let mut customers = desired(
        "sales",
        "customers",
        vec![col("id", "bigint", false), col("name", "string", true)],
    );
    customers.comment = Some("Who buys".into());
    customers.checks.push(Check {
        name: "id_positive".into(),
        expression: "id > 0".into(),
    });

    // ~ orders: amount bigint → int (may lose values: a staged rewrite on the lake), note dropped
    //   (so the replace is destructive), a comment and a property; one
    //   property set by someone else is left alone
    let mut orders = desired(
        "sales",
        "orders",
        vec![
            col("id", "bigint", false),
            col("amount", "int", true),
            col("placed_at", "timestamp", true),
        ],
    );
    orders.comment = Some("One row per order".into());
    orders.properties.insert(
        "delta.logRetentionDuration".into(),
        Some("interval 30 days".into()),
    );
    let mut orders_live = live(
        "sales",
        "orders",
        vec![
            ocol("id", "bigint", false),
            ocol("amount", "bigint", true),
            ocol("placed_at", "timestamp", true),
            ocol("note", "string", true),
        ],
        41,
        412_000_000_000,
    );
    orders_live
        .properties
        .insert("delta.appendOnly".into(), "false".into());
    // its history was read: the restore to version 41 shows until when it works
    // (read 2026-12-04 14:00 UTC, the default week of deleted-file retention)
    orders_live.history = Some(TableHistory {
        read_at_ms: 1_796_392_800_000,
        commits: vec![CommitTime {
            version: 41,
            at_ms: 1_796_392_000_000,
            vacuum: false,
        }],
        vacuums: vec![],
        retention_properties: Default::default(),
    });

    // ✗ events: a NOT NULL column without `using:`, and tags the lake cannot store
    let mut events = desired(
        "sales",
        "events",
        vec![col("id", "bigint", false), col("kind", "string", false)],
    );
    events.tags.insert("pii".into(), Some("no".into()));
    let events_live = live(
        "sales",
        "events",
        vec![ocol("id", "bigint", false)],
        3,
        1_500_000,
    );

    // = regions: unchanged, so not shown
    let regions = desired("sales", "regions", vec![col("code", "string", false)]);
    let regions_live = live(
        "sales",
        "regions",
        vec![ocol("code", "string", false)],
        9,
        2_000,
    );

    // - retired: marked, its spec is gone, the schema is strict
    let retired = live(
        "sales",
        "retired",
        vec![
            ocol("a", "int", true),
            ocol("b", "int", true),
            ocol("c", "int", true),
            ocol("d", "int", true),
        ],
        12,
        12_000_000_000,
    );
    // · scratch: marked, its spec is gone, the schema is additive
    let scratch = live(
        "staging",
        "scratch",
        vec![ocol("x", "string", true)],
        1,
        3_400,
    );
    // manual: no marker, no spec
    let mut manual = live("sales", "manual", vec![ocol("x", "string", true)], 5, 100);
    manual.properties.clear();

    let schemas = [
        SchemaScope {
            schema: SchemaRef {
                catalog: "main".into(),
                schema: "sales".into(),
            },
            mode: SchemaMode::Strict,
            meta: Default::default(),
        },
        SchemaScope {
            schema: SchemaRef {
                catalog: "main".into(),
                schema: "staging".into(),
            },
            mode: SchemaMode::Additive,
            meta: Default::default(),
        },
    ];
    let planned = plan::plan(
        &[orders, customers, events, regions],
        &[
            orders_live,
            events_live,
            regions_live,
            retired,
            manual,
            scratch,
        ],
        &schemas,
        &Capabilities::lake(),
    );
    plan::compile::compile(planned, &Fixture)
}

/// A compiler for the snapshots (the backends' own are tested in their
/// crates): a statement of two lines with backquotes, a check after every
/// rewrite step, and the core's typed undo in plain words, so every
/// rendering of statements, checks and undo lines shows.
struct Fixture;

fn fixture_undo(t: &plan::TablePlan, u: Undo) -> String {
    match u {
        Undo::Steps { steps } => steps
            .iter()
            .map(|a| a.title())
            .collect::<Vec<_>>()
            .join("; "),
        Undo::Restore { version: Some(v) } => format!("restore {} to version {v}", t.table),
        Undo::Restore { version: None } => "no restore point".into(),
        Undo::Undrop => format!("undrop {}", t.table),
        Undo::DropPrimaryKey => "drop the primary key".into(),
        Undo::DropClone { name } => format!("drop the clone {name}"),
    }
}

impl plan::Compiler for Fixture {
    fn bind(
        &self,
        t: &plan::TablePlan,
        observed: Option<&ObservedTable>,
        earlier: &[plan::Step],
        step: &plan::Step,
        _binding: &plan::RunBinding<'_>,
    ) -> Result<plan::Compiled, plan::CompileError> {
        let mut checks = vec![];
        if step.class >= plan::RiskClass::Rewrite {
            checks.push(plan::StepCheck {
                when: plan::CheckWhen::After,
                query: format!("SELECT count(*) FROM `{}`", t.table.table),
                refuses: "a count that differs".into(),
            });
        }
        Ok(plan::Compiled {
            statements: vec![plan::Statement::Sql(format!(
                "-- step {}\nRUN `{}` {}",
                step.number,
                t.table.table,
                step.action.title()
            ))],
            checks,
            notes: vec![],
            undo: undo::of_step(observed, earlier, step).map(|u| fixture_undo(t, u)),
        })
    }
}

// ---------------------------------------------------------------------------
// Snapshots

fn snapshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
        .join(name)
}

fn updating() -> bool {
    std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1")
}

/// Compares `actual` with the snapshot file, or writes it when updating.
fn check_snapshot(name: &str, actual: &str) {
    let path = snapshot_path(name);
    if updating() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(!written.trim().is_empty(), "{} is empty", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from {} at line {}:\n  snapshot: {:?}\n  rendered: {:?}\n\nrendered in full:\n{actual}\n(run with UPDATE_SNAPSHOTS=1 to accept)",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first),
        );
    }
}

#[test]
fn the_fixed_plan_covers_what_the_snapshots_are_for() {
    let p = fixed_plan();
    let action = |name: &str| {
        p.tables
            .iter()
            .find(|t| t.table.table == name)
            .map(|t| (t.action, t.is_accepted()))
    };
    assert_eq!(action("customers"), Some((TableAction::Create, true)));
    assert_eq!(action("orders"), Some((TableAction::Update, true)));
    assert_eq!(action("events"), Some((TableAction::Update, false)));
    assert_eq!(action("regions"), Some((TableAction::Unchanged, true)));
    assert_eq!(action("retired"), Some((TableAction::Destroy, true)));
    assert_eq!(action("scratch"), Some((TableAction::Keep, true)));
    assert_eq!(p.unmanaged, vec![TableRef::new("main", "sales", "manual")]);
    let s = p.summary;
    assert_eq!(
        (s.add, s.change, s.destroy, s.rejected, s.rewrites),
        (1, 1, 1, 1, 1),
        "{s:?}"
    );
    assert_eq!(
        p.destructive_steps().count(),
        2,
        "the destructive replace and the DROP TABLE"
    );
}

#[test]
fn text_snapshot() {
    check_snapshot("plan.txt", &text::render(&fixed_plan()));
}

#[test]
fn markdown_snapshot() {
    check_snapshot("plan.md", &markdown::render(&fixed_plan()));
}

#[test]
fn json_snapshot() {
    check_snapshot("plan.json", &json::render(&fixed_plan()));
}

#[test]
fn json_round_trips_to_an_equal_plan() {
    let p = fixed_plan();
    let rendered = json::render(&p);
    let parsed = json::parse(&rendered).expect("the rendered JSON parses");
    // everything but the tables' history read (never saved: the steps carry the windows)
    let mut without_history = p.clone();
    for t in &mut without_history.tables {
        if let Some(o) = t.observed.as_mut() {
            std::sync::Arc::make_mut(o).history = None;
        }
    }
    assert_eq!(parsed, without_history);
    assert_eq!(
        json::render(&parsed),
        rendered,
        "rendering is stable through a round trip"
    );
    let value: serde_json::Value = serde_json::from_str(&rendered).unwrap();
    assert_eq!(value["id"], serde_json::Value::String(p.id.to_string()));
    assert_eq!(value["format_version"], serde_json::json!(1));
    assert_eq!(plan::FORMAT_VERSION, 1);
    // the id can be recomputed from the saved plan alone
    assert_eq!(plan::id::plan_id(parsed.backend, &parsed.tables), p.id);
}

#[test]
fn text_ends_with_the_summary_and_the_plan_id() {
    let p = fixed_plan();
    let out = text::render(&p);
    assert!(out.ends_with('\n'));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        *lines.last().unwrap(),
        format!("Plan id: {}", p.id),
        "the last line is the plan id"
    );
    let summary_at = lines
        .iter()
        .rposition(|l| l.starts_with("Plan: "))
        .expect("a `Plan: ` line");
    let s = p.summary;
    assert_eq!(
        lines[summary_at],
        format!(
            "Plan: {} to add, {} to change, {} to destroy · {} steps · {} rewrite · {} warnings",
            s.add, s.change, s.destroy, s.steps, s.rewrites, s.warnings
        )
    );
    assert_eq!(
        lines[summary_at],
        "Plan: 1 to add, 1 to change, 1 to destroy · 8 steps · 1 rewrite · 2 warnings"
    );
    // The summary line is followed by the plan id line; with a rejected table
    // and destructive steps, the refusal and approval lines sit between them
    // (see the report: the brief asked for `Plan id:` right after `Plan: `).
    let between: Vec<&str> = lines[summary_at + 1..lines.len() - 1].to_vec();
    assert_eq!(
        between,
        vec![
            "✗ 1 table refused or blocked (see ✗ above): each is left untouched; the other tables are applied."
                .to_string(),
            format!(
                "⚠ Destroys something (main.sales.orders step 4, main.sales.retired step 1): apply needs --approve {} (in a cluster: the annotation delta-operator.io/approve={})",
                p.id, p.id
            ),
        ]
    );
}

#[test]
fn text_summary_line_is_directly_followed_by_the_plan_id_for_a_clean_plan() {
    // Without refusals or destructive steps, nothing sits between the two lines.
    let d = desired("sales", "customers", vec![col("id", "bigint", false)]);
    let p = plan::plan(&[d], &[], &[], &Capabilities::lake());
    let out = text::render(&p);
    let lines: Vec<&str> = out.lines().collect();
    let n = lines.len();
    assert_eq!(
        lines[n - 2],
        "Plan: 1 to add, 0 to change, 0 to destroy · 1 step · 0 rewrites · 0 warnings"
    );
    assert_eq!(lines[n - 1], format!("Plan id: {}", p.id));
}

#[test]
fn every_rendering_names_the_plan_id_and_every_shown_table() {
    let p = fixed_plan();
    let shown = [
        "main.sales.customers",
        "main.sales.orders",
        "main.sales.events",
        "main.sales.retired",
        "main.staging.scratch",
        "main.sales.manual",
    ];
    for (name, r) in [
        ("text", text::render(&p)),
        ("markdown", markdown::render(&p)),
    ] {
        assert!(r.contains(p.id.as_str()), "{name} lacks the plan id");
        for t in shown {
            assert!(r.contains(t), "{name} lacks {t}");
        }
        // an unchanged, accepted table is not shown
        assert!(
            !r.contains("main.sales.regions"),
            "{name} shows the unchanged table"
        );
    }
    // JSON carries every table, the unchanged one included (the id covers it)
    let v: serde_json::Value = serde_json::from_str(&json::render(&p)).unwrap();
    let name = |t: &serde_json::Value| {
        format!(
            "{}.{}.{}",
            t["catalog"].as_str().unwrap(),
            t["schema"].as_str().unwrap(),
            t["table"].as_str().unwrap()
        )
    };
    let mut names: Vec<String> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| name(&t["table"]))
        .collect();
    names.extend(v["unmanaged"].as_array().unwrap().iter().map(name));
    for t in shown.iter().chain(&["main.sales.regions"]) {
        assert!(names.iter().any(|n| n == t), "json lacks {t}: {names:?}");
    }
}
