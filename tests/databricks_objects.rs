//! Views, SQL functions and volumes on Databricks (issue 33), on the warehouse emulator
//! (e2e/warehouse/: Delta on Spark, Unity Catalog emulated from the public API reference):
//!
//! 1. a function, a table whose column mask calls it and a view over the table apply from
//!    empty in dependency order (function, table, view), and the next plan is empty;
//! 2. a view replaced after a query change keeps its grants and tags (the plan puts them back
//!    as numbered steps; read back through Unity Catalog);
//! 3. renaming a column a view reads waits for approval naming the view, and applies once approved;
//! 4. an orphan view (our marker, its manifest gone) in a strict schema is dropped only after
//!    approval, the step's undo being its old DDL; a view without our marker is never touched;
//! 5. a cycle between two views is refused by name (`DependencyCycle`).
//!
//! `make test` exports DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID and
//! WAREHOUSE_URL; without them every test here fails (never skips).

mod support;

use std::sync::Mutex;

use delta_operator::apply::{ApplyError, Event, Options, StepStatus, apply};
use delta_operator::backend::Backend;
use delta_operator::engine::Inputs;
use delta_operator::model::{ObjectKind, ObjectRef, ObservedObject};
use delta_operator::plan::render::text::render;
use delta_operator::plan::rules::Rule;
use delta_operator::plan::{ObjectAction, ObjectOutcome, ObjectPlan, Plan, RiskClass};
use support::table;
use support::warehouse::Wh;

/// A DeltaView named `name` in Unity Catalog (its resource named with `-` for `_`).
fn view(name: &str, body: &str) -> String {
    format!(
        "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaView\nmetadata: {{name: {}}}\nspec:\n  schemaRef: sales\n  name: {name}\n{body}\n",
        name.replace('_', "-")
    )
}

fn function(name: &str, body: &str) -> String {
    format!(
        "---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaFunction\nmetadata: {{name: {}}}\nspec:\n  schemaRef: sales\n  name: {name}\n{body}\n",
        name.replace('_', "-")
    )
}

/// `query: "<q>"` with the schema's name in it.
fn query(wh: &Wh, q: &str) -> String {
    format!("  query: \"{}\"\n", q.replace("{s}", &wh.schema))
}

fn object_plan<'p>(plan: &'p Plan, name: &str) -> &'p ObjectPlan {
    plan.objects
        .iter()
        .find(|o| o.object.name == name)
        .unwrap_or_else(|| panic!("no plan for {name}:\n{}", render(plan)))
}

async fn read_object(wh: &Wh, kind: ObjectKind, name: &str) -> Option<ObservedObject> {
    let r = ObjectRef::new(kind, "main", &wh.schema, name);
    wh.b.read_objects(&[], std::slice::from_ref(&r))
        .await
        .expect("read objects")
        .into_iter()
        .find(|o| o.object == r)
}

fn orders(wh: &Wh, amount_name: &str, mask: bool) -> String {
    let mask = if mask {
        format!(", mask: {{function: main.{}.mask_email}}", wh.schema)
    } else {
        String::new()
    };
    table(
        "orders",
        &format!(
            "  columns:\n    - {{name: id, type: bigint}}\n    - {{name: email, type: string{mask}}}\n    - {{name: {amount_name}, type: double}}\n"
        ),
    )
}

