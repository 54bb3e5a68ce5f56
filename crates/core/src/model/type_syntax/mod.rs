//! Delta/Spark types as text, in the two notations a manifest may use, one
//! file each: the string (DDL) notation, parsed and printed, in `ddl`
//! (`decimal(18,2)`, `struct<a:int not null comment 'x'>`); the nested YAML/JSON
//! notation, read only, in `nested`
//! (`{"array": {"element": "int", "containsNull": false}}`); and in `suggest`
//! the nearest known type word for an unknown one.
//!
//! This file holds what both notations share, so a type is held to the same
//! error shape, nesting and size limits whichever way it is written. Callers
//! use the re-exports below; the submodules are private.

mod ddl;
mod nested;
mod suggest;
#[cfg(test)]
mod testing;

pub use ddl::{parse_type, quote_identifier_if_needed};
pub use nested::type_from_value;
pub use suggest::nearest_type_name;

/// A type that failed to parse. `offset` is a byte offset into the parsed
/// string (for the nested notation: into the innermost type string, else 0).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", did_you_mean(.suggestion))]
pub struct TypeError {
    pub message: String,
    pub offset: usize,
    pub suggestion: Option<String>,
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean '{s}'?"),
        None => String::new(),
    }
}

impl TypeError {
    fn new(offset: usize, message: impl Into<String>) -> Self {
        TypeError {
            message: message.into(),
            offset,
            suggestion: None,
        }
    }

    /// Prefix the message with where in a nested type the error sits.
    fn within(self, context: &str) -> Self {
        TypeError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

/// The deepest nesting of struct, array and map a type may have. Measured
/// (docs/reliability.md): delta-rs cannot open a table whose structs nest 42
/// deep (serde_json's recursion limit on the schema), pyarrow cannot read
/// maps nested 32 deep or arrays 50 deep, and Spark overflows its stack past
/// about 117 nested structs. 30 leaves room for every reader. The parsers
/// stop here instead of recursing further, so no input can exhaust the stack.
pub const MAX_TYPE_NESTING: usize = 30;

/// The longest type string read (bytes): a struct of thousands of fields fits.
pub const MAX_TYPE_BYTES: usize = 256 * 1024;

fn too_deep(offset: usize) -> TypeError {
    TypeError::new(
        offset,
        format!(
            "the type nests struct, array and map deeper than {MAX_TYPE_NESTING} levels, more than Delta readers can read back"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::testing::err;
    use super::*;
    use serde_json::json;

    #[test]
    fn nesting_is_capped_without_recursing_past_the_cap() {
        let deep = |n: usize| format!("{}int{}", "struct<a:".repeat(n), ">".repeat(n));
        assert!(parse_type(&deep(MAX_TYPE_NESTING)).is_ok());
        assert!(
            err(&deep(MAX_TYPE_NESTING + 1))
                .message
                .contains("deeper than")
        );
        // far past the cap, as a hostile manifest would: an error, not a stack overflow
        assert!(err(&deep(20_000)).message.contains("deeper than"));
        assert!(err(&deep(100_000)).message.contains("bytes long"));
        assert!(
            err(&format!(
                "{}int{}",
                "array<".repeat(30_000),
                ">".repeat(30_000)
            ))
            .message
            .contains("deeper than")
        );
        let mut v = json!("int");
        for _ in 0..MAX_TYPE_NESTING + 1 {
            v = json!({ "array": v });
        }
        assert!(
            type_from_value(&v)
                .unwrap_err()
                .message
                .contains("deeper than")
        );
        // a string inside the nested notation counts the levels around it
        let mixed = json!({ "array": deep(MAX_TYPE_NESTING) });
        assert!(
            type_from_value(&mixed)
                .unwrap_err()
                .message
                .contains("deeper than")
        );
    }
}
