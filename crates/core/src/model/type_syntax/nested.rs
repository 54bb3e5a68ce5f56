//! The nested YAML/JSON notation of types: a struct's fields as a YAML list
//! instead of one long DDL string, and the only way to declare
//! `containsNull: false` or `valueContainsNull: false`, which the DDL string
//! cannot carry. Read only: the operator itself writes DDL strings.

use serde_json::{Map, Value};

use super::ddl::parse_at_depth;
use super::{MAX_TYPE_NESTING, TypeError, too_deep};
use crate::model::types::{DataType, StructField};

/// Read a type in the nested notation: a string in DDL notation, or
/// `{"struct": [fields]}`, `{"array": type}`,
/// `{"array": {"element": type, "containsNull": bool}}` or
/// `{"map": {"key": type, "value": type, "valueContainsNull": bool}}`.
pub fn type_from_value(v: &Value) -> Result<DataType, TypeError> {
    value_at(v, 0)
}

/// A type in the nested notation `depth` containers deep; a type string
/// inside it is parsed with the depth already used.
fn value_at(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    if depth > MAX_TYPE_NESTING {
        return Err(too_deep(0));
    }
    let obj = match v {
        Value::String(s) => return parse_at_depth(s, depth),
        Value::Object(obj) => obj,
        other => {
            let msg = format!(
                "expected a type string or object, found {}",
                json_kind(other)
            );
            return Err(TypeError::new(0, msg));
        }
    };
    let mut entries = obj.iter();
    let (Some((kind, inner)), None) = (entries.next(), entries.next()) else {
        let keys = obj
            .keys()
            .map(|k| format!("'{k}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!(
            "a nested type needs exactly one key of 'struct', 'array' or 'map', found [{keys}]"
        );
        return Err(TypeError::new(0, msg));
    };
    match kind.as_str() {
        "struct" => struct_from_value(inner, depth + 1),
        "array" => array_from_value(inner, depth + 1).map_err(|e| e.within("array")),
        "map" => map_from_value(inner, depth + 1).map_err(|e| e.within("map")),
        other => Err(TypeError::new(
            0,
            format!("unknown key '{other}' in a nested type; expected 'struct', 'array' or 'map'"),
        )),
    }
}

fn struct_from_value(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    let Value::Array(items) = v else {
        return Err(TypeError::new(
            0,
            format!("struct: expected a list of fields, found {}", json_kind(v)),
        ));
    };
    let fields = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            field_from_value(item, depth).map_err(|e| e.within(&format!("struct field #{}", i + 1)))
        })
        .collect::<Result<_, _>>()?;
    Ok(DataType::Struct { fields })
}

fn field_from_value(v: &Value, depth: usize) -> Result<StructField, TypeError> {
    let obj = as_object(v, &["name", "type", "nullable", "comment"])?;
    let name = match obj.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(TypeError::new(
                0,
                format!("'name' must be a string, found {}", json_kind(other)),
            ));
        }
        None => return Err(TypeError::new(0, "missing 'name'")),
    };
    let in_field = |e: TypeError| e.within(&format!("field '{name}'"));
    let data_type = value_at(required(obj, "type")?, depth).map_err(in_field)?;
    let nullable = optional_bool(obj, "nullable")?.unwrap_or(true);
    let comment = match obj.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(in_field(TypeError::new(
                0,
                format!("'comment' must be a string, found {}", json_kind(other)),
            )));
        }
    };
    Ok(StructField {
        name,
        data_type,
        nullable,
        comment,
    })
}

fn array_from_value(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    // The long form is recognised by its keys; anything else is the element type.
    let long_form = matches!(v, Value::Object(o) if o.contains_key("element") || o.contains_key("containsNull"));
    if !long_form {
        let element = value_at(v, depth)?;
        return Ok(DataType::Array {
            element: Box::new(element),
            contains_null: true,
        });
    }
    let obj = as_object(v, &["element", "containsNull"])?;
    let element = value_at(required(obj, "element")?, depth).map_err(|e| e.within("element"))?;
    let contains_null = optional_bool(obj, "containsNull")?.unwrap_or(true);
    Ok(DataType::Array {
        element: Box::new(element),
        contains_null,
    })
}

fn map_from_value(v: &Value, depth: usize) -> Result<DataType, TypeError> {
    let obj = as_object(v, &["key", "value", "valueContainsNull"])?;
    let key = value_at(required(obj, "key")?, depth).map_err(|e| e.within("key"))?;
    let value = value_at(required(obj, "value")?, depth).map_err(|e| e.within("value"))?;
    let value_contains_null = optional_bool(obj, "valueContainsNull")?.unwrap_or(true);
    Ok(DataType::Map {
        key: Box::new(key),
        value: Box::new(value),
        value_contains_null,
    })
}

/// `v` as an object whose keys are all in `allowed`; unknown keys are named.
fn as_object<'v>(v: &'v Value, allowed: &[&str]) -> Result<&'v Map<String, Value>, TypeError> {
    let Value::Object(obj) = v else {
        return Err(TypeError::new(
            0,
            format!("expected an object, found {}", json_kind(v)),
        ));
    };
    let unknown: Vec<String> = obj
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| format!("'{k}'"))
        .collect();
    if !unknown.is_empty() {
        let msg = format!(
            "unknown key(s) {}; expected {}",
            unknown.join(", "),
            allowed.join(", ")
        );
        return Err(TypeError::new(0, msg));
    }
    Ok(obj)
}

fn required<'v>(obj: &'v Map<String, Value>, key: &str) -> Result<&'v Value, TypeError> {
    obj.get(key)
        .ok_or_else(|| TypeError::new(0, format!("missing '{key}'")))
}

