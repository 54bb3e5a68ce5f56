//! Views' queries and functions' bodies: parsed, normalised, and what they read.

use crate::{ColumnRead, Reads, normalize_expression, normalize_query, parse_body, parse_query};
use delta_operator_core::model::{SchemaRef, TableRef};

fn here() -> SchemaRef {
    SchemaRef {
        catalog: "main".into(),
        schema: "sales".into(),
    }
}

fn reads(q: &str) -> Reads {
    parse_query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .reads(&here())
        .unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// The columns read as `c.s.t.col` strings.
fn cols(r: &Reads) -> Vec<String> {
    r.columns
        .iter()
        .map(|ColumnRead { relation, column }| format!("{relation}.{column}"))
        .collect()
}

fn names(v: &[TableRef]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

#[test]
fn a_simple_view_reads_its_table_and_columns() {
    let r = reads("select id, amount from orders where ts > now() - INTERVAL 7 DAYS");
    assert_eq!(names(&r.relations), ["main.sales.orders"]);
    assert_eq!(
        cols(&r),
        [
            "main.sales.orders.amount",
            "main.sales.orders.id",
            "main.sales.orders.ts"
        ]
    );
    assert!(r.functions.is_empty(), "{:?}", r.functions);
}

#[test]
fn names_resolve_against_the_default_schema() {
    let r = reads("SELECT * FROM a JOIN other.b ON a.k = b.k JOIN cat.s.c USING (k)");
    assert_eq!(
        names(&r.relations),
        ["cat.s.c", "main.other.b", "main.sales.a"]
    );
    let c = cols(&r);
    for want in [
        "main.sales.a.*",
        "main.other.b.*",
        "cat.s.c.*",
        "main.sales.a.k",
        "main.other.b.k",
        "cat.s.c.k",
    ] {
        assert!(c.contains(&want.to_string()), "{want} in {c:?}");
    }
}

#[test]
fn aliases_resolve_and_ambiguous_columns_go_to_every_relation() {
    let r = reads("SELECT o.id, c.name, status FROM orders AS o JOIN customers c ON o.cust = c.id");
    assert_eq!(
        cols(&r),
        [
            "main.sales.customers.id",
            "main.sales.customers.name",
            "main.sales.customers.status",
            "main.sales.orders.cust",
            "main.sales.orders.id",
            "main.sales.orders.status",
        ]
    );
}

#[test]
fn ctes_are_not_relations() {
    let r = reads(
        "WITH recent AS (SELECT id, ts FROM orders WHERE ts > current_date()) SELECT r.id FROM recent r",
    );
    assert_eq!(names(&r.relations), ["main.sales.orders"]);
    assert_eq!(cols(&r), ["main.sales.orders.id", "main.sales.orders.ts"]);
}

#[test]
fn user_functions_have_two_or_three_parts() {
    let r = reads("SELECT sales.mask(email), main.util.f(id), upper(name) FROM customers");
    assert_eq!(names(&r.functions), ["main.sales.mask", "main.util.f"]);
    let b = parse_body("x + main.sales.rate(x)", &["X".into()]).unwrap();
    let r = b.reads(&here()).unwrap();
    assert_eq!(names(&r.functions), ["main.sales.rate"]);
    assert!(r.columns.is_empty(), "a parameter is not a column: {r:?}");
}

#[test]
fn subqueries_and_qualified_stars() {
    let r = reads(
        "SELECT o.*, (SELECT max(p.price) FROM prices p WHERE p.sku = o.sku) FROM orders o WHERE EXISTS (SELECT 1 FROM returns WHERE order_id = o.id)",
    );
    assert_eq!(
        names(&r.relations),
        [
            "main.sales.orders",
            "main.sales.prices",
            "main.sales.returns"
        ]
    );
    let c = cols(&r);
    for want in [
        "main.sales.orders.*",
        "main.sales.prices.price",
        "main.sales.prices.sku",
        "main.sales.orders.sku",
        "main.sales.returns.order_id",
        "main.sales.orders.id",
    ] {
        assert!(c.contains(&want.to_string()), "{want} in {c:?}");
    }
}

#[test]
fn a_struct_field_is_its_column() {
    let r = reads("SELECT address.city, o.address.zip FROM orders o");
    assert_eq!(cols(&r), ["main.sales.orders.address"]);
}

#[test]
fn lambda_parameters_are_not_columns() {
    let r = reads("SELECT transform(items, x -> x.price * qty) FROM orders");
    assert_eq!(
        cols(&r),
        ["main.sales.orders.items", "main.sales.orders.qty"]
    );
}

#[test]
fn a_body_with_a_scalar_subquery_reads_its_table() {
    let b = parse_body(
        "(SELECT rate FROM fx WHERE fx.currency = cur) * amount",
        &["cur".into(), "amount".into()],
    )
    .unwrap();
    let r = b.reads(&here()).unwrap();
    assert_eq!(names(&r.relations), ["main.sales.fx"]);
    assert_eq!(cols(&r), ["main.sales.fx.currency", "main.sales.fx.rate"]);
}

#[test]
fn normalised_forms_ignore_whitespace_keyword_case_and_comments() {
    let a = normalize_query("select  Id,\n amount -- the total\nFROM   Orders").unwrap();
    let b = normalize_query("SELECT Id, amount FROM Orders").unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a, "SELECT Id, amount FROM Orders",
        "identifier case is kept"
    );
    assert_ne!(a, normalize_query("SELECT id, amount FROM Orders").unwrap());
    // printing back is a fixed point
    assert_eq!(normalize_query(&a).unwrap(), a);
    let e = normalize_expression("case when x>0 then 'a' else  'b' end").unwrap();
    assert_eq!(e, "CASE WHEN x > 0 THEN 'a' ELSE 'b' END");
    assert_eq!(normalize_expression(&e).unwrap(), e);
}

#[test]
fn statements_and_extra_text_are_refused() {
    for bad in [
        "SELECT 1; DROP TABLE orders",
        "SELECT 1;",
        "DROP TABLE orders",
        "INSERT INTO t VALUES (1)",
        "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
        "SELECT * INTO t2 FROM t",
        "SELECT 1 FROM t) UNION (SELECT 2",
        "",
        "   ",
        "/* only a comment */",
        "SELECT 1 /* unclosed",
    ] {
        assert!(parse_query(bad).is_err(), "accepted: {bad:?}");
    }
    let e = parse_query("SELECT 1; DROP TABLE orders").unwrap_err();
    assert!(e.contains("';'"), "{e}");
    for bad in ["x; DROP TABLE t", "1 2", "x AS y", "SELECT 1"] {
        assert!(parse_body(bad, &[]).is_err(), "accepted body: {bad:?}");
    }
    // a comment alone is fine inside a query
    assert!(parse_query("SELECT 1 -- trailing").is_ok());
}

#[test]
fn more_than_three_name_parts_are_refused() {
    let q = parse_query("SELECT * FROM a.b.c.d").unwrap();
    let e = q.reads(&here()).unwrap_err();
    assert!(e.contains("at most three"), "{e}");
}

#[test]
fn deep_parentheses_are_refused() {
    let deep_parens = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
    let e = parse_query(&deep_parens).unwrap_err();
    assert!(e.contains("deeper"), "{e}");
    let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(parse_body(&deep, &[]).is_err());
}

#[test]
fn deep_subqueries_are_refused() {
    let deep_subqueries = format!(
        "{}SELECT 1{}",
        "SELECT * FROM (".repeat(400),
        ")".repeat(400)
    );
    let e = parse_query(&deep_subqueries).unwrap_err();
    assert!(e.contains("deeper"), "{e}");
}

#[test]
fn a_megabyte_is_refused_by_its_size() {
    let long = format!("SELECT {} FROM t", "a, ".repeat(400_000) + "a");
    let e = parse_query(&long).unwrap_err();
    assert!(e.contains("limit"), "{e}");
    let e = parse_body(&long, &[]).unwrap_err();
    assert!(e.contains("limit"), "{e}");
}

#[test]
fn a_long_operator_chain_never_overflows() {
    // left-deep trees the parser builds without recursing
    let chain = format!("SELECT 1{} FROM t", "+1".repeat(30_000));
    let e = parse_query(&chain).unwrap_err();
    assert!(e.contains("more than 1000 deep"), "{e}");
    // half-built when the parser gives up: dropped on the parser's stack
    let broken = format!("SELECT 1{} FROM", "+1".repeat(30_000));
    assert!(parse_query(&broken).is_err());
    let ors = format!("SELECT * FROM t WHERE a = 0{}", " OR a = 1".repeat(900));
    assert!(parse_query(&ors).is_ok(), "900 ORs are a real view's");
}

#[test]
fn a_long_union_chain_never_overflows() {
    let unions = format!("SELECT 1{}", " UNION SELECT 1".repeat(4000));
    let _ = parse_query(&unions).map(|q| q.reads(&here()));
}

#[test]
fn a_long_body_chain_never_overflows() {
    let body_chain = "x".to_string() + &" + x".repeat(16_000);
    let e = parse_body(&body_chain, &["x".into()]).unwrap_err();
    assert!(e.contains("deep"), "{e}");
}

#[test]
fn junk_never_panics() {
    for junk in ["\u{0}", "'", "`", "SELECT `", "SELECT 'a", "(((", "))))"] {
        assert!(parse_query(junk).is_err(), "{junk:?}");
        let _ = parse_body(junk, &[]);
    }
}

#[test]
fn set_operations_windows_and_order_by_read_their_relations() {
    let r = reads(
        "SELECT id, row_number() OVER (PARTITION BY region ORDER BY ts) FROM a UNION ALL SELECT id, 1 FROM b ORDER BY id",
    );
    assert_eq!(names(&r.relations), ["main.sales.a", "main.sales.b"]);
    let c = cols(&r);
    for want in [
        "main.sales.a.id",
        "main.sales.a.region",
        "main.sales.a.ts",
        "main.sales.b.id",
    ] {
        assert!(c.contains(&want.to_string()), "{want} in {c:?}");
    }
}

#[test]
fn comments_with_semicolons_and_quoted_names_are_one_query() {
    let q = parse_query("SELECT `Order Id` /* ; DROP TABLE t */ FROM `my schema`.`Orders` -- ;\n")
        .unwrap();
    assert_eq!(q.normalized, "SELECT `Order Id` FROM `my schema`.`Orders`");
    let r = q.reads(&here()).unwrap();
    assert_eq!(names(&r.relations), ["main.my schema.orders"]);
    assert_eq!(cols(&r), ["main.my schema.orders.order id"]);
}

#[test]
fn a_cte_shadows_a_table_only_by_its_one_part_name() {
    let r =
        reads("WITH orders AS (SELECT 1 AS id) SELECT * FROM orders JOIN sales.orders s ON true");
    assert_eq!(names(&r.relations), ["main.sales.orders"]);
}

#[test]
fn lateral_view_aliases_are_not_columns() {
    let r = reads("SELECT id, item FROM orders LATERAL VIEW explode(items) t AS item");
    assert_eq!(
        cols(&r),
        ["main.sales.orders.id", "main.sales.orders.items"]
    );
}

#[test]
fn table_functions_in_from_are_functions() {
    let r = reads("SELECT * FROM main.util.recent(7) r JOIN range(10) x ON true");
    assert_eq!(names(&r.functions), ["main.util.recent"]);
    assert!(r.relations.is_empty(), "{:?}", r.relations);
}

fn outputs(q: &str) -> (Vec<String>, bool) {
    let o = parse_query(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .outputs();
    (o.names, o.complete)
}

#[test]
fn a_querys_output_names_are_its_aliases_and_bare_columns() {
    assert_eq!(
        outputs("SELECT id, o.Amount, upper(email) AS mail FROM orders o"),
        (vec!["id".into(), "Amount".into(), "mail".into()], true)
    );
    // a set operation's names are its first operand's; a CTE's body is the query
    assert_eq!(
        outputs("WITH x AS (SELECT 1 AS a) SELECT a FROM x UNION ALL SELECT b FROM y"),
        (vec!["a".into()], true)
    );
    // `*` and an unnamed expression: the names known so far, incomplete
    assert_eq!(
        outputs("SELECT *, id AS k, amount + 1 FROM orders"),
        (vec!["k".into()], false)
    );
    assert_eq!(outputs("SELECT o.* FROM orders o"), (vec![], false));
    assert_eq!(outputs("VALUES (1, 2)"), (vec![], false));
}