const MASK_EMAIL: &str = "  parameters: [{name: email, type: string}]\n  returns: string\n  body: \"CASE WHEN email IS NULL THEN NULL ELSE '***' END\"\n  deterministic: true\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_function_a_masked_table_and_a_view_apply_in_dependency_order_then_converge() {
    let wh = Wh::new("dobj", "order").await;
    let docs = format!(
        "{}{}{}",
        // declared view first and function last: the order must come from the graph
        view(
            "recent",
            &query(
                &wh,
                "SELECT id, email FROM main.{s}.orders WHERE amount > 10"
            )
        ),
        orders(&wh, "amount", true),
        function("mask_email", MASK_EMAIL),
    );
    // and a managed volume beside them (no edges): its comment carries our marker line
    let docs = format!(
        "{docs}---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaVolume\nmetadata: {{name: landing}}\nspec:\n  schemaRef: sales\n  comment: \"raw files, it's\"\n  tags: {{domain: sales}}\n  grants: [{{principal: loaders, privileges: [READ VOLUME, WRITE VOLUME]}}]\n"
    );
    let inputs: Inputs = wh.manifests(None, &docs);
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    assert!(text.contains("mask_email"), "{text}");
    // applied with a log of every step as it ends: the function's, the table's, the view's
    let ran: Mutex<Vec<String>> = Mutex::new(vec![]);
    let on_event = |e: Event<'_>| match e {
        Event::Finished(r) => ran.lock().unwrap().push(r.table.table.clone()),
        Event::ObjectFinished(r) => ran.lock().unwrap().push(r.object.name.clone()),
        _ => {}
    };
    let opts = Options {
        on_event: &on_event,
        ..support::options()
    };
    let (_, report) = apply(&wh.b, &inputs, Some(plan.id.as_str()), None, &opts)
        .await
        .expect("applies");
    let ran = ran.into_inner().unwrap();
    let first = |name: &str| {
        ran.iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("{name} ran no step: {ran:?}"))
    };
    let last = |name: &str| ran.iter().rposition(|n| n == name).unwrap();
    assert!(
        last("mask_email") < first("orders") && last("orders") < first("recent"),
        "function, table, view: {ran:?}"
    );
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "{}", render(&again));
    // the function before the view in the report too
    let f = report
        .object_steps
        .iter()
        .position(|s| s.object.name == "mask_email")
        .expect("the function's steps ran");
    let v = report
        .object_steps
        .iter()
        .position(|s| s.object.name == "recent")
        .expect("the view's steps ran");
    assert!(f < v, "{:#?}", report.object_steps);
    let order: Vec<String> = plan
        .order
        .iter()
        .map(|n| serde_json::to_string(n).unwrap())
        .collect();
    let at = |name: &str| {
        order
            .iter()
            .position(|n| n.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("{name} not in the order {order:?}"))
    };
    assert!(
        at("mask_email") < at("orders") && at("orders") < at("recent"),
        "{order:?}"
    );
    assert!(
        report
            .object_steps
            .iter()
            .chain(report.object_steps.iter())
            .all(|s| s.status == StepStatus::Applied),
        "{:#?}",
        report.object_steps
    );
    // what Unity Catalog holds: the view reads the table, the mask names the function
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view exists");
    assert!(
        live.properties
            .get("delta-operator.io/owner")
            .is_some_and(|m| m.ends_with("/recent")),
        "{live:#?}"
    );
    let f = read_object(&wh, ObjectKind::Function, "mask_email")
        .await
        .expect("the function exists");
    assert!(
        f.marker.is_some(),
        "the function carries our marker: {f:#?}"
    );
    let rows = wh.col(&format!("SELECT id FROM {}", wh.q("recent"))).await;
    assert!(rows.is_empty(), "{rows:?}");
    let vol = read_object(&wh, ObjectKind::Volume, "landing")
        .await
        .expect("the volume exists");
    assert_eq!(vol.comment.as_deref(), Some("raw files, it's"), "{vol:#?}");
    assert!(
        vol.marker
            .as_deref()
            .is_some_and(|m| m.ends_with("/landing")),
        "{vol:#?}"
    );
    assert_eq!(vol.tags.get("domain").map(String::as_str), Some("sales"));
    assert!(
        vol.grants
            .iter()
            .any(|g| g.principal == "loaders" && g.privileges.len() == 2),
        "{vol:#?}"
    );
    let t = wh.read("orders").await.expect("the table exists");
    let email = t.columns.iter().find(|c| c.name == "email").unwrap();
    assert!(
        email
            .mask
            .as_ref()
            .is_some_and(|m| m.function.contains("mask_email")),
        "{t:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_view_keeps_its_grants_and_tags() {
    let wh = Wh::new("dobj", "keep").await;
    let grants_tags =
        "  grants: [{principal: analysts, privileges: [SELECT]}]\n  tags: {domain: sales}\n";
    let v1 = view(
        "recent",
        &format!(
            "{}{grants_tags}",
            query(&wh, "SELECT id FROM main.{s}.orders")
        ),
    );
    let inputs = wh.manifests(None, &format!("{}{v1}", orders(&wh, "amount", false)));
    wh.converge(&inputs, false).await;
    // someone grants more by hand: kept too (a replace drops every grant)
    wh.sql(&format!(
        "GRANT SELECT ON VIEW {} TO `auditors`",
        wh.q("recent")
    ))
    .await;
    let v2 = view(
        "recent",
        &format!(
            "{}{grants_tags}",
            query(&wh, "SELECT id, amount FROM main.{s}.orders")
        ),
    );
    let inputs = wh.manifests(None, &format!("{}{v2}", orders(&wh, "amount", false)));
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    let p = object_plan(&plan, "recent");
    let steps: Vec<&ObjectAction> = match &p.outcome {
        ObjectOutcome::Accepted { steps } => steps.iter().map(|s| &s.action).collect(),
        other => panic!("{other:?}\n{text}"),
    };
    assert!(
        matches!(steps.first(), Some(ObjectAction::ReplaceView { .. })),
        "{text}"
    );
    // the put-back steps, numbered after the replace
    for principal in ["analysts", "auditors"] {
        assert!(
            steps
                .iter()
                .any(|a| matches!(a, ObjectAction::Grant { principal: p, .. } if p == principal)),
            "a grant to {principal} is put back:\n{text}"
        );
    }
    assert!(
        steps
            .iter()
            .any(|a| matches!(a, ObjectAction::SetTags { tags } if tags.get("domain").map(String::as_str) == Some("sales"))),
        "the tag is put back:\n{text}"
    );
    wh.converge(&inputs, false).await;
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view exists");
    let principals: Vec<&str> = live.grants.iter().map(|g| g.principal.as_str()).collect();
    assert!(
        principals.contains(&"analysts") && principals.contains(&"auditors"),
        "{live:#?}"
    );
    assert_eq!(
        live.tags.get("domain").map(String::as_str),
        Some("sales"),
        "{live:#?}"
    );
    let cols = wh
        .sql(&format!("SELECT * FROM {}", wh.q("recent")))
        .await
        .columns;
    assert_eq!(cols, vec!["id".to_string(), "amount".to_string()]);
    // only whitespace and keyword case differ: no plan
    let v3 = view(
        "recent",
        &format!(
            "{}{grants_tags}",
            query(&wh, "select   id,\n amount from main.{s}.orders")
        ),
    );
    let inputs = wh.manifests(None, &format!("{}{v3}", orders(&wh, "amount", false)));
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "{}", render(&again));
}