fn optional_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, TypeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(TypeError::new(
            0,
            format!("'{key}' must be true or false, found {}", json_kind(other)),
        )),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The nested notation of `t`: the DDL string whenever that says everything
    /// (no struct inside, all null flags true), else nested objects, omitting
    /// `nullable`/`containsNull`/`valueContainsNull` when true. Test-only: nothing
    /// in the operator writes this notation (`import` writes DDL strings), but
    /// it feeds `nested_notation_round_trips`, which checks that
    /// `type_from_value` reads every type back, null flags and mixed forms included.
    fn type_to_value(t: &DataType) -> Value {
        if string_form_is_enough(t) {
            return Value::String(t.to_string());
        }
        match t {
            DataType::Struct { fields } => {
                let fields = fields
                    .iter()
                    .map(|f| {
                        let mut obj = Map::new();
                        obj.insert("name".into(), json!(f.name));
                        obj.insert("type".into(), type_to_value(&f.data_type));
                        if !f.nullable {
                            obj.insert("nullable".into(), json!(false));
                        }
                        if let Some(c) = &f.comment {
                            obj.insert("comment".into(), json!(c));
                        }
                        Value::Object(obj)
                    })
                    .collect();
                json!({ "struct": Value::Array(fields) })
            }
            DataType::Array {
                element,
                contains_null: true,
            } => json!({ "array": type_to_value(element) }),
            DataType::Array {
                element,
                contains_null: false,
            } => {
                json!({ "array": { "element": type_to_value(element), "containsNull": false } })
            }
            DataType::Map {
                key,
                value,
                value_contains_null,
            } => {
                let mut obj = Map::new();
                obj.insert("key".into(), type_to_value(key));
                obj.insert("value".into(), type_to_value(value));
                if !value_contains_null {
                    obj.insert("valueContainsNull".into(), json!(false));
                }
                json!({ "map": Value::Object(obj) })
            }
            scalar => Value::String(scalar.to_string()),
        }
    }

    fn string_form_is_enough(t: &DataType) -> bool {
        match t {
            DataType::Struct { .. } => false,
            DataType::Array {
                element,
                contains_null,
            } => *contains_null && string_form_is_enough(element),
            DataType::Map {
                key,
                value,
                value_contains_null,
            } => *value_contains_null && string_form_is_enough(key) && string_form_is_enough(value),
            _ => true,
        }
    }

    #[test]
    fn nested_notation() {
        let v = json!({"struct": [
            {"name": "id", "type": "bigint", "nullable": false, "comment": "key"},
            {"name": "tags", "type": {"array": {"element": "string", "containsNull": false}}},
            {"name": "attrs", "type": {"map": {"key": "string", "value": "array<int>", "valueContainsNull": false}}},
            {"name": "inner", "type": {"struct": [{"name": "x", "type": "decimal(5,2)"}]}},
        ]});
        let t = type_from_value(&v).unwrap();
        let want = strukt(vec![
            StructField {
                nullable: false,
                comment: Some("key".into()),
                ..field("id", DataType::Long)
            },
            field(
                "tags",
                DataType::Array {
                    element: Box::new(DataType::String),
                    contains_null: false,
                },
            ),
            field(
                "attrs",
                DataType::Map {
                    key: Box::new(DataType::String),
                    value: Box::new(array(DataType::Int)),
                    value_contains_null: false,
                },
            ),
            field("inner", strukt(vec![field("x", dec(5, 2))])),
        ]);
        assert_eq!(t, want);
        assert_eq!(type_to_value(&t), v);
        assert_eq!(type_to_value(&array(DataType::Int)), json!("array<int>"));
        assert_eq!(
            type_from_value(&json!({"array": "int"})).unwrap(),
            array(DataType::Int)
        );
        assert_eq!(
            type_from_value(&json!({"array": {"element": "int"}})).unwrap(),
            array(DataType::Int)
        );
        assert_eq!(
            type_from_value(&json!({"array": {"array": "int"}})).unwrap(),
            array(array(DataType::Int))
        );
    }

    #[test]
    fn nested_notation_errors() {
        let msg = |v: Value| type_from_value(&v).unwrap_err().to_string();
        assert!(msg(json!({"strct": []})).contains("unknown key 'strct'"));
        assert!(msg(json!({"struct": [], "array": "int"})).contains("exactly one key"));
        assert!(msg(json!({"array": {"element": "int", "nullable": true}})).contains("'nullable'"));
        assert!(
            msg(json!({"map": {"key": "int", "val": "int", "extra": 1}}))
                .contains("'val', 'extra'")
        );
        assert!(msg(json!({"map": {"key": "int"}})).contains("missing 'value'"));
        assert!(
            msg(json!({"struct": [{"name": "a", "typ": "int"}]})).contains("unknown key(s) 'typ'")
        );
        assert!(
            msg(json!({"struct": [{"name": "a", "type": "int", "nullable": "no"}]}))
                .contains("true or false")
        );
        assert!(msg(json!({"struct": {"a": "int"}})).contains("list of fields"));
        assert!(msg(json!(42)).contains("found a number"));
        let e = type_from_value(&json!({"struct": [{"name": "a", "type": {"array": "strng"}}]}))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "struct field #1: field 'a': array: unknown type 'strng'; did you mean 'string'?"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn nested_notation_round_trips(t in arb_type(true)) {
            let v = type_to_value(&t);
            prop_assert_eq!(type_from_value(&v), Ok(t), "{}", v);
        }
    }
}
