//! The lake's function lists (`LAKE_MISSING_FUNCTIONS`, `LAKE_ALIASES` in the
//! expression crate), derived here from DataFusion itself: every allowed function
//! is tried in a real CHECK on a temporary delta-rs table (`add_constraint`, what
//! an apply runs) and planned as a `using:` (as a rewrite plans it), and the
//! answers are held against the lists and against DataFusion's registry. When
//! DataFusion or delta-rs changes what it has, this fails and names the drift.

use std::collections::{BTreeMap, BTreeSet};

use delta_operator_expression::{
    ALLOWED_FUNCTIONS, LAKE_ALIASES, LAKE_EQUIVALENTS, LAKE_MISSING_FUNCTIONS, parse_check,
    parse_using,
};
use deltalake::DeltaTable;
use deltalake::arrow::datatypes::Schema as ArrowSchema;
use deltalake::datafusion::common::DFSchema;
use deltalake::datafusion::prelude::SessionContext;
use deltalake::kernel::StructType;
use deltalake::kernel::engine::arrow_conversion::TryIntoArrow;

/// Argument lists tried for each function, over the table's columns: the first
/// that the operator parses as a call of it and DataFusion types is the one used.
const ARGS: &[&str] = &[
    "s",
    "n",
    "x",
    "d",
    "t",
    "a",
    "m",
    "b",
    "",
    "s, s",
    "s, n",
    "n, n",
    "x, x",
    "x, n",
    "a, n",
    "a, a",
    "a, s",
    "m, s",
    "d, n",
    "d, d",
    "t, t",
    "s, d",
    "s, t",
    "t, s",
    "d, s",
    "n, s",
    "s, n, n",
    "s, s, s",
    "s, n, s",
    "s, s, n",
    "n, n, n",
    "'day', d",
    "'day', t",
    "s, x",
    "n, n, n, n, n, x",
    "2",
    "s, 2",
    "n, 2",
    "s, 2, s",
    "s, n, 2",
];

fn schema() -> StructType {
    let col = |name: &str, ty: serde_json::Value| serde_json::json!({"name": name, "type": ty, "nullable": true, "metadata": {}});
    serde_json::from_value(serde_json::json!({"type": "struct", "fields": [
        col("s", "string".into()),
        col("n", "long".into()),
        col("x", "double".into()),
        col("d", "date".into()),
        col("t", "timestamp".into()),
        col("a", serde_json::json!({"type": "array", "elementType": "long", "containsNull": true})),
        col("m", serde_json::json!({"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": true})),
        col("b", "binary".into()),
    ]}))
    .expect("a schema")
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Works,
    /// DataFusion has no such function.
    Invalid,
    /// delta-rs cannot print the planned CHECK back (an aliased call).
    Unprintable,
    /// No argument list tried made a call DataFusion types (or none parses as a call).
    Untried,
}

