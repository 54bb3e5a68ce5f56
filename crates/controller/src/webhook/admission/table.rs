//! Admission of a DeltaTable: validated with its namespace's schemas and the
//! tables it depends on (`depends::dependencies`), and with what its schema's
//! target can hold (as `validate` on the command line checks it), then lowered
//! as a reconcile would lower it.

use delta_operator_api::config::Config;
use delta_operator_api::spec::DeltaTable;
use delta_operator_api::spec::load::Loaded;
use delta_operator_api::spec::lower::{lower_table, schema_of};
use delta_operator_api::spec::validate::{functions_the_lake_lacks, names_needing_column_mapping};

use super::{Verdict, validated};
use crate::depends::{Claims, Lookup, table_inputs};

pub(super) fn check(
    t: Loaded<DeltaTable>,
    ns: &str,
    cached: &dyn Lookup,
    config: &Config,
) -> Verdict {
    let label = t.label();
    let m = table_inputs(cached, t, Claims::Validate);
    let warnings = validated(&m, &label, ns)?;
    // what `plan` refuses on the lake (`NameNeedsColumnMapping`, and functions the
    // lake's engine lacks), as `validate` refuses it
    let unmappable: Vec<_> = names_needing_column_mapping(&m, |t| config.cannot_map_names(t))
        .into_iter()
        .chain(functions_the_lake_lacks(&m, |t| config.is_lake(t)))
        .filter(|e| e.resource.as_deref() == Some(label.as_str()))
        .collect();
    if !unmappable.is_empty() {
        return Err(unmappable);
    }
    if let Some(t) = m.tables.last()
        && schema_of(&m, t).is_some()
    {
        lower_table(&m, t)?;
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use delta_operator_api::config::Config;
    use delta_operator_api::spec::load::{Manifests, load_value};
    use delta_operator_api::spec::validate::{
        functions_the_lake_lacks, names_needing_column_mapping, validate,
    };
    use serde_json::Value;

    #[test]
    fn a_typo_is_denied_with_the_text_validate_prints() {
        let r = response(
            &review("u-2", "CREATE", table("strin"), None),
            &cached_schema(),
        );
        assert_eq!(r["uid"], "u-2");
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        // the same error through the CLI's loader, printed as `validate` prints it
        let text = serde_saphyr::to_string(&table("strin")).unwrap();
        let mut m = cached_schema();
        let mut errors = vec![];
        delta_operator_api::spec::load::load_str("orders.yaml", &text, &mut m, &mut errors);
        errors.extend(validate(&m));
        let printed = errors[0].to_string();
        assert!(printed.starts_with("orders.yaml: "), "{printed}");
        assert_eq!(msg, printed.trim_start_matches("orders.yaml: "), "{r}");
        assert!(
            msg.contains("spec.columns[1].type") && msg.contains("fix:"),
            "{msg}"
        );
    }

    #[test]
    fn a_table_before_its_schema_is_allowed_with_a_warning() {
        let r = response(
            &review("u-3", "CREATE", table("int"), None),
            &Manifests::default(),
        );
        assert_eq!(r["allowed"], true, "{r}");
        let w = r["warnings"][0].as_str().unwrap();
        assert!(
            w.contains("spec.schemaRef") && w.contains("in namespace shop yet"),
            "{w}"
        );
    }

    /// A DeltaTable in shop/sales named `name` (declaring `table`), columns id and
    /// ref_id, with a foreign key (ref_id) -> `refs`(`col`) for each of `fks`.
    fn fk_table(name: &str, table: &str, fks: &[(&str, &str)]) -> Value {
        // every table keyed by id: a foreign key references its parent's primary key
        let key = serde_json::json!({"primaryKey": {"columns": ["id"]}});
        let constraints: Vec<Value> = std::iter::once(key)
            .chain(fks.iter().map(|(refs, col)| {
                serde_json::json!({"foreignKey": {"columns": ["ref_id"], "references": refs,
                    "referencedColumns": [col]}})
            }))
            .collect();
        serde_json::json!({
            "apiVersion": "delta-operator.io/v1alpha1", "kind": "DeltaTable",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"schemaRef": "sales", "name": table, "columns": [
                {"name": "id", "type": "bigint", "nullable": false}, {"name": "ref_id", "type": "bigint"},
            ], "constraints": constraints}
        })
    }

    /// The schema and `tables` cached, after 300 unrelated tables.
    fn cached_with(tables: &[Value]) -> Manifests {
        let mut m = cached_schema();
        let mut errors = vec![];
        let filler =
            (0..300).map(|i| fk_table(&format!("filler-{i}"), &format!("filler_{i}"), &[]));
        for t in filler.chain(tables.iter().cloned()) {
            load_value("cluster", t, &mut m, &mut errors);
        }
        assert!(errors.is_empty(), "{errors:?}");
        m
    }

    fn refusal_of(object: Value, cached: &Manifests) -> Option<String> {
        let r = response(&review("u-fk", "CREATE", object, None), cached);
        (r["allowed"] == false).then(|| r["status"]["message"].as_str().unwrap().to_string())
    }

    // Only a table's duplicates and foreign-key ancestors are validated with it (not the
    // whole namespace): what they can refuse must still be refused.
    #[test]
    fn duplicates_and_foreign_key_ancestors_among_many_cached_tables_still_count() {
        let cached = cached_with(&[
            fk_table("orders-copy", "orders", &[]),
            fk_table("parent", "parent", &[]),
            fk_table("b", "b", &[("c", "id")]),
            fk_table("c", "c", &[("a", "id")]),
        ]);
        let dup = refusal_of(fk_table("orders", "orders", &[]), &cached).expect("a duplicate");
        assert!(
            dup.contains("also declared by DeltaTable shop/orders-copy"),
            "{dup}"
        );

        assert_eq!(
            refusal_of(fk_table("child", "child", &[("parent", "id")]), &cached),
            None
        );
        let col = refusal_of(fk_table("child", "child", &[("parent", "nope")]), &cached)
            .expect("a missing referenced column");
        assert!(
            col.contains("referencedColumns[0]: 'nope' is not a column of main.sales.parent"),
            "{col}"
        );

        // a -> b -> c -> a: the cycle runs through a grandparent
        let cycle = refusal_of(fk_table("a", "a", &[("b", "id")]), &cached).expect("a cycle");
        assert!(
            cycle.contains(
                "foreign keys form a cycle: main.sales.a -> main.sales.b -> main.sales.c"
            ),
            "{cycle}"
        );
        // without the edge back, no cycle
        assert_eq!(
            refusal_of(fk_table("x", "x", &[("b", "id")]), &cached),
            None
        );
    }

    // A table whose name is another's of its schema to a reader (Cyrillic о for Latin o)
    // is refused at admission as validate refuses it, though they are not duplicates.
    #[test]
    fn a_lookalike_of_a_cached_table_name_is_denied_naming_both() {
        let cached = cached_with(&[fk_table("orders", "orders", &[])]);
        let why =
            refusal_of(fk_table("orders-2", "\u{43e}rders", &[]), &cached).expect("a lookalike");
        assert!(
            why.contains("and table 'orders'") && why.contains("look the same"),
            "{why}"
        );
        assert_eq!(
            refusal_of(fk_table("orders-3", "orders_3", &[]), &cached),
            None
        );
    }
    /// `spec` (over the base table's metadata) refused at admission with `config`, and the
    /// text `validate` on the command line prints for the same object in a file (each error
    /// after its file name), with the same targets (`names_needing_column_mapping`).
    fn admission_and_validate(spec: Value, config: &Config) -> (Option<String>, String) {
        let mut object = table("int");
        object["spec"] = spec;
        let r = response_with(
            &review("u-p", "CREATE", object.clone(), None),
            &cached_schema(),
            config,
        );
        let denied =
            (r["allowed"] == false).then(|| r["status"]["message"].as_str().unwrap().to_string());
        let text = serde_saphyr::to_string(&object).unwrap();
        let mut m = cached_schema();
        let mut errors = vec![];
        delta_operator_api::spec::load::load_str("orders.yaml", &text, &mut m, &mut errors);
        errors.extend(validate(&m));
        errors.extend(names_needing_column_mapping(&m, |t| {
            config.cannot_map_names(t)
        }));
        errors.extend(functions_the_lake_lacks(&m, |t| config.is_lake(t)));
        (denied, super::super::refusal(&errors))
    }

    fn lake_config() -> Config {
        Config::parse("targets:\n  local:\n    lake: {root: ./lake}\ndefaultTarget: local\n")
            .unwrap()
    }

    // Admission = validate for expressions (issue 26): each hostile CHECK and `using:` is
    // refused with the text `validate` prints for it, naming why.
    #[test]
    fn hostile_checks_and_usings_are_denied_with_the_text_validate_prints() {
        let columns = serde_json::json!([
            {"name": "order_id", "type": "bigint"}, {"name": "amount", "type": "int"},
        ]);
        for (expr, says) in [
            ("order_id > 0) OR (1=1", "more than one expression"),
            ("input_file_name() IS NOT NULL", "not deterministic"),
            ("count(*) > 0", "aggregate"),
            ("max(amount) > 0", "aggregate"),
        ] {
            let spec = serde_json::json!({"schemaRef": "sales", "columns": columns,
                "constraints": [{"check": {"name": "c", "expression": expr}}]});
            let (denied, validate_says) = admission_and_validate(spec, &Config::default());
            let denied = denied.unwrap_or_else(|| panic!("CHECK {expr} was admitted"));
            assert_eq!(denied, validate_says, "CHECK {expr}");
            assert!(
                denied.contains("spec.constraints[0].check.expression") && denied.contains(says),
                "CHECK {expr}: {denied}"
            );
        }
        for (using, says) in [
            ("count(*)", "aggregate"),
            ("repeat(repeat('x', 1000000), 1000000)", "multiply to"),
            ("repeat('x', 2000000000)", "at most 1000000"),
        ] {
            let spec = serde_json::json!({"schemaRef": "sales", "columns": [
                {"name": "order_id", "type": "bigint"},
                {"name": "note", "type": "string", "using": using},
            ]});
            let (denied, validate_says) = admission_and_validate(spec, &Config::default());
            let denied = denied.unwrap_or_else(|| panic!("using: {using} was admitted"));
            assert_eq!(denied, validate_says, "using: {using}");
            assert!(
                denied.contains("spec.columns[1].using") && denied.contains(says),
                "using: {using}: {denied}"
            );
        }
        // a bounded one is admitted (`character_length`: the default target is the lake,
        // which stores no CHECK calling its alias `length`)
        let spec = serde_json::json!({"schemaRef": "sales", "columns": columns,
            "constraints": [{"check": {"name": "c", "expression": "order_id > 0 AND character_length(repeat('x', 3)) = 3"}}]});
        assert_eq!(admission_and_validate(spec, &Config::default()).0, None);
    }

    // Admission = validate = plan on functions (issue 26): a CHECK or `using:` calling a
    // function the lake's engine lacks is denied for a lake target with the text `validate`
    // prints, naming the field and the function; on a Databricks target it is admitted.
    #[test]
    fn a_function_the_lake_lacks_is_denied_for_a_lake_target_as_validate_denies_it() {
        let dbx = Config::parse("targets:\n  dbx:\n    databricks: {host: https://x.cloud.databricks.com, warehouseId: abc, auth: {tokenEnv: MY_TOKEN}}\ndefaultTarget: dbx\n").unwrap();
        let check = |e: &str| {
            serde_json::json!({"schemaRef": "sales", "columns": [
                {"name": "order_id", "type": "bigint"}, {"name": "note", "type": "string"},
            ], "constraints": [{"check": {"name": "c", "expression": e}}]})
        };
        let using = serde_json::json!({"schemaRef": "sales", "columns": [
            {"name": "order_id", "type": "bigint"},
            {"name": "note", "type": "string", "using": "ucase(note)"},
        ]});
        for (spec, field, says) in [
            (
                check("day(order_id) > 0"),
                "spec.constraints[0].check.expression",
                "calls day, which the lake's engine (DataFusion in delta-rs) does not have",
            ),
            (
                check("length(note) > 0"),
                "spec.constraints[0].check.expression",
                "only under the name character_length",
            ),
            (using, "spec.columns[1].using", "calls ucase,"),
        ] {
            let (denied, validate_says) = admission_and_validate(spec.clone(), &lake_config());
            let denied = denied.unwrap_or_else(|| panic!("{spec} was admitted"));
            assert_eq!(denied, validate_says);
            assert!(denied.contains(field) && denied.contains(says), "{denied}");
            assert_eq!(admission_and_validate(spec, &dbx).0, None);
        }
    }

    // Admission = validate = plan on names (issue 26): a column name that needs column
    // mapping is refused for a table whose schema's target is the lake (which cannot turn
    // it on), naming the column and the fix; on a target that can, or with mapping on, it
    // is admitted.
    #[test]
    fn a_name_that_needs_column_mapping_is_denied_for_a_lake_target_as_validate_denies_it() {
        let spec = |properties: Value| {
            serde_json::json!({"schemaRef": "sales", "properties": properties, "columns": [
                {"name": "order id", "type": "bigint"},
                {"name": "detail", "type": "struct<a:int,`b;c`:string>"},
            ]})
        };
        let (denied, validate_says) =
            admission_and_validate(spec(serde_json::json!({})), &lake_config());
        let denied = denied.expect("a lake target cannot hold 'order id'");
        assert_eq!(denied, validate_says);
        assert!(
            denied.contains("spec.columns[0].name: 'order id' contains ' '")
                && denied.contains("'detail.b;c' contains ';'")
                && denied.contains("the target's backend (the lake) cannot turn it on")
                && denied.contains("fix: rename it"),
            "{denied}"
        );
        // the default target is Databricks, which turns mapping on for such a name
        let dbx = Config::parse(
            "targets:\n  dbx:\n    databricks: {host: https://x.cloud.databricks.com}\n  local: {lake: {root: l}}\ndefaultTarget: dbx\n",
        )
        .unwrap();
        assert_eq!(
            admission_and_validate(spec(serde_json::json!({})), &dbx).0,
            None
        );
        let mapped = serde_json::json!({"delta.columnMapping.mode": "name"});
        assert_eq!(admission_and_validate(spec(mapped), &lake_config()).0, None);
    }
}
