//! Views, SQL functions and volumes, planned (`plan::object`, `plan::graph`):
//! create, update, replace with what it drops put back, orphans, refusals,
//! the dependency order, cycles, blocking, and table steps that break views.

use std::collections::BTreeMap;
use std::sync::Arc;

use delta_operator_core::model::object::{QueryOutputs, with_marker};
use delta_operator_core::model::{
    ColumnRead, DesiredObject, FunctionParam, Grant, Mask, OWNER_PROPERTY, ObjectBody, ObjectKind,
    ObjectRef, ObservedObject, Privilege, Reads, ResourceId, SchemaMode, SchemaRef, SpecRefusal,
    TableRef,
};
use delta_operator_core::plan::gate::{Decision, Policy, gate};
use delta_operator_core::plan::render::{markdown, text};
use delta_operator_core::plan::{
    self, Capabilities, CompiledObject, Node, ObjectAction, ObjectOutcome, ObjectPlan, ObjectStep,
    Outcome, Parts, Plan, RiskClass, Rule, SchemaScope, TableAction,
};
use delta_operator_core::testing::{col, dbx, desired, lake, live, ocol, tref};

fn vref(name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::View, "main", "sales", name)
}
fn fref(name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::Function, "main", "sales", name)
}
fn volref(name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::Volume, "main", "sales", name)
}

fn grant(principal: &str, privileges: &[&str]) -> Grant {
    Grant {
        principal: principal.into(),
        privileges: privileges.iter().map(|p| Privilege::new(p)).collect(),
    }
}

