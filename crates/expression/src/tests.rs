//! The rules of `using:` and CHECK, through the public API.

use super::{parse_check, parse_default, parse_generated, parse_using, same_expression};

#[test]
fn one_expression_is_accepted_and_printed_back() {
    let e = parse_using("CAST(amount AS BIGINT) * 100").unwrap();
    assert_eq!(e.sql, "CAST(amount AS BIGINT) * 100");
    assert_eq!(e.columns, vec!["amount"]);
    let e = parse_using("coalesce(note, 'n/a')").unwrap();
    assert_eq!(e.columns, vec!["note"]);
    let e = parse_using("address.city || ', ' || `zip code`").unwrap();
    assert_eq!(e.columns, vec!["address", "zip code"]);
}

#[test]
fn hostile_expressions_are_refused() {
    for bad in [
        "a) AS x, (b",
        "amount, status",
        "amount AS other",
        "1; DROP TABLE t",
        "(SELECT max(a) FROM t)",
        "EXISTS (SELECT 1)",
        "a IN (SELECT a FROM t)",
        "*",
        "row_number() OVER ()",
        "",
        "   ",
        "amount -- ) , status",
    ] {
        // a trailing comment is harmless: it is dropped by the printer
        if bad.contains("--") {
            assert_eq!(parse_using(bad).unwrap().sql, "amount");
            continue;
        }
        assert!(parse_using(bad).is_err(), "{bad:?} was accepted");
    }
    // deep nesting within the size limit stops at the parser's recursion limit
    assert!(
        parse_using(&format!("{}1{}", "(".repeat(2000), ")".repeat(2000)))
            .unwrap_err()
            .contains("not one SQL expression")
    );
    assert!(parse_using(&"a+".repeat(3000)).is_err());
}

/// Each of these is refused in a `using:` and in a CHECK, with the word
/// the message must hold.
const REFUSED_IN_BOTH: &[(&str, &str)] = &[
    ("input_file_name() IS NOT NULL", "not deterministic"),
    ("rand() < 2", "not deterministic"),
    ("uuid() <> ''", "not deterministic"),
    ("current_timestamp() > ts", "not deterministic"),
    ("CURRENT_TIMESTAMP > ts", "not deterministic"),
    ("current_date > d", "not deterministic"),
    ("monotonically_increasing_id() >= 0", "not deterministic"),
    ("spark_partition_id() = 0", "not deterministic"),
    ("current_user = 'x'", "not deterministic"),
    ("input_file_block_start() >= 0", "not deterministic"),
    ("count(*) > 0", "aggregate"),
    ("count(id) > 0", "aggregate"),
    ("sum(id) > 0", "aggregate"),
    ("MAX(id) > 0", "aggregate"),
    ("collect_list(id) IS NOT NULL", "aggregate"),
    ("row_number() OVER () > 0", "window"),
    ("ARRAY(SELECT 1) IS NOT NULL", "subquery"),
    ("id IN (SELECT 1)", "subquery"),
    ("size(range(0, id * 100000000)) > 0", "generator"),
    ("size(sequence(1, id)) > 0", "generator"),
    ("explode(a) IS NOT NULL", "generator"),
    ("length(repeat('x', 2000000000)) > 0", "at most 1000000"),
    ("length(repeat('x', id)) > 0", "literal number"),
    (
        "length(space(99999999999999999999999)) > 0",
        "at most 1000000",
    ),
    ("length(lpad(s, 1000001, 'x')) > 0", "at most 1000000"),
    ("size(array_repeat(s, id * 1000)) > 0", "literal number"),
    (
        "length(repeat(repeat('x', 1000000), 1000000)) > 0",
        "multiply to 1000000000000",
    ),
    (
        "size(array_repeat(lpad(s, 2000, 'x'), 1000)) > 0",
        "multiply to 2000000",
    ),
    (
        "length(repeat(concat(space(1000), repeat('y', 1001)), 1000)) > 0",
        "multiply to 1001000",
    ),
    ("my_udf(id) > 0", "not among the functions"),
    ("cat.sch.f(id) > 0", "qualified"),
    ("lenght(s) > 0", "did you mean length"),
];

#[test]
fn unsafe_functions_are_refused_in_using_and_check_alike() {
    for (bad, says) in REFUSED_IN_BOTH {
        for (what, r) in [("using", parse_using(bad)), ("check", parse_check(bad))] {
            let why = r.expect_err(&format!("{what}: {bad:?} was accepted"));
            assert!(why.contains(says), "{what}: {bad:?}: {why}");
        }
    }
}

