//! Table DDL: CREATE TABLE with everything that goes inline, column and
//! field definitions, enabling column mapping, and a shallow clone.

use delta_operator_core::model::property;
use std::collections::BTreeMap;

use delta_operator_core::model::names::{
    needs_column_mapping as needs_mapping, type_needs_column_mapping as type_needs_mapping,
};
use delta_operator_core::model::{
    DesiredColumn, DesiredTable, OWNER_PROPERTY, ObservedTable, StructField, TableRef,
};
use delta_operator_core::plan::change::FieldPath;

use crate::compile::alter;
use crate::quote::{Names, field_path, ident, list, literal, props};
use crate::types::sql_type;

/// The writer feature a column DEFAULT needs (Databricks spells its value `supported`).
pub const DEFAULTS_FEATURE: &str = property::FEATURE_ALLOW_COLUMN_DEFAULTS;

pub(crate) fn prop_num(live: Option<&ObservedTable>, key: &str) -> Option<u32> {
    live.and_then(|l| l.properties.get(key))
        .and_then(|v| v.parse().ok())
}

/// Column mapping by name. Databricks upgrades the protocol implicitly when
/// only the mode is set; the versions are added when the live protocol is
/// known to be older than reader 2 / writer 5 (never lowered: a table on
/// table features, reader 3 / writer 7, needs nothing more).
pub(crate) fn enable_column_mapping(
    names: &Names,
    t: &TableRef,
    live: Option<&ObservedTable>,
) -> String {
    let mut p = BTreeMap::new();
    let reader = prop_num(live, property::MIN_READER_VERSION);
    let writer = prop_num(live, property::MIN_WRITER_VERSION);
    if reader.is_some_and(|r| r < 2) {
        p.insert(property::MIN_READER_VERSION.to_string(), "2".to_string());
    }
    if writer.is_some_and(|w| w < 5) {
        p.insert(property::MIN_WRITER_VERSION.to_string(), "5".to_string());
    }
    p.insert(
        property::COLUMN_MAPPING_MODE.to_string(),
        "name".to_string(),
    );
    alter(names, t, format!("SET TBLPROPERTIES ({})", props(&p)))
}

/// `` `a`.`b` type [NOT NULL] [COMMENT '…'] `` for ADD COLUMN.
pub(crate) fn field_def(path: &FieldPath, f: &StructField) -> String {
    let mut s = format!("{} {}", field_path(path), sql_type(&f.data_type));
    if !f.nullable {
        s.push_str(" NOT NULL");
    }
    if let Some(c) = &f.comment {
        s.push_str(&format!(" COMMENT {}", literal(c)));
    }
    s
}

fn column_def(c: &DesiredColumn) -> String {
    let mut s = format!("{} {}", ident(&c.name), sql_type(&c.data_type));
    if !c.nullable {
        s.push_str(" NOT NULL");
    }
    if let Some(g) = &c.generated {
        s.push_str(&format!(" GENERATED ALWAYS AS ({g})"));
    }
    if let Some(i) = &c.identity {
        let how = if i.always { "ALWAYS" } else { "BY DEFAULT" };
        s.push_str(&format!(
            " GENERATED {how} AS IDENTITY (START WITH {} INCREMENT BY {})",
            i.start, i.increment
        ));
    }
    if let Some(d) = &c.default {
        s.push_str(&format!(" DEFAULT {d}"));
    }
    if let Some(cm) = c.comment.as_ref().filter(|cm| !cm.is_empty()) {
        s.push_str(&format!(" COMMENT {}", literal(cm)));
    }
    s
}