/// A query's text normalised the way the tests need: whitespace collapsed.
fn norm(q: &str) -> String {
    q.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn reads(relations: &[&str], columns: &[(&str, &str)]) -> Reads {
    let mut r = Reads {
        relations: relations.iter().map(|n| tref(n)).collect(),
        functions: vec![],
        columns: columns
            .iter()
            .map(|(t, c)| ColumnRead {
                relation: tref(t),
                column: (*c).into(),
            })
            .collect(),
    };
    r.normalize();
    r
}

fn view_body(query: &str) -> ObjectBody {
    ObjectBody::View {
        query: query.into(),
        normalized: norm(query),
        column_comments: BTreeMap::new(),
    }
}

fn function_body(body: &str) -> ObjectBody {
    ObjectBody::Function {
        parameters: vec![FunctionParam {
            name: "s".into(),
            data_type: "STRING".into(),
            comment: None,
        }],
        returns: "STRING".into(),
        body: body.into(),
        normalized: norm(body),
        deterministic: None,
    }
}

fn declared(object: ObjectRef, body: ObjectBody) -> DesiredObject {
    DesiredObject {
        owner_marker: ResourceId::new("sales", &object.name),
        object,
        body,
        comment: None,
        tags: BTreeMap::new(),
        properties: BTreeMap::new(),
        grants: vec![],
        owner: None,
        reads: Reads::default(),
        outputs: Default::default(),
        refusals: vec![],
    }
}

fn view(name: &str, query: &str, reads: Reads) -> DesiredObject {
    DesiredObject {
        reads,
        ..declared(vref(name), view_body(query))
    }
}

/// The live object as the operator would have left it (with its marker).
fn observed(d: &DesiredObject) -> ObservedObject {
    let mut o = ObservedObject::new(d.object.clone(), d.body.clone());
    o.comment = d.comment.clone();
    o.reads = d.reads.clone();
    match d.object.kind {
        ObjectKind::View => {
            o.properties
                .insert(OWNER_PROPERTY.into(), d.owner_marker.to_string());
        }
        _ => o.marker = Some(d.owner_marker.to_string()),
    }
    o
}

fn scope(mode: SchemaMode) -> SchemaScope {
    SchemaScope::new(
        SchemaRef {
            catalog: "main".into(),
            schema: "sales".into(),
        },
        mode,
    )
}

fn titles(p: &ObjectPlan) -> Vec<String> {
    p.steps()
        .iter()
        .map(|s| format!("{}. {} [{}]", s.number, s.action.title(&p.object), s.class))
        .collect()
}

fn rules(p: &ObjectPlan) -> Vec<Rule> {
    match &p.outcome {
        ObjectOutcome::Rejected { failures } => failures.iter().map(|f| f.rule).collect(),
        _ => vec![],
    }
}

/// Objects planned with no tables.
fn plan_objects(
    desired: Vec<DesiredObject>,
    live: Vec<ObservedObject>,
    mode: SchemaMode,
    caps: &Capabilities,
) -> (Vec<ObjectPlan>, Vec<ObjectRef>, Vec<Node>) {
    let d: Vec<_> = desired.into_iter().map(Arc::new).collect();
    let o: Vec<_> = live.into_iter().map(Arc::new).collect();
    plan::plan_objects(&d, &o, &[scope(mode)], caps, &mut [])
}

fn one(desired: DesiredObject, live: Option<ObservedObject>) -> ObjectPlan {
    let (mut plans, _, _) = plan_objects(
        vec![desired],
        live.into_iter().collect(),
        SchemaMode::Additive,
        &dbx(),
    );
    assert_eq!(plans.len(), 1, "{plans:#?}");
    plans.remove(0)
}

/// A whole plan of tables and objects, finished (not compiled).
fn whole(
    tables: Vec<delta_operator_core::model::DesiredTable>,
    live_tables: Vec<delta_operator_core::model::ObservedTable>,
    objects: Vec<DesiredObject>,
    live_objects: Vec<ObservedObject>,
    mode: SchemaMode,
) -> Plan {
    let t: Vec<_> = tables.into_iter().map(Arc::new).collect();
    let lt: Vec<_> = live_tables.into_iter().map(Arc::new).collect();
    let o: Vec<_> = objects.into_iter().map(Arc::new).collect();
    let lo: Vec<_> = live_objects.into_iter().map(Arc::new).collect();
    let caps = dbx();
    let parts = plan::plan_all_at(&t, &lt, &o, &lo, &[scope(mode)], &caps, None);
    plan::finish_parts(caps.backend, parts)
}

#[test]
fn a_new_view_is_created_with_its_marker_then_tagged_granted_and_owned() {
    let mut d = view(
        "v",
        "SELECT id FROM orders",
        reads(&["orders"], &[("orders", "id")]),
    );
    d.comment = Some("open orders".into());
    d.tags = BTreeMap::from([("pii".into(), Some("no".into())), ("gone".into(), None)]);
    d.properties = BTreeMap::from([("team".into(), Some("revenue".into()))]);
    d.grants = vec![grant("analysts", &["SELECT"])];
    d.owner = Some("data-eng".into());
    let p = one(d, None);
    assert_eq!(p.action, TableAction::Create);
    assert_eq!(
        titles(&p),
        [
            "1. CREATE VIEW [meta]",
            "2. SET TAGS (pii) [meta]",
            "3. GRANT SELECT ON VIEW TO analysts [meta]",
            "4. OWNER TO data-eng [meta]",
        ]
    );
    let ObjectAction::CreateView {
        properties,
        comment,
        query,
        ..
    } = &p.steps()[0].action
    else {
        panic!("{:#?}", p.steps()[0]);
    };
    assert_eq!(
        properties.get(OWNER_PROPERTY).map(String::as_str),
        Some("sales/v")
    );
    assert_eq!(properties.get("team").map(String::as_str), Some("revenue"));
    assert_eq!(comment.as_deref(), Some("open orders"));
    assert_eq!(query, "SELECT id FROM orders");
    assert_eq!(p.steps()[0].undo.as_deref(), Some("DROP VIEW main.sales.v"));
}

#[test]
fn a_new_function_and_volume_carry_the_marker_as_their_last_comment_line() {
    let mut f = declared(fref("mask_email"), function_body("'***'"));
    f.comment = Some("masks emails".into());
    f.grants = vec![grant("analysts", &["EXECUTE"])];
    let p = one(f, None);
    assert_eq!(
        titles(&p),
        [
            "1. CREATE FUNCTION [meta]",
            "2. GRANT EXECUTE ON FUNCTION TO analysts [meta]"
        ]
    );
    let ObjectAction::CreateFunction { comment, .. } = &p.steps()[0].action else {
        panic!();
    };
    assert_eq!(
        comment,
        "masks emails\n[delta-operator.io/owner=sales/mask_email]"
    );
    let p = one(declared(volref("files"), ObjectBody::Volume), None);
    assert_eq!(titles(&p), ["1. CREATE VOLUME [meta]"]);
    let ObjectAction::CreateVolume { comment } = &p.steps()[0].action else {
        panic!();
    };
    assert_eq!(comment, "[delta-operator.io/owner=sales/files]");
}

#[test]
fn a_live_object_as_declared_plans_nothing_whatever_its_whitespace() {
    let d = view("v", "SELECT id FROM orders", reads(&["orders"], &[]));
    let mut o = observed(&d);
    o.body = view_body("select   id\n FROM orders");
    // the test's normaliser keeps case: the live text normalises like the declared one here
    if let ObjectBody::View { normalized, .. } = &mut o.body {
        *normalized = norm("SELECT id FROM orders");
    }
    let p = one(d, Some(o));
    assert_eq!(p.action, TableAction::Unchanged);
    assert!(p.steps().is_empty(), "{:#?}", titles(&p));
    let mut f = declared(fref("f"), function_body("upper(s)"));
    f.comment = Some("mine".into());
    let p = one(f.clone(), Some(observed(&f)));
    assert_eq!(p.action, TableAction::Unchanged, "{:#?}", titles(&p));
    let v = declared(volref("files"), ObjectBody::Volume);
    let p = one(v.clone(), Some(observed(&v)));
    assert_eq!(p.action, TableAction::Unchanged, "{:#?}", titles(&p));
}

#[test]
fn a_changed_query_replaces_the_view_and_puts_back_its_tags_grants_and_owner() {
    let mut d = view(
        "v",
        "SELECT id, amount FROM orders",
        reads(&["orders"], &[]),
    );
    d.tags = BTreeMap::from([("tier".into(), Some("gold".into()))]);
    d.grants = vec![grant("analysts", &["SELECT"])];
    let mut o = observed(&view("v", "SELECT id FROM orders", reads(&["orders"], &[])));
    o.tags = BTreeMap::from([
        ("tier".into(), "silver".into()),
        ("domain".into(), "sales".into()),
    ]);
    o.grants = vec![
        grant("analysts", &["SELECT", "MODIFY"]),
        grant("auditors", &["SELECT"]),
    ];
    o.properties.insert("set.by.hand".into(), "1".into());
    o.owner = Some("data-eng".into());
    let p = one(d, Some(o));
    assert_eq!(p.action, TableAction::Update);
    assert_eq!(
        titles(&p),
        [
            "1. CREATE OR REPLACE VIEW [meta]",
            "2. SET TAGS (domain, tier) [meta]",
            "3. GRANT SELECT ON VIEW TO analysts [meta]",
            "4. GRANT SELECT ON VIEW TO auditors [meta]",
            "5. OWNER TO data-eng [meta]",
            "6. UNSET TBLPROPERTIES (delta-operator.io/put-back) [meta]",
        ]
    );
    let ObjectAction::ReplaceView { properties, .. } = &p.steps()[0].action else {
        panic!();
    };
    // the live properties and the marker go in the replace itself
    assert_eq!(properties.get("set.by.hand").map(String::as_str), Some("1"));
    assert_eq!(
        properties.get(OWNER_PROPERTY).map(String::as_str),
        Some("sales/v")
    );
    let ObjectAction::SetTags { tags } = &p.steps()[1].action else {
        panic!();
    };
    assert_eq!(tags.get("tier").map(String::as_str), Some("gold"));
    assert!(p.steps()[1..].iter().all(|s| s.class == RiskClass::Meta));
    assert!(!p.notes.is_empty());
}

#[test]
fn a_changed_function_body_replaces_it_and_puts_back_its_grants_only() {
    let d = declared(fref("f"), function_body("lower(s)"));
    let mut o = observed(&declared(fref("f"), function_body("upper(s)")));
    o.grants = vec![grant("analysts", &["EXECUTE"])];
    o.tags = BTreeMap::from([("x".into(), "y".into())]);
    let p = one(d, Some(o));
    assert_eq!(
        titles(&p),
        [
            "1. CREATE OR REPLACE FUNCTION [meta]",
            "2. GRANT EXECUTE ON FUNCTION TO analysts [meta]"
        ]
    );
    let ObjectAction::ReplaceFunction { comment, body, .. } = &p.steps()[0].action else {
        panic!();
    };
    assert_eq!(body, "lower(s)");
    // what the put-back owes rides in the comment, before the marker line
    assert_eq!(
        comment,
        "[delta-operator.io/put-back={\"grants\":[{\"principal\":\"analysts\",\"privileges\":[\"EXECUTE\"]}]}]\n[delta-operator.io/owner=sales/f]"
    );
}

#[test]
fn a_new_signature_drops_the_function_first_and_waits_for_approval() {
    // Databricks: "You cannot replace an existing function with a different signature"
    let mut body = function_body("lower(s)");
    if let ObjectBody::Function { parameters, .. } = &mut body {
        parameters[0].data_type = "INT".into();
    }
    let d = declared(fref("f"), body);
    let mut o = observed(&declared(fref("f"), function_body("lower(s)")));
    o.grants = vec![grant("analysts", &["EXECUTE"])];
    let p = one(d, Some(o));
    assert_eq!(
        titles(&p),
        [
            "1. DROP FUNCTION [destructive]",
            "2. CREATE OR REPLACE FUNCTION [meta]",
            "3. GRANT EXECUTE ON FUNCTION TO analysts [meta]"
        ]
    );
    assert!(p.steps()[0].warnings[0].contains("fails until the next step"));
    // the body alone changed: no drop
    let d = declared(fref("f"), function_body("upper(s)"));
    let o = observed(&declared(fref("f"), function_body("lower(s)")));
    assert!(!titles(&one(d, Some(o)))[0].contains("DROP"));
}

#[test]
fn in_place_changes_are_comment_properties_tags_grants_and_owner() {
    let mut d = view("v", "SELECT 1", Reads::default());
    d.comment = Some("new".into());
    d.properties = BTreeMap::from([("a".into(), Some("2".into())), ("b".into(), None)]);
    d.tags = BTreeMap::from([("t".into(), None)]);
    d.grants = vec![grant("analysts", &["SELECT"])];
    d.owner = Some("new-owner".into());
    let mut o = observed(&view("v", "SELECT 1", Reads::default()));
    o.comment = Some("old".into());
    o.properties.insert("a".into(), "1".into());
    o.properties.insert("b".into(), "x".into());
    o.tags.insert("t".into(), "v".into());
    o.grants = vec![
        grant("analysts", &["SELECT", "MODIFY"]),
        grant("other", &["SELECT"]),
    ];
    o.owner = Some("old-owner".into());
    let p = one(d, Some(o));
    assert_eq!(
        titles(&p),
        [
            "1. COMMENT ON VIEW [meta]",
            "2. SET TBLPROPERTIES (a) [meta]",
            "3. UNSET TBLPROPERTIES (b) [meta]",
            "4. UNSET TAGS (t) [meta]",
            "5. REVOKE MODIFY ON VIEW FROM analysts [meta]",
            "6. OWNER TO new-owner [meta]",
        ]
    );
    assert_eq!(
        p.steps()[4].warnings,
        ["analysts loses MODIFY on main.sales.v"]
    );
    // a function's comment changes by a replace; a volume's keeps the marker line
    let mut f = declared(fref("f"), function_body("upper(s)"));
    let o = observed(&f);
    f.comment = Some("now documented".into());
    let p = one(f, Some(o));
    assert_eq!(titles(&p), ["1. CREATE OR REPLACE FUNCTION [meta]"]);
    let mut v = declared(volref("files"), ObjectBody::Volume);
    let o = observed(&v);
    v.comment = Some("raw files".into());
    let p = one(v, Some(o));
    assert_eq!(titles(&p), ["1. COMMENT ON VOLUME [meta]"]);
    let ObjectAction::SetComment { comment } = &p.steps()[0].action else {
        panic!();
    };
    assert_eq!(comment, "raw files\n[delta-operator.io/owner=sales/files]");
}

#[test]
fn an_unmarked_live_object_is_claimed_by_its_declaration() {
    let d = view("v", "SELECT 1", Reads::default());
    let o = ObservedObject::new(vref("v"), view_body("SELECT 1"));
    let p = one(d, Some(o));
    assert_eq!(
        titles(&p),
        ["1. SET TBLPROPERTIES (delta-operator.io/owner) [meta]"]
    );
    let v = declared(volref("files"), ObjectBody::Volume);
    let p = one(
        v,
        Some(ObservedObject::new(volref("files"), ObjectBody::Volume)),
    );
    assert_eq!(titles(&p), ["1. COMMENT ON VOLUME [meta]"]);
}

#[test]
fn another_resources_marker_and_a_backend_without_a_metastore_refuse() {
    let d = view("v", "SELECT 1", Reads::default());
    let mut o = observed(&d);
    o.properties.insert(OWNER_PROPERTY.into(), "other/v".into());
    let p = one(d.clone(), Some(o));
    assert_eq!(rules(&p), [Rule::OwnedByAnotherResource]);
    for caps in [lake(), Capabilities::spark_connect()] {
        let (plans, _, _) = plan_objects(vec![d.clone()], vec![], SchemaMode::Additive, &caps);
        assert_eq!(rules(&plans[0]), [Rule::NotSupportedByBackend]);
        let ObjectOutcome::Rejected { failures } = &plans[0].outcome else {
            panic!()
        };
        assert!(
            failures[0]
                .message
                .contains("views, functions and volumes need a Unity Catalog metastore"),
            "{}",
            failures[0].message
        );
    }
    let mut bad = d;
    bad.refusals = vec![SpecRefusal {
        path: "spec.query".into(),
        message: "reads main.sales.nope, which no manifest declares".into(),
        fix: "declare it".into(),
    }];
    let p = one(bad, None);
    assert!(p.is_refused());
}

#[test]
fn orphans_are_kept_in_additive_schemas_dropped_in_strict_ones_and_unmarked_ones_left_alone() {
    let gone = observed(&view("gone", "SELECT 1", Reads::default()));
    let gone_fn = observed(&declared(fref("gone_fn"), function_body("s")));
    let theirs = ObservedObject::new(vref("theirs"), view_body("SELECT 2"));
    let live = vec![gone.clone(), gone_fn.clone(), theirs.clone()];
    let (plans, unmanaged, _) = plan_objects(vec![], live.clone(), SchemaMode::Additive, &dbx());
    assert_eq!(unmanaged, [vref("theirs")]);
    assert!(
        plans
            .iter()
            .all(|p| p.action == TableAction::Keep && p.steps().is_empty())
    );
    assert_eq!(plans.len(), 2);
    let (plans, unmanaged, _) = plan_objects(vec![], live, SchemaMode::Strict, &dbx());
    assert_eq!(unmanaged, [vref("theirs")]);
    for p in &plans {
        assert_eq!(p.action, TableAction::Destroy);
        assert_eq!(p.steps().len(), 1);
        assert_eq!(p.steps()[0].action, ObjectAction::Drop);
        assert_eq!(p.steps()[0].class, RiskClass::Destructive);
    }
    // the drop waits for approval of this exact plan
    let plan = whole(vec![], vec![], vec![], vec![gone], SchemaMode::Strict);
    assert_eq!(plan.summary.destroy, 1);
    assert!(matches!(
        gate(&plan, Policy::Auto, None),
        Decision::NeedsApproval { .. }
    ));
    assert_eq!(gate(&plan, Policy::Auto, Some(&plan.id)), Decision::Apply);
    let shown = text::render(&plan);
    assert!(shown.contains("DROP VIEW"), "{shown}");
    assert!(
        shown.contains("Destroys something (view main.sales.gone step 1)"),
        "{shown}"
    );
    assert!(!shown.contains("theirs"));
    let plan = whole(vec![], vec![], vec![], vec![theirs], SchemaMode::Strict);
    assert!(!plan.has_changes());
    assert!(text::render(&plan).contains("main.sales.theirs   unmanaged view"));
}

/// `orders (id, email)` with a mask on email calling `mask_email`, a view over
/// it, and the function.
fn masked_orders() -> (
    delta_operator_core::model::DesiredTable,
    DesiredObject,
    DesiredObject,
) {
    let mut t = desired("orders", vec![col("id", "bigint"), col("email", "string")]);
    t.columns[1].mask = Some(Mask {
        function: "mask_email".into(),
        using_columns: vec![],
    });
    let f = declared(fref("mask_email"), function_body("'***'"));
    let v = view(
        "open_orders",
        "SELECT id, email FROM orders",
        reads(&["orders"], &[("orders", "id"), ("orders", "email")]),
    );
    (t, f, v)
}

#[test]
fn the_order_puts_functions_before_the_tables_they_mask_and_views_after_what_they_read() {
    let (t, f, v) = masked_orders();
    let other = desired("zeta", vec![col("id", "bigint")]);
    let plan = whole(
        vec![t, other],
        vec![],
        vec![v, f],
        vec![],
        SchemaMode::Additive,
    );
    assert_eq!(
        plan.order,
        [
            Node::Table(tref("zeta")),
            Node::Object(fref("mask_email")),
            Node::Table(tref("orders")),
            Node::Object(vref("open_orders")),
        ]
    );
    assert_eq!(plan.summary.add, 4);
    assert_eq!(plan.summary.rejected, 0);
    // json: a node is {"table": …} or {"object": …}
    let json = serde_json::to_value(&plan.order[1]).unwrap();
    assert_eq!(json["object"]["kind"], "function");
    let back: Plan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
    assert_eq!(back.objects, plan.objects);
    assert_eq!(back.order, plan.order);
}

#[test]
fn a_refused_function_blocks_the_table_it_masks_and_the_view_over_that_table() {
    let (t, mut f, v) = masked_orders();
    f.refusals = vec![SpecRefusal {
        path: "spec.body".into(),
        message: "bad".into(),
        fix: "fix it".into(),
    }];
    let plan = whole(vec![t], vec![], vec![v, f], vec![], SchemaMode::Additive);
    let orders = &plan.tables[0];
    let Outcome::Blocked { by, would_run } = &orders.outcome else {
        panic!("{:#?}", orders.outcome);
    };
    assert_eq!(by, &[TableRef::new("main", "sales", "mask_email")]);
    assert!(!would_run.is_empty());
    let view = plan
        .objects
        .iter()
        .find(|o| o.object == vref("open_orders"))
        .unwrap();
    let ObjectOutcome::Blocked { by, .. } = &view.outcome else {
        panic!("{:#?}", view.outcome);
    };
    assert_eq!(by, &["main.sales.orders"]);
    assert_eq!(plan.summary.rejected, 3);
    assert_eq!(gate(&plan, Policy::Auto, None), Decision::Rejected);
    let shown = text::render(&plan);
    assert!(
        shown.contains("it depends on main.sales.mask_email"),
        "{shown}"
    );
}

#[test]
fn a_cycle_of_views_refuses_each_member_naming_the_cycle_and_blocks_their_readers() {
    let a = view("a", "SELECT * FROM b", reads(&["b"], &[("b", "*")]));
    let b = view("b", "SELECT * FROM a", reads(&["a"], &[("a", "*")]));
    let c = view("c", "SELECT * FROM a", reads(&["a"], &[("a", "*")]));
    let own = view("self", "SELECT * FROM self", reads(&["self"], &[]));
    let (plans, _, order) = plan_objects(vec![a, b, c, own], vec![], SchemaMode::Additive, &dbx());
    let by = |n: &str| plans.iter().find(|p| p.object.name == n).unwrap();
    let message = |n: &str| match &by(n).outcome {
        ObjectOutcome::Rejected { failures } => {
            assert_eq!(failures[0].rule, Rule::DependencyCycle);
            failures[0].message.clone()
        }
        other => panic!("{n}: {other:#?}"),
    };
    assert!(
        message("a").contains("main.sales.a → main.sales.b → main.sales.a"),
        "{}",
        message("a")
    );
    assert!(message("b").contains("main.sales.b → main.sales.a → main.sales.b"));
    assert!(message("self").contains("main.sales.self → main.sales.self"));
    assert!(matches!(by("c").outcome, ObjectOutcome::Blocked { .. }));
    assert_eq!(order.len(), 4);
    assert_eq!(order.last(), Some(&Node::Object(vref("c"))));
}

#[test]
fn a_mask_function_that_reads_its_own_table_is_a_cycle_through_the_table() {
    let (t, mut f, _) = masked_orders();
    f.reads = reads(&["orders"], &[("orders", "id")]);
    let plan = whole(vec![t], vec![], vec![f], vec![], SchemaMode::Additive);
    let Outcome::Rejected { failures } = &plan.tables[0].outcome else {
        panic!("{:#?}", plan.tables[0].outcome);
    };
    assert_eq!(failures[0].rule, Rule::DependencyCycle);
    assert!(
        failures[0]
            .message
            .contains("main.sales.orders → main.sales.mask_email → main.sales.orders")
    );
    assert!(rules(&plan.objects[0]) == [Rule::DependencyCycle]);
}

/// `orders` live as `id, amount`, declared with `amount` renamed to `total`.
fn renamed_orders() -> (
    delta_operator_core::model::DesiredTable,
    delta_operator_core::model::ObservedTable,
) {
    let mut d = desired("orders", vec![col("id", "bigint"), col("total", "int")]);
    d.columns[1].renamed_from = Some("amount".into());
    let mut o = live("orders", vec![ocol("id", "bigint"), ocol("amount", "int")]);
    o.properties
        .insert("delta.columnMapping.mode".into(), "name".into());
    (d, o)
}

fn rename_step(plan: &Plan) -> &plan::Step {
    plan.tables[0]
        .steps()
        .iter()
        .find(|s| s.action.title().starts_with("RENAME COLUMN"))
        .unwrap_or_else(|| panic!("{:#?}", plan.tables[0].steps()))
}

#[test]
fn renaming_a_column_a_live_view_reads_is_destructive_and_names_the_view() {
    let (d, o) = renamed_orders();
    let theirs = ObservedObject {
        reads: reads(&["orders"], &[("orders", "amount")]),
        ..ObservedObject::new(vref("report"), view_body("SELECT amount FROM orders"))
    };
    let star = ObservedObject {
        reads: reads(&["orders"], &[("orders", "*")]),
        ..ObservedObject::new(vref("everything"), view_body("SELECT * FROM orders"))
    };
    let unrelated = ObservedObject {
        reads: reads(&["orders"], &[("orders", "id")]),
        ..ObservedObject::new(vref("ids"), view_body("SELECT id FROM orders"))
    };
    let plan = whole(
        vec![d.clone()],
        vec![o.clone()],
        vec![],
        vec![theirs, star, unrelated],
        SchemaMode::Additive,
    );
    let s = rename_step(&plan);
    assert_eq!(s.class, RiskClass::Destructive);
    assert_eq!(
        s.warnings,
        [
            "breaks view main.sales.everything: it reads column amount",
            "breaks view main.sales.report: it reads column amount",
        ]
    );
    assert!(matches!(
        gate(&plan, Policy::Auto, None),
        Decision::NeedsApproval { .. }
    ));
    // without a reader the rename is what it was
    let plan = whole(vec![d], vec![o], vec![], vec![], SchemaMode::Additive);
    assert_ne!(rename_step(&plan).class, RiskClass::Destructive);
    assert!(rename_step(&plan).warnings.is_empty());
}

#[test]
fn a_declared_view_replaced_in_the_same_plan_without_the_old_column_is_a_note() {
    let (d, o) = renamed_orders();
    let old = view(
        "report",
        "SELECT amount FROM orders",
        reads(&["orders"], &[("orders", "amount")]),
    );
    let new = view(
        "report",
        "SELECT total FROM orders",
        reads(&["orders"], &[("orders", "total")]),
    );
    let plan = whole(
        vec![d.clone()],
        vec![o.clone()],
        vec![new],
        vec![observed(&old)],
        SchemaMode::Additive,
    );
    let s = rename_step(&plan);
    assert_ne!(s.class, RiskClass::Destructive, "{s:#?}");
    assert!(s.warnings.is_empty());
    assert!(
        s.notes
            .contains(&"view main.sales.report is replaced after this step".to_string())
    );
    // the view is replaced after the table
    let at = |n: &Node| plan.order.iter().position(|x| x == n).unwrap();
    assert!(at(&Node::Table(tref("orders"))) < at(&Node::Object(vref("report"))));
    // declared as it is (still reading the old column): the rename breaks it
    let plan = whole(
        vec![d],
        vec![o],
        vec![old.clone()],
        vec![observed(&old)],
        SchemaMode::Additive,
    );
    let s = rename_step(&plan);
    assert_eq!(s.class, RiskClass::Destructive);
    assert_eq!(
        s.warnings,
        ["breaks view main.sales.report: it reads column amount"]
    );
}

/// A compiler for objects only: `<TITLE> <object>`, and the undo it knows.
struct Echo;

impl plan::Compiler for Echo {
    fn bind(
        &self,
        _plan: &plan::TablePlan,
        _observed: Option<&delta_operator_core::model::ObservedTable>,
        _earlier: &[plan::Step],
        step: &plan::Step,
        _binding: &plan::RunBinding<'_>,
    ) -> Result<plan::Compiled, plan::CompileError> {
        Ok(plan::Compiled {
            statements: vec![plan::Statement::Sql(step.action.title())],
            ..Default::default()
        })
    }

    fn compile_object(
        &self,
        plan: &ObjectPlan,
        step: &ObjectStep,
    ) -> Result<CompiledObject, plan::CompileError> {
        if plan.object.name == "uncompilable" {
            return Err(plan::CompileError::Unsupported("no statement".into()));
        }
        Ok(CompiledObject {
            statements: vec![format!(
                "{} {}",
                step.action.title(&plan.object),
                plan.object
            )],
            undo: (step.action == ObjectAction::Drop)
                .then(|| format!("CREATE {} {} (its old DDL)", plan.object.kind, plan.object)),
        })
    }
}

#[test]
fn compiling_fills_statements_and_undo_and_a_step_that_does_not_compile_refuses_and_blocks() {
    let gone = observed(&view("gone", "SELECT 1", Reads::default()));
    let bad = view("uncompilable", "SELECT 1", Reads::default());
    let reader = view(
        "reader",
        "SELECT * FROM uncompilable",
        reads(&["uncompilable"], &[]),
    );
    let t: Vec<Arc<delta_operator_core::model::DesiredTable>> = vec![];
    let objects: Vec<_> = [bad, reader].into_iter().map(Arc::new).collect();
    let live = vec![Arc::new(gone)];
    let caps = dbx();
    let parts = plan::plan_all_at(
        &t,
        &[],
        &objects,
        &live,
        &[scope(SchemaMode::Strict)],
        &caps,
        None,
    );
    let compiled = plan::compile::compile_all(caps.backend, parts.clone(), &Echo);
    let by = |n: &str| {
        compiled
            .objects
            .iter()
            .find(|p| p.object.name == n)
            .unwrap()
    };
    let drop = &by("gone").steps()[0];
    assert_eq!(drop.statements, ["DROP VIEW main.sales.gone"]);
    assert_eq!(
        drop.undo.as_deref(),
        Some("CREATE VIEW main.sales.gone (its old DDL)")
    );
    assert_eq!(rules(by("uncompilable")), [Rule::NotSupportedByBackend]);
    assert!(matches!(
        by("reader").outcome,
        ObjectOutcome::Blocked { .. }
    ));
    // the default compiler has no statements for objects: each is refused by name
    let finished = plan::finish_parts(caps.backend, parts);
    assert_ne!(finished.id, compiled.id, "the id covers the statements");
    let md = markdown::render(&compiled);
    assert!(md.contains("view `main.sales.gone` — destroy"), "{md}");
}

#[test]
fn the_plan_id_and_summary_count_objects() {
    let v = view("v", "SELECT 1", Reads::default());
    let a = whole(
        vec![],
        vec![],
        vec![v.clone()],
        vec![],
        SchemaMode::Additive,
    );
    let mut changed = v.clone();
    changed.body = view_body("SELECT 2");
    let b = whole(vec![], vec![], vec![changed], vec![], SchemaMode::Additive);
    assert_ne!(a.id, b.id);
    assert_eq!(a.summary.add, 1);
    assert_eq!(a.summary.steps, 1);
    let same = whole(
        vec![],
        vec![],
        vec![v.clone()],
        vec![observed(&v)],
        SchemaMode::Additive,
    );
    assert!(!same.has_changes(), "{}", text::render(&same));
    // a plan without objects keeps its shape: no objects or order in its JSON
    let none = plan::plan(&[], &[], &[], &dbx());
    let json = serde_json::to_value(&none).unwrap();
    assert!(json.get("objects").is_none() && json.get("order").is_none());
    assert!(none.apply_order().is_empty());
    let (d, o) = delta_operator_core::testing::orders();
    let tables_only = plan::plan(&[d], &[o], &[], &dbx());
    assert_eq!(tables_only.apply_order(), [Node::Table(tref("orders"))]);
    let _: Parts = none.into_parts();
    assert_eq!(
        with_marker(None, &ResourceId::new("a", "b")),
        "[delta-operator.io/owner=a/b]"
    );
}

#[test]
fn a_step_holds_once_the_live_object_shows_its_effect() {
    let d = view("v", "SELECT 1", Reads::default());
    let mut o = observed(&d);
    let create = ObjectAction::CreateView {
        query: "SELECT 1".into(),
        comment: None,
        column_comments: BTreeMap::new(),
        properties: BTreeMap::new(),
    };
    assert!(!create.holds(None));
    assert!(create.holds(Some(&o)));
    assert!(ObjectAction::Drop.holds(None));
    assert!(!ObjectAction::Drop.holds(Some(&o)));
    let g = ObjectAction::Grant {
        principal: "analysts".into(),
        privileges: vec![Privilege::new("SELECT")],
    };
    assert!(!g.holds(Some(&o)));
    o.grants = vec![grant("analysts", &["select"])];
    assert!(g.holds(Some(&o)));
    let c = ObjectAction::SetComment {
        comment: with_marker(Some("files"), &ResourceId::new("sales", "files")),
    };
    let mut vol = observed(&declared(volref("files"), ObjectBody::Volume));
    assert!(!c.holds(Some(&vol)));
    vol.comment = Some("files".into());
    assert!(c.holds(Some(&vol)));
    let replace = ObjectAction::ReplaceView {
        query: "SELECT 1".into(),
        comment: None,
        column_comments: BTreeMap::new(),
        properties: BTreeMap::new(),
    };
    assert!(!replace.holds(Some(&o)), "a replace always runs");
}

#[test]
fn a_replace_leaves_the_catalogs_own_view_properties_to_the_catalog() {
    let d = view("v", "SELECT 2", Reads::default());
    let mut o = observed(&view("v", "SELECT 1", Reads::default()));
    o.properties
        .insert("view.catalogAndNamespace.numParts".into(), "2".into());
    o.properties
        .insert("transient_lastDdlTime".into(), "1".into());
    o.properties.insert("team".into(), "x".into());
    let p = one(d, Some(o));
    let ObjectAction::ReplaceView { properties, .. } = &p.steps()[0].action else {
        panic!();
    };
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        [OWNER_PROPERTY, "team"]
    );
}