#[tokio::test(flavor = "multi_thread")]
async fn renaming_a_column_a_view_reads_waits_for_approval_naming_the_view() {
    let wh = Wh::new("dobj", "rename").await;
    let v = view(
        "big",
        &query(
            &wh,
            "SELECT id, amount FROM main.{s}.orders WHERE amount > 100",
        ),
    );
    let inputs = wh.manifests(None, &format!("{}{v}", orders(&wh, "amount", false)));
    wh.converge(&inputs, false).await;
    // amount renamed to total; the view is not declared changed
    let renamed = orders(&wh, "total", false).replace(
        "{name: total, type: double}",
        "{name: total, type: double, renamedFrom: amount}",
    );
    let inputs = wh.manifests(None, &format!("{renamed}{v}"));
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    let big = format!("main.{}.big", wh.schema);
    let step = plan.tables[0]
        .steps()
        .iter()
        .find(|s| s.warnings.iter().any(|w| w.contains(&big)))
        .unwrap_or_else(|| panic!("a step warns about {big}:\n{text}"));
    assert_eq!(step.class, RiskClass::Destructive, "{text}");
    assert!(
        step.warnings
            .iter()
            .any(|w| w.contains("breaks view") && w.contains("amount")),
        "{:?}",
        step.warnings
    );
    assert!(text.contains(&big), "{text}");
    // unapproved: refused, naming the plan to approve; nothing ran
    match wh.apply_may_fail(&inputs, false).await {
        Err(ApplyError::NeedsApproval { id, .. }) => assert_eq!(id, plan.id),
        other => panic!("expected NeedsApproval, got {other:?}"),
    }
    let cols = wh
        .sql(&format!("SELECT * FROM {} LIMIT 0", wh.q("orders")))
        .await
        .columns;
    assert!(cols.contains(&"amount".to_string()), "{cols:?}");
    // approved: applied (the view now fails to read, as the warning said)
    wh.apply_ok(&inputs, true).await;
    let cols = wh
        .sql(&format!("SELECT * FROM {} LIMIT 0", wh.q("orders")))
        .await
        .columns;
    assert!(cols.contains(&"total".to_string()), "{cols:?}");
    // the view no longer reads (as Databricks would say); the schema still lists and plans
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "{}", render(&again));
    // fixed by its own spec: replaced to read the new name, and nothing is classed destructive
    let fixed = view(
        "big",
        &query(
            &wh,
            "SELECT id, total FROM main.{s}.orders WHERE total > 100",
        ),
    );
    let inputs = wh.manifests(None, &format!("{renamed}{fixed}"));
    wh.converge(&inputs, false).await;
    wh.col(&format!("SELECT id FROM {}", wh.q("big"))).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_orphan_view_is_dropped_only_after_approval_and_its_undo_is_its_ddl() {
    let wh = Wh::new("dobj", "orphan").await;
    let v = view(
        "old_view",
        &format!(
            "{}  comment: it's old\n  grants: [{{principal: analysts, privileges: [SELECT]}}]\n",
            query(&wh, "SELECT id FROM main.{s}.orders")
        ),
    );
    let with_view = wh.manifests(
        Some("strict"),
        &format!("{}{v}", orders(&wh, "amount", false)),
    );
    wh.converge(&with_view, false).await;
    // a view someone else made, without our marker
    wh.sql(&format!(
        "CREATE VIEW {} AS SELECT email FROM {}",
        wh.q("theirs"),
        wh.q("orders")
    ))
    .await;
    let without = wh.manifests(Some("strict"), &orders(&wh, "amount", false));
    let plan = wh.plan(&without).await;
    let text = render(&plan);
    let p = object_plan(&plan, "old_view");
    let steps = match &p.outcome {
        ObjectOutcome::Accepted { steps } => steps,
        other => panic!("{other:?}\n{text}"),
    };
    let drop = steps
        .iter()
        .find(|s| matches!(s.action, ObjectAction::Drop))
        .unwrap_or_else(|| panic!("the orphan is dropped:\n{text}"));
    assert_eq!(drop.class, RiskClass::Destructive);
    let undo = drop.undo.as_deref().expect("the drop has an undo");
    assert!(undo.contains("CREATE VIEW"), "{undo}");
    assert!(
        undo.contains(&format!("`{}`.`old_view`", wh.schema)),
        "{undo}"
    );
    assert!(undo.contains(r"COMMENT 'it\'s old'"), "{undo}");
    assert!(undo.contains("GRANT SELECT ON VIEW"), "{undo}");
    assert!(undo.contains("delta-operator.io/owner"), "{undo}");
    // the unmarked view is in no step
    assert!(
        plan.objects
            .iter()
            .all(|o| o.object.name != "theirs" || o.steps().is_empty()),
        "{text}"
    );
    // unapproved: refused
    assert!(
        matches!(
            wh.apply_may_fail(&without, false).await,
            Err(ApplyError::NeedsApproval { .. })
        ),
        "the drop waits for approval"
    );
    assert!(
        read_object(&wh, ObjectKind::View, "old_view")
            .await
            .is_some()
    );
    // approved: dropped; the other view is still there
    let report = wh.apply_ok(&without, true).await;
    assert!(
        report
            .object_steps
            .iter()
            .any(|s| s.object.name == "old_view" && s.status == StepStatus::Applied),
        "{:#?}",
        report.object_steps
    );
    assert!(
        read_object(&wh, ObjectKind::View, "old_view")
            .await
            .is_none()
    );
    assert!(read_object(&wh, ObjectKind::View, "theirs").await.is_some());
    // the undo, run as printed, makes it again with its grant and comment
    for s in undo.split(";\n") {
        wh.sql(s).await;
    }
    let back = read_object(&wh, ObjectKind::View, "old_view")
        .await
        .expect("made again by the undo");
    assert_eq!(back.comment.as_deref(), Some("it's old"));
    assert!(
        back.grants.iter().any(|g| g.principal == "analysts"),
        "{back:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cycle_between_two_views_is_refused_by_name() {
    let wh = Wh::new("dobj", "cycle").await;
    let docs = format!(
        "{}{}{}",
        orders(&wh, "amount", false),
        view(
            "va",
            &query(
                &wh,
                "SELECT id FROM main.{s}.vb UNION ALL SELECT id FROM main.{s}.orders"
            )
        ),
        view("vb", &query(&wh, "SELECT id FROM main.{s}.va")),
    );
    let inputs = wh.manifests(None, &docs);
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    for name in ["va", "vb"] {
        let p = object_plan(&plan, name);
        let ObjectOutcome::Rejected { failures } = &p.outcome else {
            panic!("{name} is refused:\n{text}");
        };
        let f = failures
            .iter()
            .find(|f| f.rule == Rule::DependencyCycle)
            .unwrap_or_else(|| panic!("{failures:?}"));
        assert!(
            f.message.contains(".va") && f.message.contains(".vb") && f.message.contains('→'),
            "{}",
            f.message
        );
    }
    // the refused views are left alone while the table goes on, as a refused table is
    let report = wh.apply_ok(&inputs, false).await;
    assert!(report.object_steps.is_empty(), "{:#?}", report.object_steps);
    assert!(read_object(&wh, ObjectKind::View, "va").await.is_none());
}

/// A view's column comments: only the declared ones are the spec's. Another tool's comment on
/// a column the DeltaView does not declare plans nothing and survives; a changed declared
/// comment is a COMMENT ON COLUMN (no replace); a replace (the query changed) sets the other
/// tool's comment again on the column the new query still outputs.
#[tokio::test(flavor = "multi_thread")]
async fn another_tools_column_comment_on_a_view_survives_plan_and_apply() {
    let wh = Wh::new("dobj", "colcomment").await;
    let docs = |q: &str, id_comment: &str| {
        let v = view(
            "recent",
            &format!(
                "{}  columnComments: {{id: \"{id_comment}\"}}\n",
                query(&wh, q)
            ),
        );
        wh.manifests(None, &format!("{}{v}", orders(&wh, "amount", false)))
    };
    let q1 = "SELECT id, amount FROM main.{s}.orders";
    wh.converge(&docs(q1, "the key"), false).await;
    let comments = |o: &ObservedObject| match &o.body {
        delta_operator::model::ObjectBody::View {
            column_comments, ..
        } => column_comments.clone(),
        other => panic!("{other:?}"),
    };
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view");
    assert_eq!(
        comments(&live).get("id").map(String::as_str),
        Some("the key"),
        "{live:#?}"
    );
    // another tool documents a column the spec does not declare: nothing to plan
    wh.sql(&format!(
        "COMMENT ON COLUMN {}.`amount` IS 'in EUR'",
        wh.q("recent")
    ))
    .await;
    let plan = wh.plan(&docs(q1, "the key")).await;
    assert!(!plan.has_changes(), "{}", render(&plan));
    // a declared comment changes, the query does not: one COMMENT ON COLUMN, no replace
    let inputs = docs(q1, "the order's key");
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    let steps: Vec<&ObjectAction> = object_plan(&plan, "recent")
        .steps()
        .iter()
        .map(|s| &s.action)
        .collect();
    assert!(
        matches!(steps.as_slice(), [ObjectAction::SetColumnComment { column, .. }] if column == "id"),
        "{text}"
    );
    wh.converge(&inputs, false).await;
    // the query changes: the replace keeps the other tool's comment on `amount`
    let inputs = docs(
        "SELECT id, amount, email FROM main.{s}.orders",
        "the order's key",
    );
    let plan = wh.plan(&inputs).await;
    let text = render(&plan);
    let p = object_plan(&plan, "recent");
    assert!(
        matches!(p.steps().first().map(|s| &s.action), Some(ObjectAction::ReplaceView { column_comments, .. }) if column_comments.get("amount").map(String::as_str) == Some("in EUR")),
        "{text}"
    );
    wh.converge(&inputs, false).await;
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view");
    let c = comments(&live);
    assert_eq!(
        c.get("amount").map(String::as_str),
        Some("in EUR"),
        "{live:#?}"
    );
    assert_eq!(
        c.get("id").map(String::as_str),
        Some("the order's key"),
        "{live:#?}"
    );
}

/// The CLI (`delta-operator apply -f <spec>`) on the emulator, with a failpoint or not.
struct Cli {
    dir: tempfile::TempDir,
}

impl Cli {
    fn new(wh: &Wh, docs: &str) -> Cli {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.yaml"),
            "targets:\n  dbx:\n    databricks: {}\n",
        )
        .unwrap();
        let cli = Cli { dir };
        cli.write(wh, docs);
        cli
    }

    fn write(&self, wh: &Wh, docs: &str) {
        let schema = format!(
            "apiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {{name: sales}}\nspec: {{catalog: main, name: {}}}\n",
            wh.schema
        );
        std::fs::write(self.dir.path().join("spec.yaml"), format!("{schema}{docs}")).unwrap();
    }

    fn command(&self, failpoint: Option<&str>) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_delta-operator"));
        c.arg("--config")
            .arg(self.dir.path().join("config.yaml"))
            .arg("apply")
            .arg("-f")
            .arg(self.dir.path().join("spec.yaml"));
        match failpoint {
            Some(f) => c.env("DELTA_OPERATOR_FAILPOINT", f),
            None => c.env_remove("DELTA_OPERATOR_FAILPOINT"),
        };
        c
    }

    fn apply(&self, failpoint: Option<&str>) -> (bool, String) {
        let out = self.command(failpoint).output().unwrap();
        (out.status.success(), output_text(&out))
    }
}

fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn principals(o: &ObservedObject) -> Vec<String> {
    o.grants.iter().map(|g| g.principal.clone()).collect()
}

/// Another tool's tag and grant on a view and grant on a function survive a process killed
/// right after the CREATE OR REPLACE (before its put-back steps): the replace recorded what it
/// owes (a view's property, a line of a function's comment), the rerun's plan puts it back,
/// and the plan after that is empty.
#[tokio::test(flavor = "multi_thread")]
async fn other_tools_tags_and_grants_survive_a_kill_between_the_replace_and_its_put_back() {
    let wh = Wh::new("dobj", "putback").await;
    let docs = |q: &str, body: &str| {
        format!(
            "{}{}{}",
            orders(&wh, "amount", false),
            view(
                "recent",
                &format!(
                    "{}  grants: [{{principal: analysts, privileges: [SELECT]}}]\n",
                    query(&wh, q)
                )
            ),
            function(
                "shout",
                &format!(
                    "  parameters: [{{name: s, type: string}}]\n  returns: string\n  body: \"{body}\"\n"
                )
            ),
        )
    };
    let q1 = "SELECT id FROM main.{s}.orders";
    let cli = Cli::new(&wh, &docs(q1, "upper(s)"));
    let (ok, text) = cli.apply(None);
    assert!(ok, "{text}");
    // another tool's tag and grants
    wh.sql(&format!(
        "ALTER VIEW {} SET TAGS ('team' = 'bi')",
        wh.q("recent")
    ))
    .await;
    wh.sql(&format!(
        "GRANT SELECT ON VIEW {} TO `auditors`",
        wh.q("recent")
    ))
    .await;
    wh.sql(&format!(
        "GRANT EXECUTE ON FUNCTION {} TO `auditors`",
        wh.q("shout")
    ))
    .await;
    // the view's query changes; killed right after its replace
    let q2 = "SELECT id, amount FROM main.{s}.orders";
    cli.write(&wh, &docs(q2, "upper(s)"));
    let (ok, text) = cli.apply(Some("after-object-step-recent-1"));
    assert!(
        !ok && text.contains("failpoint after-object-step-recent-1"),
        "{text}"
    );
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view");
    assert!(
        live.grants.is_empty() && live.tags.is_empty(),
        "the replace dropped them: {live:#?}"
    );
    assert!(
        live.properties
            .contains_key(delta_operator::model::property::PUT_BACK_PROPERTY),
        "{live:#?}"
    );
    // the next plan puts back what the record owes, as numbered steps
    let inputs = wh.manifests(None, &docs(q2, "upper(s)"));
    let plan = wh.plan(&inputs).await;
    let rendered = render(&plan);
    assert!(
        rendered.contains("GRANT SELECT ON VIEW TO auditors")
            && rendered.contains("SET TAGS (team)")
            && rendered.contains("owed by an earlier replace"),
        "{rendered}"
    );
    let (ok, text) = cli.apply(None);
    assert!(ok, "the rerun: {text}");
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view");
    let p = principals(&live);
    assert!(
        p.contains(&"auditors".to_string()) && p.contains(&"analysts".to_string()),
        "{live:#?}"
    );
    assert_eq!(
        live.tags.get("team").map(String::as_str),
        Some("bi"),
        "{live:#?}"
    );
    assert!(
        !live
            .properties
            .contains_key(delta_operator::model::property::PUT_BACK_PROPERTY),
        "the record goes once the put-back is done: {live:#?}"
    );
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "{}", render(&again));
    // the function's body changes; killed right after its replace
    cli.write(&wh, &docs(q2, "lower(s)"));
    let (ok, text) = cli.apply(Some("after-object-step-shout-1"));
    assert!(
        !ok && text.contains("failpoint after-object-step-shout-1"),
        "{text}"
    );
    let live = read_object(&wh, ObjectKind::Function, "shout")
        .await
        .expect("the function");
    assert!(live.grants.is_empty(), "the replace dropped it: {live:#?}");
    let (ok, text) = cli.apply(None);
    assert!(ok, "the rerun: {text}");
    let live = read_object(&wh, ObjectKind::Function, "shout")
        .await
        .expect("the function");
    assert_eq!(principals(&live), ["auditors"], "{live:#?}");
    let inputs = wh.manifests(None, &docs(q2, "lower(s)"));
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "{}", render(&again));
}