/// CREATE TABLE with everything Databricks takes inline: identity, generated
/// and default columns, comments, partitioning or clustering, properties
/// (with the owner marker, and the features the columns need). CHECKs, keys,
/// tags, masks, grants and the owner are their own steps (a CHECK cannot be
/// declared inside CREATE TABLE).
pub fn create_table(names: &Names, d: &DesiredTable) -> String {
    let cols: Vec<String> = d
        .columns
        .iter()
        .map(|c| format!("  {}", column_def(c)))
        .collect();
    let mut s = format!(
        "CREATE TABLE {} (\n{}\n) USING DELTA",
        names.table(&d.table),
        cols.join(",\n")
    );
    if let Some(p) = d.partitioned_by.as_ref().filter(|p| !p.is_empty()) {
        s.push_str(&format!("\nPARTITIONED BY ({})", list(p)));
    }
    if let Some(k) = d.cluster_by.as_ref().filter(|k| !k.is_empty()) {
        s.push_str(&format!("\nCLUSTER BY ({})", list(k)));
    }
    if let Some(c) = d.comment.as_ref().filter(|c| !c.is_empty()) {
        s.push_str(&format!("\nCOMMENT {}", literal(c)));
    }
    let mut p: BTreeMap<String, String> = d
        .properties
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    if d.columns.iter().any(|c| c.default.is_some()) {
        p.entry(DEFAULTS_FEATURE.into())
            .or_insert_with(|| "supported".into());
    }
    if d.columns
        .iter()
        .any(|c| needs_mapping(&c.name) || type_needs_mapping(&c.data_type))
    {
        p.entry(property::COLUMN_MAPPING_MODE.into())
            .or_insert_with(|| "name".into());
    }
    // the owner marker, and the record of the constraints it declares
    p.extend(d.marker_properties());
    s.push_str(&format!("\nTBLPROPERTIES ({})", props(&p)));
    s
}

/// A shallow clone of the table beside it. The clone copies the table's
/// properties, the owner marker included, which would make it a table of the
/// same resource without a spec: an orphan a strict schema drops. So the
/// marker is removed from the clone; it is left as an unmanaged table.
pub(crate) fn clone_table(names: &Names, t: &TableRef, name: &str) -> Vec<String> {
    let clone = names.table(&TableRef::new(&t.catalog, &t.schema, name));
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {clone} SHALLOW CLONE {}",
            names.table(t)
        ),
        format!(
            "ALTER TABLE {clone} UNSET TBLPROPERTIES IF EXISTS ({})",
            literal(OWNER_PROPERTY)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_operator_core::model::{DataType, Identity};

    fn t() -> TableRef {
        TableRef::new("main", "sales", "orders")
    }

    #[test]
    fn create_table_inline() {
        let mut id = DesiredColumn::new("id", DataType::Long, false);
        id.identity = Some(Identity {
            always: true,
            start: 1,
            increment: 1,
        });
        let mut day = DesiredColumn::new("day", DataType::Date, true);
        day.generated = Some("CAST(ts AS DATE)".into());
        let mut st = DesiredColumn::new("odd name", DataType::String, true);
        st.default = Some("'new'".into());
        st.comment = Some("it's ${x}\nok".into());
        let mut d = DesiredTable::new(t(), "ns/orders", vec![id, day, st]);
        d.cluster_by = Some(vec!["id".into()]);
        d.comment = Some("Orders ✓".into());
        d.properties
            .insert("delta.enableChangeDataFeed".into(), Some("true".into()));
        d.properties.insert("gone".into(), None);
        let s = create_table(&Names::Catalog, &d);
        assert_eq!(
            s,
            "CREATE TABLE `main`.`sales`.`orders` (\n  `id` bigint NOT NULL GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1),\n  `day` date GENERATED ALWAYS AS (CAST(ts AS DATE)),\n  `odd name` string DEFAULT 'new' COMMENT 'it\\'s $\\{x}\nok'\n) USING DELTA\nCLUSTER BY (`id`)\nCOMMENT 'Orders ✓'\nTBLPROPERTIES ('delta-operator.io/owner' = 'ns/orders', 'delta.columnMapping.mode' = 'name', 'delta.enableChangeDataFeed' = 'true', 'delta.feature.allowColumnDefaults' = 'supported')"
        );
        let mut by_default = DesiredColumn::new("n", DataType::Long, true);
        by_default.identity = Some(Identity {
            always: false,
            start: 10,
            increment: 5,
        });
        let mut d2 = DesiredTable::new(
            t(),
            "ns/o",
            vec![by_default, DesiredColumn::new("p", DataType::Date, true)],
        );
        d2.partitioned_by = Some(vec!["p".into()]);
        let s2 = create_table(&Names::Catalog, &d2);
        assert!(
            s2.contains("GENERATED BY DEFAULT AS IDENTITY (START WITH 10 INCREMENT BY 5)"),
            "{s2}"
        );
        assert!(s2.contains("\nPARTITIONED BY (`p`)\n"), "{s2}");
        assert!(!s2.contains("columnMapping"), "{s2}");
    }
}