#[test]
fn a_schemas_orphan_objects_are_those_of_deleted_resources_of_its_namespace() {
    let mine = observed(&view("gone", "SELECT 1", Reads::default()));
    let kept = observed(&view("kept", "SELECT 1", Reads::default()));
    let mut elsewhere = observed(&view("theirs", "SELECT 1", Reads::default()));
    elsewhere
        .properties
        .insert(OWNER_PROPERTY.into(), "other/theirs".into());
    let unmarked = ObservedObject::new(vref("plain"), view_body("SELECT 1"));
    let live: Vec<_> = [mine, kept, elsewhere, unmarked]
        .into_iter()
        .map(Arc::new)
        .collect();
    let existing = [ResourceId::new("sales", "kept")].into_iter().collect();
    let plans = plan::plan_orphan_objects(&scope(SchemaMode::Strict), &live, "sales", &existing);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].object, vref("gone"));
    assert_eq!(plans[0].action, TableAction::Destroy);
    let plans = plan::plan_orphan_objects(&scope(SchemaMode::Additive), &live, "sales", &existing);
    assert_eq!(plans[0].action, TableAction::Keep);
}

/// The text and markdown of one plan with objects of every kind of outcome:
/// `UPDATE_SNAPSHOTS=1` rewrites `tests/snapshots/objects.{txt,md}`.
#[test]
fn objects_render_like_schema_plans_snapshot() {
    let (t, f, v) = masked_orders();
    let mut replaced = view("report", "SELECT id FROM orders", reads(&["orders"], &[]));
    replaced.grants = vec![grant("analysts", &["SELECT"])];
    let mut was = observed(&view(
        "report",
        "SELECT * FROM orders",
        reads(&["orders"], &[]),
    ));
    was.tags = BTreeMap::from([("tier".into(), "gold".into())]);
    was.grants = vec![grant("auditors", &["SELECT"])];
    was.owner = Some("data-eng".into());
    let a = view("a", "SELECT * FROM b", reads(&["b"], &[]));
    let b = view("b", "SELECT * FROM a", reads(&["a"], &[]));
    let gone = observed(&declared(volref("old_files"), ObjectBody::Volume));
    let plain = ObservedObject::new(fref("by_hand"), function_body("s"));
    let caps = dbx();
    let parts = plan::plan_all_at(
        &[Arc::new(t)],
        &[],
        &[f, v, replaced, a, b].map(Arc::new),
        &[was, gone, plain].map(Arc::new),
        &[scope(SchemaMode::Strict)],
        &caps,
        None,
    );
    let plan = plan::compile::compile_all(caps.backend, parts, &Echo);
    for (name, actual) in [
        ("objects.txt", text::render(&plan)),
        ("objects.md", markdown::render(&plan)),
    ] {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots")
            .join(name);
        if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; UPDATE_SNAPSHOTS=1 writes it", path.display()));
        assert!(
            expected == actual,
            "{name} differs from its snapshot; rendered:\n{actual}"
        );
    }
}