fn classify(message: &str) -> Option<Outcome> {
    if message.contains("Invalid function") {
        Some(Outcome::Invalid)
    } else if message.contains("Unable to convert expression to string") {
        Some(Outcome::Unprintable)
    } else {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lake_function_lists_are_what_datafusion_and_delta_rs_answer() {
    let dir = tempfile::tempdir().unwrap();
    let url = url::Url::from_directory_path(dir.path()).unwrap();
    let st = schema();
    let mut table = DeltaTable::try_from_url(url)
        .await
        .unwrap()
        .create()
        .with_table_name("f")
        .with_columns(st.fields().cloned())
        .await
        .unwrap();
    let arrow: ArrowSchema = (&st).try_into_arrow().unwrap();
    let df_schema = DFSchema::try_from(arrow).unwrap();
    let ctx = SessionContext::new();
    let state = ctx.state();
    let registry = state.scalar_functions().clone();

    let mut check: BTreeMap<&str, (Outcome, String)> = BTreeMap::new();
    let mut using: BTreeMap<&str, Outcome> = BTreeMap::new();
    let mut n = 0;
    for &f in ALLOWED_FUNCTIONS {
        let calls: Vec<String> = ARGS
            .iter()
            .map(|a| format!("{f}({a}) IS NOT NULL"))
            .filter(|e| parse_check(e).is_ok_and(|p| p.functions.iter().any(|x| x == f)))
            .collect();
        // as a CHECK: what an apply runs
        let mut outcome = (Outcome::Untried, String::new());
        for e in &calls {
            let sql = parse_check(e).unwrap().sql;
            n += 1;
            match table
                .clone()
                .add_constraint()
                .with_constraint(format!("c{n}"), sql.clone())
                .await
            {
                Ok(t) => {
                    table = t;
                    outcome = (Outcome::Works, sql);
                    break;
                }
                Err(err) => {
                    if let Some(o) = classify(&err.to_string()) {
                        outcome = (o, sql);
                        break;
                    }
                }
            }
        }
        check.insert(f, outcome);
        // as a `using:`: planned over the live columns as a rewrite plans it
        let mut u = Outcome::Untried;
        for e in &calls {
            let sql = parse_using(&e.replace(" IS NOT NULL", "")).unwrap().sql;
            match state.create_logical_expr(&sql, &df_schema) {
                Ok(_) => {
                    u = Outcome::Works;
                    break;
                }
                Err(err) => {
                    if let Some(o) = classify(&err.to_string()) {
                        u = o;
                        break;
                    }
                }
            }
        }
        using.insert(f, u);
    }

    let of = |m: &BTreeMap<&str, (Outcome, String)>, o: Outcome| -> BTreeSet<String> {
        m.iter()
            .filter(|(_, (x, _))| *x == o)
            .map(|(f, _)| f.to_string())
            .collect()
    };
    let untried: Vec<_> = of(&check, Outcome::Untried).into_iter().collect();
    eprintln!("not tried as a call (SQL syntax, or no argument list fits): {untried:?}");
    let missing: BTreeSet<String> = of(&check, Outcome::Invalid);
    let listed: BTreeSet<String> = LAKE_MISSING_FUNCTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        missing, listed,
        "LAKE_MISSING_FUNCTIONS drifted from what a lake CHECK calls and DataFusion lacks"
    );
    let using_missing: BTreeSet<String> = using
        .iter()
        .filter(|(_, o)| **o == Outcome::Invalid)
        .map(|(f, _)| f.to_string())
        .collect();
    assert_eq!(
        using_missing, listed,
        "a `using:` fails on other names than a CHECK"
    );
    let unprintable = of(&check, Outcome::Unprintable);
    let aliases: BTreeSet<String> = LAKE_ALIASES.iter().map(|(a, _)| a.to_string()).collect();
    assert_eq!(
        unprintable, aliases,
        "LAKE_ALIASES drifted from the CHECKs delta-rs cannot store"
    );
    // a `using:` of an alias is only evaluated: it works
    for a in &aliases {
        assert_eq!(using[a.as_str()], Outcome::Works, "{a} in a using:");
    }

    // against DataFusion's registry: what it lacks, and each alias's own name,
    // which a CHECK can be stored with
    for f in &missing {
        assert!(!registry.contains_key(f), "{f} is in DataFusion's registry");
    }
    for (alias, name) in LAKE_ALIASES {
        let udf = registry
            .get(*alias)
            .unwrap_or_else(|| panic!("{alias} is not in DataFusion's registry"));
        assert_eq!(udf.name(), *name, "{alias} is an alias of {}", udf.name());
        let (_, sql) = &check[alias];
        let own = sql.replacen(alias, name, 1);
        n += 1;
        table = table
            .clone()
            .add_constraint()
            .with_constraint(format!("c{n}"), own.clone())
            .await
            .unwrap_or_else(|e| panic!("{own}: {e}"));
    }
    // each equivalent suggested for a missing function is a CHECK the lake stores
    // (over some column), and passes the operator's own parser
    for (f, instead) in LAKE_EQUIVALENTS {
        assert!(
            missing.contains(*f),
            "{f} has an equivalent but is not missing"
        );
        let mut stored = false;
        for col in ["s", "d", "t", "x", "n", "(n > 0)"] {
            let e = format!("({}) IS NOT NULL", instead.replace('x', col));
            let Ok(p) = parse_check(&e) else { continue };
            n += 1;
            if let Ok(t) = table
                .clone()
                .add_constraint()
                .with_constraint(format!("c{n}"), p.sql)
                .await
            {
                table = t;
                stored = true;
                break;
            }
        }
        assert!(stored, "{f}: {instead} is stored over no column");
    }
    // every allowed name the registry holds under another name is an alias here
    // (or is never a call: SQL syntax such as trim, position, substring)
    for &f in ALLOWED_FUNCTIONS {
        if let Some(udf) = registry.get(f)
            && udf.name() != f
            && check[f].0 != Outcome::Untried
        {
            assert!(
                aliases.contains(f),
                "{f} is DataFusion's alias of {}",
                udf.name()
            );
        }
    }
}
