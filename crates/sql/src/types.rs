//! Types as statements write them: in DDL (with NOT NULL and comments) and
//! as a CAST target (without).

use delta_operator_core::model::DataType;

use crate::quote::{ident, literal};

/// A type in DDL: like the model's notation, but every struct field name in
/// backticks and comments escaped as literals.
pub fn sql_type(t: &DataType) -> String {
    match t {
        DataType::Array { element, .. } => format!("array<{}>", sql_type(element)),
        DataType::Map { key, value, .. } => format!("map<{}, {}>", sql_type(key), sql_type(value)),
        DataType::Struct { fields } => {
            let fs: Vec<String> = fields
                .iter()
                .map(|f| {
                    let mut s = format!("{}: {}", ident(&f.name), sql_type(&f.data_type));
                    if !f.nullable {
                        s.push_str(" NOT NULL");
                    }
                    if let Some(c) = &f.comment {
                        s.push_str(&format!(" COMMENT {}", literal(c)));
                    }
                    s
                })
                .collect();
            format!("struct<{}>", fs.join(", "))
        }
        // scalars print as their keyword (decimal(p,s), varchar(n), ...)
        other => other.to_string(),
    }
}

/// A type as CAST writes it: struct fields by backticked name, no NOT NULL
/// or comments (a cast target carries neither).
pub fn cast_type(t: &DataType) -> String {
    match t {
        DataType::Array { element, .. } => format!("array<{}>", cast_type(element)),
        DataType::Map { key, value, .. } => {
            format!("map<{}, {}>", cast_type(key), cast_type(value))
        }
        DataType::Struct { fields } => {
            format!(
                "struct<{}>",
                fields
                    .iter()
                    .map(|f| format!("{}: {}", ident(&f.name), cast_type(&f.data_type)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        other => other.to_string(),
    }
}
