//! Conversion of one Arrow array to its target type: casts (strict or safe),
//! structs rebuilt by field name, arrays of structs element by element; and the
//! empty values Delta cannot keep in a partition column.

use std::sync::Arc;

use deltalake::arrow::array::{
    Array, ArrayRef, AsArray, LargeListArray, ListArray, StructArray, new_null_array,
};
use deltalake::arrow::compute::{CastOptions, cast_with_options};
use deltalake::arrow::datatypes::{DataType as ArrowType, Field};

use delta_operator_core::plan::steps::Source;

/// Converts one input array (the value a projection reads) to the target type.
pub(super) fn convert(
    input: &ArrayRef,
    source: &Source,
    to: &ArrowType,
    opts: &CastOptions,
) -> Result<ArrayRef, String> {
    match source {
        Source::Null => Ok(new_null_array(to, input.len())),
        Source::Copy { .. } | Source::Cast { .. } | Source::Using { .. } => {
            if input.data_type() == to {
                Ok(input.clone())
            } else {
                cast_with_options(input, to, opts).map_err(|e| e.to_string())
            }
        }
        Source::Struct { fields, .. } => {
            let s = input
                .as_struct_opt()
                .ok_or_else(|| format!("expected a struct, read {}", input.data_type()))?;
            let ArrowType::Struct(target) = to else {
                return Err(format!("expected a struct target, got {to}"));
            };
            let mut children = Vec::with_capacity(fields.len());
            for (p, tf) in fields.iter().zip(target.iter()) {
                let child = match p.source.from() {
                    None => new_null_array(tf.data_type(), s.len()),
                    Some(name) => {
                        // by NAME, never by position
                        let idx = s
                            .fields()
                            .iter()
                            .position(|f| f.name().eq_ignore_ascii_case(name))
                            .ok_or_else(|| format!("no field {name} in the live struct"))?;
                        convert(s.column(idx), &p.source, tf.data_type(), opts)
                            .map_err(|e| format!("{}: {e}", p.field.name))?
                    }
                };
                children.push(child);
            }
            Ok(Arc::new(
                StructArray::try_new(target.clone(), children, s.nulls().cloned())
                    .map_err(|e| e.to_string())?,
            ))
        }
        Source::Transform { fields, .. } => {
            let element = Source::Struct {
                from: String::new(),
                fields: fields.clone(),
            };
            match (input.data_type(), to) {
                (ArrowType::List(_), ArrowType::List(tf)) => {
                    let l = input.as_list::<i32>();
                    let values = convert(l.values(), &element, tf.data_type(), opts)?;
                    Ok(Arc::new(
                        ListArray::try_new(
                            tf.clone(),
                            l.offsets().clone(),
                            values,
                            l.nulls().cloned(),
                        )
                        .map_err(|e| e.to_string())?,
                    ))
                }
                (ArrowType::LargeList(_), ArrowType::LargeList(tf)) => {
                    let l = input.as_list::<i64>();
                    let values = convert(l.values(), &element, tf.data_type(), opts)?;
                    Ok(Arc::new(
                        LargeListArray::try_new(
                            tf.clone(),
                            l.offsets().clone(),
                            values,
                            l.nulls().cloned(),
                        )
                        .map_err(|e| e.to_string())?,
                    ))
                }
                (ArrowType::List(_), ArrowType::LargeList(_))
                | (ArrowType::LargeList(_), ArrowType::List(_)) => {
                    // the reader and the writer disagree on offsets: convert, then cast the list
                    let same_kind = match input.data_type() {
                        ArrowType::List(_) => ArrowType::List(Arc::new(Field::new(
                            "element",
                            list_element(to).clone(),
                            true,
                        ))),
                        _ => ArrowType::LargeList(Arc::new(Field::new(
                            "element",
                            list_element(to).clone(),
                            true,
                        ))),
                    };
                    let mid = convert(input, source, &same_kind, opts)?;
                    cast_with_options(&mid, to, opts).map_err(|e| e.to_string())
                }
                (have, _) => Err(format!("expected an array, read {have}")),
            }
        }
    }
}

/// Empty strings (or empty binary values) in an array: what Delta cannot keep in
/// a partition column. NULLs are not counted.
pub(super) fn empty_values(a: &ArrayRef) -> usize {
    match a.data_type() {
        ArrowType::Utf8 => a
            .as_string::<i32>()
            .iter()
            .filter(|v| *v == Some(""))
            .count(),
        ArrowType::LargeUtf8 => a
            .as_string::<i64>()
            .iter()
            .filter(|v| *v == Some(""))
            .count(),
        ArrowType::Utf8View => a.as_string_view().iter().filter(|v| *v == Some("")).count(),
        ArrowType::Binary => a
            .as_binary::<i32>()
            .iter()
            .filter(|v| v.is_some_and(<[u8]>::is_empty))
            .count(),
        ArrowType::LargeBinary => a
            .as_binary::<i64>()
            .iter()
            .filter(|v| v.is_some_and(<[u8]>::is_empty))
            .count(),
        ArrowType::BinaryView => a
            .as_binary_view()
            .iter()
            .filter(|v| v.is_some_and(<[u8]>::is_empty))
            .count(),
        _ => 0,
    }
}

fn list_element(t: &ArrowType) -> &ArrowType {
    match t {
        ArrowType::List(f) | ArrowType::LargeList(f) => f.data_type(),
        other => other,
    }
}
