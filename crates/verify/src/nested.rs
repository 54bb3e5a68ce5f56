//! The nested-types probe's shared parts, run on Databricks and on Spark Connect
//! alike: its table and row, the steps the planner makes for its changes, and what
//! the table must read back as afterwards.

use delta_operator_core::model::ObservedTable;
use delta_operator_core::plan::Action;
use delta_operator_core::plan::change::FieldPath;

use crate::ty;

/// The table of the nested probe (Databricks and Spark Connect): one row.
pub const NESTED_TABLE: &str = "(counters MAP<STRING, INT>, ids MAP<SMALLINT, STRING>, scores ARRAY<SMALLINT>, items ARRAY<STRUCT<sku: STRING>>, address STRUCT<city: STRING, legacy_code: STRING>) USING DELTA";
pub const NESTED_ROW: &str = "(map('a', 1), map(CAST(1 AS SMALLINT), 'x'), array(CAST(2 AS SMALLINT)), array(named_struct('sku', 's1')), named_struct('city', 'c', 'legacy_code', 'l'))";

/// The steps the planner makes for the nested probe's changes
/// (`diff::contained`, pinned by plan_core's
/// `nested_widening_and_adds_inside_arrays_and_maps_are_in_place` and the
/// struct-field drop case), after type widening and column mapping are on.
pub fn nested_actions() -> Vec<Action> {
    let path =
        |p: &[&str]| -> FieldPath { p.iter().map(|s| s.to_string()).collect::<Vec<_>>().into() };
    vec![
        Action::EnableTypeWidening,
        Action::EnableColumnMapping,
        Action::DropField {
            path: path(&["address", "legacy_code"]),
        },
        Action::AlterColumnType {
            path: path(&["counters", "value"]),
            to: ty("bigint"),
        },
        Action::AlterColumnType {
            path: path(&["ids", "key"]),
            to: ty("int"),
        },
        Action::AlterColumnType {
            path: path(&["scores", "element"]),
            to: ty("int"),
        },
        Action::AddColumn {
            path: path(&["items", "element", "unit_price"]),
            field: delta_operator_core::model::StructField {
                name: "unit_price".into(),
                data_type: ty("double"),
                nullable: true,
                comment: None,
            },
        },
    ]
}

/// What the nested probe's table must read back as, or what differs.
pub fn nested_read_back(live: &ObservedTable) -> Result<(), String> {
    let want = [
        ("counters", "map<string,bigint>"),
        ("ids", "map<int,string>"),
        ("scores", "array<int>"),
        ("items", "array<struct<sku:string,unit_price:double>>"),
        ("address", "struct<city:string>"),
    ];
    let wrong: Vec<String> = want
        .iter()
        .filter(|(c, t)| live.column(c).map(|c| c.data_type.clone()) != Some(ty(t)))
        .map(|(c, t)| {
            format!(
                "{c} reads {} (expected {t})",
                live.column(c)
                    .map(|c| c.data_type.to_string())
                    .unwrap_or_else(|| "nothing".into())
            )
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(columns: &[(&str, &str)]) -> ObservedTable {
        let columns: Vec<serde_json::Value> = columns
            .iter()
            .map(|(n, t)| serde_json::json!({"name": n, "type": ty(t), "nullable": true}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "table": {"catalog": "main", "schema": "s", "table": "t"},
            "columns": columns,
        }))
        .expect("an observed table")
    }

    const AFTER: [(&str, &str); 5] = [
        ("counters", "map<string,bigint>"),
        ("ids", "map<int,string>"),
        ("scores", "array<int>"),
        ("items", "array<struct<sku:string,unit_price:double>>"),
        ("address", "struct<city:string>"),
    ];

    #[test]
    fn the_table_after_the_changes_reads_back_as_expected() {
        assert_eq!(nested_read_back(&table(&AFTER)), Ok(()));
    }

    #[test]
    fn a_change_not_made_or_a_missing_column_is_named() {
        let mut before = AFTER.to_vec();
        before[0] = ("counters", "map<string,int>");
        before.pop();
        let e = nested_read_back(&table(&before)).unwrap_err();
        assert_eq!(
            e,
            "counters reads map<string,int> (expected map<string,bigint>); address reads nothing (expected struct<city:string>)"
        );
    }

    #[test]
    fn the_steps_turn_the_features_on_first_and_name_parsed_types() {
        let actions = nested_actions();
        assert!(matches!(actions[0], Action::EnableTypeWidening));
        assert!(matches!(actions[1], Action::EnableColumnMapping));
        assert_eq!(actions.len(), 7);
        assert!(NESTED_TABLE.ends_with("USING DELTA") && NESTED_ROW.starts_with('('));
    }
}
