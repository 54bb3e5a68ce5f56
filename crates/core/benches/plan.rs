//! Planning speed: 1,000 tables × 50 columns (nested types included) against
//! live states that differ in every way the planner handles. Prints figures.
//! `cargo bench --bench plan` runs the full size; under `cargo test` (no
//! `--bench` argument) it runs a small size to prove it works.
//! `PLAN_BENCH_INPUT=<file>` also writes the generated input (desired,
//! observed, schema modes) there as JSON, so that `e2e/bench/planners.sh`
//! hands the very same tables to the other tools' planners.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use delta_operator_core::model::{
    DataType, DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedColumn, ObservedTable,
    SchemaMode, StructField, TableRef,
};
use delta_operator_core::plan::{Capabilities, SchemaScope, plan_shared};

fn column_type(i: usize) -> DataType {
    match i % 10 {
        0 => DataType::Long,
        1 => DataType::String,
        2 => DataType::Decimal {
            precision: 18,
            scale: 2,
        },
        3 => DataType::Struct {
            fields: vec![
                StructField {
                    name: "a".into(),
                    data_type: DataType::Int,
                    nullable: true,
                    comment: None,
                },
                StructField {
                    name: "b".into(),
                    data_type: DataType::Array {
                        element: Box::new(DataType::String),
                        contains_null: true,
                    },
                    nullable: true,
                    comment: None,
                },
            ],
        },
        4 => DataType::Array {
            element: Box::new(DataType::Struct {
                fields: vec![StructField {
                    name: "sku".into(),
                    data_type: DataType::String,
                    nullable: true,
                    comment: None,
                }],
            }),
            contains_null: true,
        },
        5 => DataType::Map {
            key: Box::new(DataType::String),
            value: Box::new(DataType::Long),
            value_contains_null: true,
        },
        6 => DataType::Date,
        7 => DataType::TimestampNtz,
        8 => DataType::Int,
        _ => DataType::Double,
    }
}

fn tables(n: usize, cols: usize) -> (Vec<DesiredTable>, Vec<ObservedTable>) {
    let mut desired = Vec::new();
    let mut observed = Vec::new();
    for t in 0..n {
        let table = TableRef::new("main", &format!("s{}", t % 10), &format!("t{t}"));
        let marker = format!("default/t{t}");
        let columns: Vec<DesiredColumn> = (0..cols)
            .map(|c| DesiredColumn {
                comment: Some(format!("column {c}")),
                ..DesiredColumn::new(&format!("c{c}"), column_type(c), c != 0)
            })
            .collect();
        // live: every third table drifted (a comment, a widened type, an extra column)
        let mut live_cols: Vec<ObservedColumn> = columns
            .iter()
            .map(|c| ObservedColumn {
                comment: c.comment.clone(),
                ..ObservedColumn::new(&c.name, c.data_type.clone(), c.nullable)
            })
            .collect();
        if t % 3 == 0 {
            live_cols[1].comment = Some("old".into());
            live_cols[8].data_type = DataType::Short;
            live_cols.push(ObservedColumn::new("extra", DataType::String, true));
        }
        observed.push(ObservedTable {
            properties: BTreeMap::from([(OWNER_PROPERTY.to_string(), marker.clone())]),
            version: Some(t as u64),
            size_bytes: Some(1 << 30),
            ..ObservedTable::new(table.clone(), live_cols)
        });
        desired.push(DesiredTable::new(table, &marker, columns));
    }
    (desired, observed)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, cols, runs) = if full { (1000, 50, 5) } else { (20, 50, 1) };
    let (desired, observed) = tables(n, cols);
    let schemas: Vec<SchemaScope> = (0..10)
        .map(|s| SchemaScope {
            schema: TableRef::new("main", &format!("s{s}"), "x").schema_ref(),
            mode: SchemaMode::Additive,
            meta: Default::default(),
        })
        .collect();
    if let Some(path) = std::env::var_os("PLAN_BENCH_INPUT") {
        let input = serde_json::json!({
            "desired": desired,
            "observed": observed,
            "schemas": schemas.iter().map(|s| serde_json::json!({
                "catalog": s.schema.catalog, "schema": s.schema.schema, "mode": s.mode,
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string(&input).expect("the model serialises");
        std::fs::write(&path, text).expect("PLAN_BENCH_INPUT is writable");
    }
    // as the engine holds them: read once, shared by every plan made of them
    let desired: Vec<Arc<DesiredTable>> = desired.into_iter().map(Arc::new).collect();
    let observed: Vec<Arc<ObservedTable>> = observed.into_iter().map(Arc::new).collect();
    for caps in [Capabilities::lake(), Capabilities::databricks()] {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..runs {
            let start = Instant::now();
            let p = plan_shared(&desired, &observed, &schemas, &caps);
            times.push(start.elapsed());
            last = Some(p);
        }
        let p = last.expect("ran");
        assert_eq!(p.summary.change, n.div_ceil(3), "every third table drifted");
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "plan {n} tables x {cols} columns ({}): median {:.1} ms over {runs} runs ({:.1} µs per table) · {} changed · {} rejected · {} steps · id {}",
            caps.backend,
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e6 / n as f64,
            p.summary.change,
            p.summary.rejected,
            p.summary.steps,
            p.id
        );
    }
}