/// Two `apply` processes of the same change started at the same moment: one applies, the other
/// waits on the view's lock and then says its plan is stale (or succeeds); the view is as
/// declared and the other tool's grant is intact.
#[tokio::test(flavor = "multi_thread")]
async fn two_applies_of_the_same_view_replace_at_once_keep_the_other_tools_grant() {
    let wh = Wh::new("dobj", "twice").await;
    let docs = |q: &str| {
        format!(
            "{}{}",
            orders(&wh, "amount", false),
            view(
                "recent",
                &format!(
                    "{}  grants: [{{principal: analysts, privileges: [SELECT]}}]\n  tags: {{domain: sales}}\n",
                    query(&wh, q)
                )
            ),
        )
    };
    let cli = Cli::new(&wh, &docs("SELECT id FROM main.{s}.orders"));
    let (ok, text) = cli.apply(None);
    assert!(ok, "{text}");
    wh.sql(&format!(
        "GRANT SELECT ON VIEW {} TO `auditors`",
        wh.q("recent")
    ))
    .await;
    let q2 = "SELECT id, amount FROM main.{s}.orders";
    cli.write(&wh, &docs(q2));
    let a = cli
        .command(None)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let b = cli
        .command(None)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    // one apply per object: the other waits for the view's lock, then finds the view changed
    // (stale) and says so, or is refused naming the holder; never a failed replace
    let ok = [&a, &b].iter().filter(|o| o.status.success()).count();
    assert!(ok >= 1, "{}\n{}", output_text(&a), output_text(&b));
    for o in [&a, &b] {
        let text = output_text(o);
        assert!(
            o.status.success() || text.contains("the plan is stale") || text.contains("lock"),
            "{text}"
        );
        assert!(!text.contains("FAILED"), "{text}");
    }
    let live = read_object(&wh, ObjectKind::View, "recent")
        .await
        .expect("the view");
    let p = principals(&live);
    assert!(
        p.contains(&"auditors".to_string()) && p.contains(&"analysts".to_string()),
        "{live:#?}\n{}\n{}",
        output_text(&a),
        output_text(&b)
    );
    let cols = wh
        .sql(&format!("SELECT * FROM {}", wh.q("recent")))
        .await
        .columns;
    assert_eq!(cols, vec!["id".to_string(), "amount".to_string()]);
    let inputs = wh.manifests(None, &docs(q2));
    let again = wh.plan(&inputs).await;
    assert!(!again.has_changes(), "{}", render(&again));
}
