//! How a rewrite builds each column from the live row: the conversions the
//! operator writes itself, and where it refuses to invent one.
//!
//! - the same shape: a copy;
//! - scalars (and arrays or maps of scalars): `CAST`;
//! - struct → struct: `named_struct` rebuilt by field NAME, never by position
//!   (a new nullable field is NULL; a live field the spec left out is dropped
//!   and named);
//! - array of structs → array of structs: `transform` rebuilding each element
//!   by name;
//! - anything else (a struct becoming an array, a map whose shape moved, an
//!   array of arrays of structs): no conversion, the spec must say `using:`.

use super::diff::same_shape;
use super::rules::is_castable_scalar;
use super::steps::{Projection, Source};
use crate::model::{DataType, StructField};

/// Why no conversion is written automatically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoConversion {
    /// The dotted path of the value that cannot be converted.
    pub path: String,
    pub why: String,
}

fn kind(t: &DataType) -> &'static str {
    match t {
        DataType::Struct { .. } => "a struct",
        DataType::Array { .. } => "an array",
        DataType::Map { .. } => "a map",
        _ => "a scalar",
    }
}

/// How the live value `from` (of type `have`, at dotted `path`) becomes a
/// value of type `want`. Live nested fields the target leaves out are pushed
/// to `drops` as dotted paths: their data is lost.
pub fn conversion(
    path: &str,
    from: &str,
    have: &DataType,
    want: &DataType,
    drops: &mut Vec<String>,
) -> Result<Source, NoConversion> {
    if same_shape(have, want) {
        return Ok(Source::Copy {
            from: from.to_string(),
        });
    }
    let no = |why: String| {
        Err(NoConversion {
            path: path.to_string(),
            why,
        })
    };
    match (have, want) {
        (DataType::Struct { fields: h }, DataType::Struct { fields: w }) => {
            let fields = struct_fields(path, h, w, drops)?;
            Ok(Source::Struct {
                from: from.to_string(),
                fields,
            })
        }
        (DataType::Array { element: e1, .. }, DataType::Array { element: e2, .. }) => {
            match (&**e1, &**e2) {
                (DataType::Struct { fields: h }, DataType::Struct { fields: w }) => {
                    let fields = struct_fields(&format!("{path}[]"), h, w, drops)?;
                    Ok(Source::Transform {
                        from: from.to_string(),
                        fields,
                    })
                }
                _ => match conversion(&format!("{path}[]"), "element", e1, e2, drops)? {
                    Source::Copy { .. } | Source::Cast { .. } => Ok(Source::Cast {
                        from: from.to_string(),
                        from_type: have.clone(),
                    }),
                    _ => no(format!(
                        "{} of {} cannot become {} of {} automatically",
                        kind(have),
                        kind(e1),
                        kind(want),
                        kind(e2)
                    )),
                },
            }
        }
        (
            DataType::Map {
                key: k1, value: v1, ..
            },
            DataType::Map {
                key: k2, value: v2, ..
            },
        ) => {
            let mut ignored = Vec::new();
            let k = conversion(&format!("{path}.key"), "key", k1, k2, &mut ignored);
            let v = conversion(&format!("{path}.value"), "value", v1, v2, &mut ignored);
            match (k, v) {
                (
                    Ok(Source::Copy { .. } | Source::Cast { .. }),
                    Ok(Source::Copy { .. } | Source::Cast { .. }),
                ) if !k1.is_nested() && !v1.is_nested() => Ok(Source::Cast {
                    from: from.to_string(),
                    from_type: have.clone(),
                }),
                _ => no(format!("the shape of the map moved ({have} → {want})")),
            }
        }
        (h, w)
            if is_castable_scalar(w) && (is_castable_scalar(h) || matches!(h, DataType::Void)) =>
        {
            Ok(Source::Cast {
                from: from.to_string(),
                from_type: have.clone(),
            })
        }
        _ => no(format!(
            "{} ({have}) cannot become {} ({want}) automatically",
            kind(have),
            kind(want)
        )),
    }
}

/// The target struct's fields, each from the live field of the same name.
fn struct_fields(
    path: &str,
    have: &[StructField],
    want: &[StructField],
    drops: &mut Vec<String>,
) -> Result<Vec<Projection>, NoConversion> {
    let mut out = Vec::with_capacity(want.len());
    for w in want {
        let at = format!("{path}.{}", w.name);
        let source = match have.iter().find(|h| h.name.eq_ignore_ascii_case(&w.name)) {
            Some(h) => conversion(&at, &h.name, &h.data_type, &w.data_type, drops)?,
            None if w.nullable => Source::Null,
            None => {
                return Err(NoConversion {
                    path: at,
                    why: "a new NOT NULL field has no value in existing rows".into(),
                });
            }
        };
        out.push(Projection {
            field: w.clone(),
            source,
        });
    }
    for h in have {
        if !want.iter().any(|w| w.name.eq_ignore_ascii_case(&h.name)) {
            drops.push(format!("{path}.{}", h.name));
        }
    }
    Ok(out)
}