fn commented_view(query: &str, comments: &[(&str, &str)]) -> ObjectBody {
    ObjectBody::View {
        query: query.into(),
        normalized: norm(query),
        column_comments: comments
            .iter()
            .map(|(c, v)| ((*c).to_string(), (*v).to_string()))
            .collect(),
    }
}

fn outputs(names: &[&str], complete: bool) -> QueryOutputs {
    QueryOutputs {
        names: names.iter().map(|n| (*n).to_string()).collect(),
        complete,
    }
}

#[test]
fn another_tools_comment_on_an_undeclared_column_plans_nothing() {
    let q = "SELECT id, amount FROM orders";
    let mut d = declared(vref("v"), commented_view(q, &[("id", "the key")]));
    d.outputs = outputs(&["id", "amount"], true);
    let mut o = observed(&d);
    // another tool documented `amount`; the live catalog spells `ID` its own way
    o.body = commented_view(q, &[("ID", "the key"), ("amount", "in EUR")]);
    let p = one(d, Some(o));
    assert_eq!(p.action, TableAction::Unchanged, "{:#?}", titles(&p));
}

#[test]
fn a_changed_declared_column_comment_is_a_comment_on_column_not_a_replace() {
    let q = "SELECT id, amount FROM orders";
    let d = declared(
        vref("v"),
        commented_view(q, &[("id", "the key"), ("amount", "net")]),
    );
    let mut o = observed(&d);
    o.body = commented_view(q, &[("id", "old"), ("email", "another tool's")]);
    let p = one(d, Some(o.clone()));
    assert_eq!(
        titles(&p),
        [
            "1. COMMENT ON COLUMN amount [meta]",
            "2. COMMENT ON COLUMN id [meta]",
        ]
    );
    assert_eq!(
        p.steps()[0].undo.as_deref(),
        Some("COMMENT ON COLUMN main.sales.v.amount IS NULL")
    );
    assert_eq!(
        p.steps()[1].undo.as_deref(),
        Some("COMMENT ON COLUMN main.sales.v.id IS 'old'")
    );
    // it holds once the live view shows it, and not before
    let ObjectAction::SetColumnComment { .. } = &p.steps()[1].action else {
        panic!("{:#?}", p.steps()[1]);
    };
    assert!(!p.steps()[1].action.holds(Some(&o)));
    o.body = commented_view(q, &[("ID", "the key")]);
    assert!(p.steps()[1].action.holds(Some(&o)));
}

