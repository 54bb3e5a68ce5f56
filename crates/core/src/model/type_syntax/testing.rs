//! Builders and generators shared by the tests of `ddl`, `nested` and the
//! limits.

use proptest::prelude::*;

use super::{TypeError, parse_type};
use crate::model::types::{DataType, StructField};

pub(super) fn p(s: &str) -> DataType {
    parse_type(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

pub(super) fn err(s: &str) -> TypeError {
    parse_type(s).expect_err(s)
}

pub(super) fn dec(precision: u8, scale: u8) -> DataType {
    DataType::Decimal { precision, scale }
}

pub(super) fn array(element: DataType) -> DataType {
    DataType::Array {
        element: Box::new(element),
        contains_null: true,
    }
}

pub(super) fn map(key: DataType, value: DataType) -> DataType {
    DataType::Map {
        key: Box::new(key),
        value: Box::new(value),
        value_contains_null: true,
    }
}

pub(super) fn field(name: &str, data_type: DataType) -> StructField {
    StructField {
        name: name.into(),
        data_type,
        nullable: true,
        comment: None,
    }
}

pub(super) fn strukt(fields: Vec<StructField>) -> DataType {
    DataType::Struct { fields }
}

pub(super) fn arb_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z_][A-Za-z0-9_]{0,6}",
        "[`'\" \\\\:,<>()\n${}a-z0-9é日]{0,6}",
        Just("not".to_string()),
        Just("Comment".to_string()),
        any::<String>(),
    ]
}

pub(super) fn arb_comment() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![
        "[`'\"\\\\\n\r\t ${}a-zé✓]{0,8}",
        any::<String>()
    ])
}

/// Any type up to depth 3; null flags of arrays/maps are arbitrary only
/// when `any_flags` (the string notation cannot carry them).
pub(super) fn arb_type(any_flags: bool) -> impl Strategy<Value = DataType> {
    let flag = any::<bool>().prop_map(move |b| b || !any_flags);
    let leaf = prop_oneof![
        Just(DataType::Boolean),
        Just(DataType::Byte),
        Just(DataType::Short),
        Just(DataType::Int),
        Just(DataType::Long),
        Just(DataType::Float),
        Just(DataType::Double),
        (1u8..=38)
            .prop_flat_map(|p| (Just(p), 0..=p))
            .prop_map(|(p, s)| dec(p, s)),
        (1u32..).prop_map(|length| DataType::Char { length }),
        (1u32..).prop_map(|length| DataType::Varchar { length }),
        Just(DataType::String),
        Just(DataType::Binary),
        Just(DataType::Date),
        Just(DataType::Timestamp),
        Just(DataType::TimestampNtz),
        Just(DataType::Variant),
        Just(DataType::Void),
    ];
    leaf.prop_recursive(3, 32, 4, move |inner| {
        prop_oneof![
            (inner.clone(), flag.clone()).prop_map(|(e, contains_null)| DataType::Array {
                element: Box::new(e),
                contains_null
            }),
            (inner.clone(), inner.clone(), flag.clone()).prop_map(|(k, v, value_contains_null)| {
                DataType::Map {
                    key: Box::new(k),
                    value: Box::new(v),
                    value_contains_null,
                }
            }),
            proptest::collection::vec((arb_name(), inner, any::<bool>(), arb_comment()), 0..4)
                .prop_map(|fs| {
                    let fields = fs
                        .into_iter()
                        .map(|(name, data_type, nullable, comment)| StructField {
                            name,
                            data_type,
                            nullable,
                            comment,
                        })
                        .collect();
                    DataType::Struct { fields }
                }),
        ]
    })
}
