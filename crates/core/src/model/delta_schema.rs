//! Our column model ↔ the Delta protocol's schema JSON (`schemaString`), the
//! published format every Delta reader shares. Converting through it keeps us
//! independent of delta-kernel's Rust API churn.

use serde_json::{Map, Value, json};

use super::{DataType, ObservedColumn, StructField};

/// Spark and Databricks keep a column comment under this field-metadata key.
pub const COMMENT_KEY: &str = "comment";
/// Spark keeps char/varchar as string plus this key.
pub const CHAR_VARCHAR_KEY: &str = "__CHAR_VARCHAR_TYPE_STRING";
pub const GENERATION_KEY: &str = "delta.generationExpression";

pub fn type_to_json(t: &DataType) -> Value {
    match t {
        DataType::Boolean => json!("boolean"),
        DataType::Byte => json!("byte"),
        DataType::Short => json!("short"),
        DataType::Int => json!("integer"),
        DataType::Long => json!("long"),
        DataType::Float => json!("float"),
        DataType::Double => json!("double"),
        DataType::Decimal { precision, scale } => json!(format!("decimal({precision},{scale})")),
        DataType::Char { .. } | DataType::Varchar { .. } | DataType::String => json!("string"),
        DataType::Binary => json!("binary"),
        DataType::Date => json!("date"),
        DataType::Timestamp => json!("timestamp"),
        DataType::TimestampNtz => json!("timestamp_ntz"),
        DataType::Variant => json!("variant"),
        DataType::Void => json!("void"),
        DataType::Array {
            element,
            contains_null,
        } => {
            json!({"type": "array", "elementType": type_to_json(element), "containsNull": contains_null})
        }
        DataType::Map {
            key,
            value,
            value_contains_null,
        } => json!({
            "type": "map", "keyType": type_to_json(key), "valueType": type_to_json(value), "valueContainsNull": value_contains_null
        }),
        DataType::Struct { fields } => {
            json!({"type": "struct", "fields": fields.iter().map(|f| field_to_json(f, None)).collect::<Vec<_>>()})
        }
    }
}

/// A field with its comment, char/varchar marker and generation expression.
pub fn field_to_json(f: &StructField, generated: Option<&str>) -> Value {
    let mut md = Map::new();
    if let Some(c) = &f.comment {
        md.insert(COMMENT_KEY.into(), json!(c));
    }
    match f.data_type {
        DataType::Char { length } => {
            md.insert(CHAR_VARCHAR_KEY.into(), json!(format!("char({length})")));
        }
        DataType::Varchar { length } => {
            md.insert(CHAR_VARCHAR_KEY.into(), json!(format!("varchar({length})")));
        }
        _ => {}
    }
    if let Some(g) = generated {
        md.insert(GENERATION_KEY.into(), json!(g));
    }
    json!({"name": f.name, "type": type_to_json(&f.data_type), "nullable": f.nullable, "metadata": md})
}

pub fn struct_to_json(fields: &[(StructField, Option<String>)]) -> Value {
    json!({"type": "struct", "fields": fields.iter().map(|(f, g)| field_to_json(f, g.as_deref())).collect::<Vec<_>>()})
}

#[derive(Debug, thiserror::Error)]
#[error("unreadable Delta schema: {0}")]
pub struct SchemaError(String);

pub fn type_from_json(v: &Value, metadata: Option<&Value>) -> Result<DataType, SchemaError> {
    if let Some(s) = v.as_str() {
        if s == "string"
            && let Some(cv) = metadata
                .and_then(|m| m.get(CHAR_VARCHAR_KEY))
                .and_then(Value::as_str)
        {
            return crate::model::type_syntax::parse_type(cv)
                .map_err(|e| SchemaError(e.to_string()));
        }
        return Ok(match s {
            "boolean" => DataType::Boolean,
            "byte" => DataType::Byte,
            "short" => DataType::Short,
            "integer" => DataType::Int,
            "long" => DataType::Long,
            "float" => DataType::Float,
            "double" => DataType::Double,
            "string" => DataType::String,
            "binary" => DataType::Binary,
            "date" => DataType::Date,
            "timestamp" => DataType::Timestamp,
            "timestamp_ntz" => DataType::TimestampNtz,
            "variant" => DataType::Variant,
            "void" => DataType::Void,
            d if d.starts_with("decimal") => {
                crate::model::type_syntax::parse_type(d).map_err(|e| SchemaError(e.to_string()))?
            }
            other => return Err(SchemaError(format!("unknown type '{other}'"))),
        });
    }
    match v.get("type").and_then(Value::as_str) {
        Some("array") => Ok(DataType::Array {
            element: Box::new(type_from_json(&v["elementType"], None)?),
            contains_null: v["containsNull"].as_bool().unwrap_or(true),
        }),
        Some("map") => Ok(DataType::Map {
            key: Box::new(type_from_json(&v["keyType"], None)?),
            value: Box::new(type_from_json(&v["valueType"], None)?),
            value_contains_null: v["valueContainsNull"].as_bool().unwrap_or(true),
        }),
        Some("struct") => Ok(DataType::Struct {
            fields: fields_from_json(v)?.into_iter().map(|(f, _)| f).collect(),
        }),
        Some("variant") => Ok(DataType::Variant),
        _ => Err(SchemaError(format!("unknown type {v}"))),
    }
}

/// The fields of a struct, each with its generation expression.
pub fn fields_from_json(v: &Value) -> Result<Vec<(StructField, Option<String>)>, SchemaError> {
    let fields = v
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| SchemaError("a struct without fields".into()))?;
    fields
        .iter()
        .map(|f| {
            let md = f.get("metadata");
            let field = StructField {
                name: f["name"]
                    .as_str()
                    .ok_or_else(|| SchemaError("a field without a name".into()))?
                    .to_string(),
                data_type: type_from_json(&f["type"], md)?,
                nullable: f["nullable"].as_bool().unwrap_or(true),
                comment: md
                    .and_then(|m| m.get(COMMENT_KEY))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            };
            let generated = md
                .and_then(|m| m.get(GENERATION_KEY))
                .and_then(Value::as_str)
                .map(str::to_string);
            Ok((field, generated))
        })
        .collect()
}

/// The table's columns as our observed model.
pub fn columns_from_json(schema: &Value) -> Result<Vec<ObservedColumn>, SchemaError> {
    Ok(fields_from_json(schema)?
        .into_iter()
        .map(|(f, generated)| ObservedColumn {
            comment: f.comment,
            generated,
            ..ObservedColumn::new(&f.name, f.data_type, f.nullable)
        })
        .collect())
}