#[test]
fn a_replace_carries_other_tools_column_comments_the_new_query_still_outputs() {
    let mut d = declared(
        vref("v"),
        commented_view(
            "SELECT id, amount, upper(email) AS mail FROM orders",
            &[("id", "the key")],
        ),
    );
    d.outputs = outputs(&["id", "amount", "mail"], true);
    let mut o = observed(&d);
    o.body = commented_view(
        "SELECT id, amount, email, region FROM orders",
        &[
            ("id", "old key"),
            ("Amount", "in EUR"),
            ("email", "PII"),
            ("region", "ISO code"),
        ],
    );
    let p = one(d.clone(), Some(o.clone()));
    let s = &p.steps()[0];
    let ObjectAction::ReplaceView {
        column_comments, ..
    } = &s.action
    else {
        panic!("{:#?}", p.steps());
    };
    // declared as declared, another tool's on a column still there kept, gone ones noted
    assert_eq!(
        column_comments,
        &BTreeMap::from([
            ("Amount".to_string(), "in EUR".to_string()),
            ("id".to_string(), "the key".to_string()),
        ])
    );
    assert!(s.warnings.is_empty(), "{s:#?}");
    for col in ["email", "region"] {
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains(&format!("column {col} is no longer in the view"))),
            "{s:#?}"
        );
    }
    // a query whose outputs cannot all be told: kept where named, else a warning naming it
    d.body = commented_view(
        "SELECT *, amount AS Amount FROM orders",
        &[("id", "the key")],
    );
    d.outputs = outputs(&["Amount"], false);
    let p = one(d, Some(o));
    let s = &p.steps()[0];
    let ObjectAction::ReplaceView {
        column_comments, ..
    } = &s.action
    else {
        panic!("{:#?}", p.steps());
    };
    assert_eq!(column_comments.len(), 2, "{column_comments:?}");
    assert_eq!(s.warnings.len(), 2, "{s:#?}");
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("'PII' on column email") && w.contains("lost")),
        "{s:#?}"
    );
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("'ISO code' on column region")),
        "{s:#?}"
    );
}

