//! Delta data types: the one representation every layer shares.
//!
//! String notation follows Spark/Databricks DDL (`decimal(18,2)`,
//! `array<struct<a:int not null comment 'x'>>`, `map<string,bigint>`); the
//! printer emits the canonical lower-case form that the parser reads back.

use serde::{Deserialize, Serialize};

/// A Delta column type. Aliases (`long`, `integer`, `dec`, ...) are folded
/// into these canonical variants by the parser.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DataType {
    Boolean,
    /// tinyint
    Byte,
    /// smallint
    Short,
    /// int
    Int,
    /// bigint
    Long,
    Float,
    Double,
    Decimal {
        precision: u8,
        scale: u8,
    },
    Char {
        length: u32,
    },
    Varchar {
        length: u32,
    },
    String,
    Binary,
    Date,
    Timestamp,
    TimestampNtz,
    Variant,
    Void,
    Array {
        element: Box<DataType>,
        contains_null: bool,
    },
    Map {
        key: Box<DataType>,
        value: Box<DataType>,
        value_contains_null: bool,
    },
    Struct {
        fields: Vec<StructField>,
    },
}

/// A field of a struct type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StructField {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: DataType,
    pub nullable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl DataType {
    /// True for struct, array and map.
    pub fn is_nested(&self) -> bool {
        matches!(
            self,
            DataType::Struct { .. } | DataType::Array { .. } | DataType::Map { .. }
        )
    }

    /// The fields when this is a struct.
    pub fn struct_fields(&self) -> Option<&[StructField]> {
        match self {
            DataType::Struct { fields } => Some(fields),
            _ => None,
        }
    }

    /// The kind's name, as used in messages ("struct", "array", "int", ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            DataType::Boolean => "boolean",
            DataType::Byte => "tinyint",
            DataType::Short => "smallint",
            DataType::Int => "int",
            DataType::Long => "bigint",
            DataType::Float => "float",
            DataType::Double => "double",
            DataType::Decimal { .. } => "decimal",
            DataType::Char { .. } => "char",
            DataType::Varchar { .. } => "varchar",
            DataType::String => "string",
            DataType::Binary => "binary",
            DataType::Date => "date",
            DataType::Timestamp => "timestamp",
            DataType::TimestampNtz => "timestamp_ntz",
            DataType::Variant => "variant",
            DataType::Void => "void",
            DataType::Array { .. } => "array",
            DataType::Map { .. } => "map",
            DataType::Struct { .. } => "struct",
        }
    }
}
