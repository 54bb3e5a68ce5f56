//! Checks a manifest against the CRD's own OpenAPI schema before it is
//! deserialized, so that unknown keys, wrong types and bad enum values are
//! reported with their exact path (what the API server would refuse, offline).

use serde_json::Value;

use super::error::SpecError;
use delta_operator_core::model::suggest::{self, edit_distance};

/// Every problem in `value` against `schema`, `path` being where `value` sits.
pub fn check(value: &Value, schema: &Value, path: &str, out: &mut Vec<SpecError>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && schema.get("type").is_none()
    {
        return;
    }
    if value.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            out.push(SpecError::new(
                path,
                "is null",
                "give it a value, or remove the key",
            ));
        }
        return;
    }
    let ty = schema.get("type").and_then(Value::as_str);
    let ok = match ty {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        _ => true,
    };
    if !ok {
        let fix = match ty {
            Some("string") if value.is_boolean() => "quote the value: YAML reads unquoted y, n, yes, no, on, off, true and false as booleans".to_string(),
            Some("string") if value.is_array() || value.is_object() => "write a single string, not a list or a mapping".to_string(),
            Some("string") => "quote the value".to_string(),
            Some(t) => format!("write a{} {t}", if t.starts_with(['a', 'e', 'i', 'o']) { "n" } else { "" }),
            None => String::new(),
        };
        out.push(SpecError::new(
            path,
            format!("expected {}, found {}", ty.unwrap_or("?"), json_kind(value)),
            fix,
        ));
        return;
    }
    if let (Some(allowed), Some(s)) = (schema.get("enum").and_then(Value::as_array), value.as_str())
        && !allowed.iter().any(|a| a.as_str() == Some(s))
    {
        let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        out.push(SpecError::new(
            path,
            format!("'{s}' is not one of {}", names.join(", ")),
            suggest(s, &names),
        ));
    }
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            for (key, v) in map {
                let child = format!("{path}.{key}");
                if let Some(s) = props.and_then(|p| p.get(key)) {
                    check(v, s, &child, out);
                } else if let Some(s) = additional.filter(|a| a.is_object()) {
                    check(v, s, &child, out);
                } else if let Some(props) = props {
                    let known: Vec<&str> = props.keys().map(String::as_str).collect();
                    let fix = match nearest(key, &known) {
                        Some(n) => format!("did you mean '{n}'?"),
                        None => format!("remove it; known keys here: {}", known.join(", ")),
                    };
                    out.push(SpecError::new(child, format!("unknown key '{key}'"), fix));
                }
            }
            for req in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(r) = req.as_str()
                    && !map.contains_key(r)
                {
                    out.push(SpecError::new(
                        format!("{path}.{r}"),
                        "is required",
                        format!("add '{r}'"),
                    ));
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check(v, s, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The closest of `candidates` to `word`, when it is close enough to be a typo:
/// case-insensitive, within 2 edits (a quarter of a long candidate's length),
/// ties going to the alphabetically first (hence the sort: the core's helper
/// keeps the first of equals).
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let w = word.to_lowercase();
    let mut sorted = candidates.to_vec();
    sorted.sort_unstable();
    suggest::nearest(
        sorted,
        |c| edit_distance(&w, &c.to_lowercase()),
        |c| 2.max(c.len() / 4),
    )
}

fn suggest(word: &str, candidates: &[&str]) -> String {
    match nearest(word, candidates) {
        Some(n) => format!("did you mean '{n}'?"),
        None => format!("use one of {}", candidates.join(", ")),
    }
}