/// The view as a replace left it when the run stopped right after it: the new
/// query, the record in its properties, none of the tags and grants.
fn replaced_without_put_back(d: &DesiredObject, replace: &ObjectStep) -> ObservedObject {
    let mut o = observed(d);
    let ObjectAction::ReplaceView { properties, .. } = &replace.action else {
        panic!("{replace:#?}");
    };
    o.properties = properties.clone();
    o.owner = Some("data-eng".into());
    o
}

#[test]
fn a_view_replace_records_its_put_back_and_a_stopped_run_leaves_the_next_plan_to_finish_it() {
    let mut d = view("v", "SELECT id, amount FROM orders", Reads::default());
    d.grants = vec![grant("analysts", &["SELECT"])];
    let mut o = observed(&view("v", "SELECT id FROM orders", Reads::default()));
    o.tags = BTreeMap::from([("domain".into(), "sales".into())]);
    o.grants = vec![grant("auditors", &["SELECT"])];
    o.owner = Some("data-eng".into());
    let p = one(d.clone(), Some(o));
    let ObjectAction::ReplaceView { properties, .. } = &p.steps()[0].action else {
        panic!();
    };
    let record = properties
        .get(delta_operator_core::model::property::PUT_BACK_PROPERTY)
        .expect("the replace records its put-back");
    let record: serde_json::Value = serde_json::from_str(record).unwrap();
    assert_eq!(record["tags"]["domain"], "sales", "{record}");
    assert_eq!(record["owner"], "data-eng", "{record}");
    assert_eq!(
        record["grants"].as_array().map(Vec::len),
        Some(2),
        "{record}"
    );
    // killed right after the replace: the next plan reads the record and puts back
    let stopped = replaced_without_put_back(&d, &p.steps()[0]);
    let again = one(d.clone(), Some(stopped.clone()));
    assert_eq!(
        titles(&again),
        [
            "1. GRANT SELECT ON VIEW TO analysts [meta]",
            "2. SET TAGS (domain) [meta]",
            "3. GRANT SELECT ON VIEW TO auditors [meta]",
            "4. UNSET TBLPROPERTIES (delta-operator.io/put-back) [meta]",
        ]
    );
    assert!(
        again.steps()[1]
            .notes
            .iter()
            .any(|n| n.contains("owed by an earlier replace")),
        "{:#?}",
        again.steps()
    );
    // part of it done (the tag): the rest; all of it done: only the record goes
    let mut half = stopped.clone();
    half.tags.insert("domain".into(), "sales".into());
    let again = one(d.clone(), Some(half.clone()));
    assert_eq!(
        titles(&again),
        [
            "1. GRANT SELECT ON VIEW TO analysts [meta]",
            "2. GRANT SELECT ON VIEW TO auditors [meta]",
            "3. UNSET TBLPROPERTIES (delta-operator.io/put-back) [meta]",
        ]
    );
    half.grants = vec![
        grant("analysts", &["SELECT"]),
        grant("auditors", &["SELECT"]),
    ];
    let again = one(d.clone(), Some(half.clone()));
    assert_eq!(
        titles(&again),
        ["1. UNSET TBLPROPERTIES (delta-operator.io/put-back) [meta]"]
    );
    half.properties
        .remove(delta_operator_core::model::property::PUT_BACK_PROPERTY);
    assert_eq!(one(d.clone(), Some(half)).action, TableAction::Unchanged);
    // the query changed again before the put-back ran: the new replace carries the owed
    let mut d2 = d.clone();
    d2.body = view_body("SELECT id FROM orders WHERE amount > 0");
    let p2 = one(d2, Some(stopped));
    let steps = titles(&p2);
    assert_eq!(steps[0], "1. CREATE OR REPLACE VIEW [meta]", "{steps:#?}");
    assert!(
        steps.iter().any(|t| t.contains("SET TAGS (domain)"))
            && steps.iter().any(|t| t.contains("TO auditors")),
        "{steps:#?}"
    );
    let ObjectAction::ReplaceView { properties, .. } = &p2.steps()[0].action else {
        panic!();
    };
    assert!(
        properties
            .get(delta_operator_core::model::property::PUT_BACK_PROPERTY)
            .is_some_and(|r| r.contains("auditors") && r.contains("domain")),
        "{properties:#?}"
    );
}