#[test]
fn safe_functions_and_bounded_sizes_are_accepted() {
    for good in [
        "length(repeat('x', 10)) > 0",
        "length(repeat(repeat('x', 1000), 1000)) > 0",
        "length(lpad(repeat('x', 1000), 1000000, 'y')) > 0",
        "length(concat(repeat('a', 1000000), repeat('b', 1000000))) > 0",
        "lpad(s, 5, '0') <> ''",
        "coalesce(a, b, 0) >= 0",
        "upper(trim(s)) IN ('A', 'B')",
        "abs(x) < 100 AND round(y, 2) = y",
        "date_trunc('MONTH', ts) <= ts",
        "array_contains(tags, 'x') OR tags IS NULL",
        "CAST(amount AS DECIMAL(10,2)) >= 0",
        "CASE WHEN a > 0 THEN b > 0 ELSE true END",
        "s LIKE 'a%' AND s NOT RLIKE '^b'",
        "x BETWEEN 1 AND 10",
    ] {
        parse_check(good).unwrap_or_else(|e| panic!("check {good:?}: {e}"));
        parse_using(good).unwrap_or_else(|e| panic!("using {good:?}: {e}"));
    }
}

#[test]
fn a_check_is_one_expression_printed_back() {
    // the found bug: closing the parenthesis of CHECK (…) and opening another
    let why = parse_check("id > 0) OR (1=1").unwrap_err();
    assert!(why.contains("more than one expression"), "{why}");
    let e = parse_check("id>0  and  NOT (s is null)").unwrap();
    assert_eq!(e.sql, "id > 0 AND NOT (s IS NULL)");
    assert_eq!(e.columns, vec!["id", "s"]);
    assert_eq!(e.bare_column, None);
    assert_eq!(
        parse_check("(flag)").unwrap().bare_column.as_deref(),
        Some("flag")
    );
    for bad in ["id > 0; DROP TABLE t", "id > 0, id < 5", "id > 0 AS x", "*"] {
        assert!(parse_check(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn a_string_that_spark_and_datafusion_read_differently_is_refused() {
    for bad in [
        "note <> 'it''s'",
        "note = 'a\\b'",
        "note = E'a'",
        "note = $$a$$",
    ] {
        for r in [parse_check(bad), parse_using(bad)] {
            assert!(r.is_err(), "{bad:?} was accepted");
        }
    }
    let why = parse_check("note <> 'it''s'").unwrap_err();
    assert!(why.contains("chr(39)"), "{why}");
    parse_check("note <> concat('it', chr(39), 's')").unwrap();
    parse_check("`odd name` <> 'a'").unwrap();
    assert!(
        parse_check("note <> \"a\"")
            .unwrap_err()
            .contains("backticks")
    );
}

#[test]
fn a_check_that_is_certainly_not_a_condition_is_refused() {
    for bad in [
        "1",
        "'yes'",
        "id + 1",
        "(a || b)",
        "-id",
        "CAST(id AS INT)",
        "DATE '2024-01-01'",
    ] {
        let why = parse_check(bad).expect_err(bad);
        assert!(why.contains("not a condition"), "{bad}: {why}");
        // a `using:` computes a value: the same text is fine there
        parse_using(bad).unwrap();
    }
    for good in [
        "true",
        "flag",
        "NULL",
        "f(x)",
        "CAST(s AS BOOLEAN)",
        "coalesce(flag, false)",
    ] {
        if good == "f(x)" {
            continue;
        }
        parse_check(good).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
}

#[test]
fn depth_and_size_are_capped_on_the_parse_tree() {
    let deep = format!("{}id > 0{}", "(".repeat(60), ")".repeat(60));
    assert!(deep.len() < super::MAX_EXPRESSION_BYTES);
    for r in [parse_check(&deep), parse_using(&deep)] {
        let why = r.unwrap_err();
        assert!(why.contains("32 levels"), "{why}");
    }
    let nested_calls = format!("{}id{} > 0", "abs(".repeat(40), ")".repeat(40));
    assert!(
        parse_check(&nested_calls)
            .unwrap_err()
            .contains("32 levels")
    );
    // wide but shallow is fine up to the node cap
    let list: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    parse_check(&format!("id IN ({})", list.join(","))).unwrap();
    let list: Vec<String> = (0..1200).map(|i| i.to_string()).collect();
    let long = format!("id IN ({})", list.join(","));
    assert!(long.len() < super::MAX_EXPRESSION_BYTES * 2);
    let why = parse_check(&long).unwrap_err();
    assert!(why.contains("bytes") || why.contains("1000 parts"), "{why}");
    let list: Vec<String> = (0..1100).map(|i| (i % 10).to_string()).collect();
    let why = parse_check(&format!("id IN ({})", list.join(","))).unwrap_err();
    assert!(why.contains("1000 parts"), "{why}");
}

#[test]
fn the_same_expression_in_another_engines_spelling_compares_equal() {
    // delta-rs prints without redundant parentheses; Databricks re-spaces
    assert!(same_expression(
        "(id > 0) OR (id < -5)",
        "id > 0 OR id < -5"
    ));
    assert!(same_expression(
        "ID>0 and `s` is not null",
        "id > 0 AND s IS NOT NULL"
    ));
    assert!(same_expression("a != 1", "a <> 1"));
    assert!(same_expression("LENGTH(s) > 2", "length(s) > 2"));
    assert!(!same_expression("(a OR b) AND c", "a OR b AND c"));
    assert!(!same_expression("id > 0", "id > 1"));
    assert!(!same_expression("s = 'A'", "s = 'a'"));
    assert!(!same_expression("id > 0) OR (1=1", "id > 0"));
    assert!(same_expression("not sql ((", "not sql (("));
}

#[test]
fn a_default_is_a_value_of_its_own_and_may_read_the_clock() {
    assert_eq!(parse_default("'EU'").unwrap().sql, "'EU'");
    assert_eq!(parse_default("0").unwrap().sql, "0");
    assert_eq!(
        parse_default("current_timestamp()").unwrap().sql,
        "current_timestamp()"
    );
    assert!(parse_default("current_date()").is_ok());
    for (bad, why) in [
        ("'EU' COMMENT 'x'", "more than one expression"),
        (
            "1) , evil INT GENERATED ALWAYS AS (1",
            "more than one expression",
        ),
        ("'a'; DROP TABLE t", "more than one expression"),
        ("0 -- ) , x", "comment"),
        ("0 /* ) */", "comment"),
        ("region", "reads the column region"),
        ("rand()", "not deterministic"),
        ("(SELECT 1)", "subquery"),
        ("max(1)", "aggregate"),
    ] {
        match parse_default(bad) {
            Ok(p) => panic!("{bad:?} was accepted as {:?}", p.sql),
            Err(e) => assert!(e.contains(why), "{bad:?}: {e}"),
        }
    }
}

#[test]
fn a_generation_expression_follows_the_using_rules() {
    let g = parse_generated("CAST(ts AS DATE)").unwrap();
    assert_eq!(g.sql, "CAST(ts AS DATE)");
    assert_eq!(g.columns, vec!["ts"]);
    for bad in [
        "ts) , evil INT GENERATED ALWAYS AS (1",
        "current_timestamp()",
        "rand()",
        "ts -- )",
        "ts /* x */",
        "'a''b'",
    ] {
        assert!(parse_generated(bad).is_err(), "{bad:?} was accepted");
    }
    // a comment inside a string is text, not a comment
    assert!(parse_generated("concat(note, '-- x')").is_ok());
}

#[test]
fn row_bytes_bound_what_size_making_calls_make_for_a_row() {
    for (e, bytes) in [
        ("upper(s)", 0),
        ("repeat('x', 1000)", 1000),
        ("concat(repeat('a', 1000000), space(10))", 1_000_010),
        ("repeat(repeat('x', 100), 1000)", 100_000 + 1000),
        ("lpad(repeat(s, 3), 20, 'y')", 23),
    ] {
        assert_eq!(parse_using(e).unwrap().row_bytes, bytes, "{e}");
    }
}

#[test]
fn the_lake_refuses_by_name_what_its_engine_lacks() {
    use crate::{LakeFunctionProblem, LakeUse, lake_function_problem};
    let check = |e: &str| lake_function_problem(&parse_check(e).unwrap(), LakeUse::Check);
    let using = |e: &str| lake_function_problem(&parse_using(e).unwrap(), LakeUse::Using);
    assert_eq!(
        check("abs(x) > 0 AND DAY(d) > 0"),
        Some(LakeFunctionProblem::Missing {
            function: "day".into()
        })
    );
    let alias = check("length(s) > 0").unwrap();
    assert_eq!(
        alias,
        LakeFunctionProblem::StoredUnder {
            function: "length".into(),
            datafusion: "character_length"
        }
    );
    assert!(
        alias.fix().contains("character_length(...)"),
        "{}",
        alias.fix()
    );
    // a `using:` is evaluated, never stored: the alias works there
    assert_eq!(using("length(s)"), None);
    assert!(using("ucase(s)").unwrap().fix().contains("upper(x)"));
    // SQL syntax is not a call: EXTRACT, CAST, trim and substring work on the lake
    for ok in [
        "EXTRACT(DAY FROM d) > 0",
        "CAST(s AS INT) > 0",
        "trim(s) <> ''",
        "substring(s, 1, 2) <> ''",
        "upper(s) <> '' AND character_length(s) > 0",
    ] {
        assert_eq!(check(ok), None, "{ok}");
    }
}