#[test]
fn a_function_replace_records_its_put_back_in_its_comment() {
    let d = declared(fref("f"), function_body("lower(s)"));
    let mut o = observed(&declared(fref("f"), function_body("upper(s)")));
    o.comment = Some("masks".into());
    o.grants = vec![grant("analysts", &["EXECUTE"])];
    let p = one(d.clone(), Some(o));
    let ObjectAction::ReplaceFunction { comment, .. } = &p.steps()[0].action else {
        panic!();
    };
    // as the catalog returns it: the user part (with the record line) and the marker
    let (user, marker) = delta_operator_core::model::object::split_marker(comment);
    let mut stopped = observed(&d);
    stopped.comment = user;
    stopped.marker = marker;
    // killed right after the replace: the grant is put back, the user's comment is unchanged
    let again = one(d.clone(), Some(stopped.clone()));
    assert_eq!(
        titles(&again),
        ["1. GRANT EXECUTE ON FUNCTION TO analysts [meta]"],
        "{again:#?}"
    );
    stopped.grants = vec![grant("analysts", &["EXECUTE"])];
    assert_eq!(
        one(d.clone(), Some(stopped.clone())).action,
        TableAction::Unchanged
    );
    // once any grant is there the record is spent: a grant another tool revokes later (here
    // analysts', with auditors' granted since) is not put back against it
    stopped.grants = vec![grant("auditors", &["EXECUTE"])];
    let later = one(d, Some(stopped));
    assert_eq!(later.action, TableAction::Unchanged, "{later:#?}");
}

#[test]
fn a_replace_records_the_other_tools_column_comments_it_carries() {
    let mut d = declared(
        vref("v"),
        commented_view("SELECT id, amount FROM orders", &[("id", "the key")]),
    );
    d.outputs = outputs(&["id", "amount"], true);
    let mut o = observed(&d);
    o.body = commented_view("SELECT id FROM orders JOIN x", &[("amount", "in EUR")]);
    let p = one(d.clone(), Some(o));
    let ObjectAction::ReplaceView { properties, .. } = &p.steps()[0].action else {
        panic!("{:#?}", p.steps());
    };
    let record = &properties[delta_operator_core::model::property::PUT_BACK_PROPERTY];
    assert!(
        record.contains("in EUR") && !record.contains("the key"),
        "{record}"
    );
    // killed after the CREATE, before its COMMENT ON COLUMN statements
    let mut stopped = observed(&d);
    stopped.body = commented_view("SELECT id, amount FROM orders", &[]);
    stopped.properties = properties.clone();
    let again = one(d, Some(stopped));
    assert_eq!(
        titles(&again),
        [
            "1. COMMENT ON COLUMN id [meta]",
            "2. COMMENT ON COLUMN amount [meta]",
            "3. UNSET TBLPROPERTIES (delta-operator.io/put-back) [meta]",
        ]
    );
}
