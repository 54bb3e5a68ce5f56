//! Which type changes Delta can apply in place (type widening) and which
//! casts keep every value exactly (so a rewrite need not be staged).

use super::types::DataType;

/// True when Delta's type widening can change a column from `from` to `to`
/// without rewriting data. Equal types are not a widening.
///
/// Nested types widen when they have the same shape (same field names,
/// nullability and comments, same null flags) and every inner type is equal
/// or widens, as Delta applies widening inside structs, arrays and maps.
pub fn can_widen_in_place(from: &DataType, to: &DataType) -> bool {
    from != to && widens_or_equal(from, to)
}

fn widens_or_equal(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return true;
    }
    match same_shape_children(from, to) {
        Some(pairs) => pairs.into_iter().all(|(f, t)| widens_or_equal(f, t)),
        None => widens_scalar(from, to),
    }
}

/// Delta's type-widening matrix for non-nested types.
fn widens_scalar(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    match (from, to) {
        (Byte, Short | Int | Long | Double) => true,
        (Short, Int | Long | Double) => true,
        (Int, Long | Double) => true,
        (Float, Double) => true,
        (Date, TimestampNtz) => true,
        // Databricks documents 10 integer digits for byte/short/int (more
        // than they need) and 20 for long.
        (Byte | Short | Int, Decimal { precision, scale }) => int_digits(*precision, *scale) >= 10,
        (Long, Decimal { precision, scale }) => int_digits(*precision, *scale) >= 20,
        // Neither the fraction nor the integer part may lose digits.
        (
            Decimal {
                precision: p,
                scale: s,
            },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s2 >= s && int_digits(*p2, *s2) >= int_digits(*p, *s),
        _ => false,
    }
}

/// Digits before the point; signed so a malformed scale > precision can't underflow.
fn int_digits(precision: u8, scale: u8) -> i32 {
    i32::from(precision) - i32::from(scale)
}

/// True when casting `from` to `to` converts every value exactly (equal
/// types included), so the change loses nothing even if it needs a rewrite.
pub fn is_lossless_cast(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return true;
    }
    match same_shape_children(from, to) {
        Some(pairs) => pairs.into_iter().all(|(f, t)| is_lossless_cast(f, t)),
        None => lossless_scalar(from, to),
    }
}

fn lossless_scalar(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    match (from, to) {
        _ if widens_scalar(from, to) => true,
        // Small integers fit in a float's 24-bit mantissa.
        (Byte | Short, Float) => true,
        // A void column holds only nulls, which convert to any type.
        (Void, _) => true,
        // Text forms of scalars read back exactly; binary has none and
        // variant is not a scalar.
        (Binary | Variant | Array { .. } | Map { .. } | Struct { .. }, String) => false,
        (_, String) => true,
        (Char { length: n } | Varchar { length: n }, Varchar { length: m }) => m >= n,
        _ => false,
    }
}

/// The pairs of inner types when `from` and `to` are the same kind of nested
/// type and differ at most in those inner types; None otherwise.
fn same_shape_children<'a>(
    from: &'a DataType,
    to: &'a DataType,
) -> Option<Vec<(&'a DataType, &'a DataType)>> {
    use DataType::*;
    match (from, to) {
        (
            Array {
                element: e1,
                contains_null: n1,
            },
            Array {
                element: e2,
                contains_null: n2,
            },
        ) if n1 == n2 => Some(vec![(&**e1, &**e2)]),
        (
            Map {
                key: k1,
                value: v1,
                value_contains_null: n1,
            },
            Map {
                key: k2,
                value: v2,
                value_contains_null: n2,
            },
        ) if n1 == n2 => Some(vec![(&**k1, &**k2), (&**v1, &**v2)]),
        (Struct { fields: f1 }, Struct { fields: f2 }) if f1.len() == f2.len() => f1
            .iter()
            .zip(f2)
            .map(|(a, b)| {
                (a.name == b.name && a.nullable == b.nullable && a.comment == b.comment)
                    .then_some((&a.data_type, &b.data_type))
            })
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::type_syntax::parse_type;

    fn t(s: &str) -> DataType {
        parse_type(s).unwrap()
    }

    #[rustfmt::skip]
    const SCALARS: &[&str] = &[
        "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(10,0)",
        "char(5)", "varchar(5)", "string", "binary", "date", "timestamp", "timestamp_ntz",
        "variant", "void",
    ];

    /// The full scalar matrix: exactly these pairs widen.
    #[test]
    fn widening_matrix() {
        let allowed = [
            ("tinyint", "smallint"),
            ("tinyint", "int"),
            ("tinyint", "bigint"),
            ("tinyint", "double"),
            ("tinyint", "decimal(10,0)"),
            ("smallint", "int"),
            ("smallint", "bigint"),
            ("smallint", "double"),
            ("smallint", "decimal(10,0)"),
            ("int", "bigint"),
            ("int", "double"),
            ("int", "decimal(10,0)"),
            ("float", "double"),
            ("date", "timestamp_ntz"),
        ];
        for from in SCALARS {
            for to in SCALARS {
                let want = allowed.contains(&(from, to));
                assert_eq!(can_widen_in_place(&t(from), &t(to)), want, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn narrowing_and_lossy_changes_are_not_widenings() {
        for (from, to) in [
            ("bigint", "int"),
            ("bigint", "double"),
            ("int", "float"),
            ("double", "float"),
            ("timestamp_ntz", "date"),
            ("date", "timestamp"),
            ("timestamp", "timestamp_ntz"),
            ("varchar(5)", "varchar(10)"),
            ("int", "string"),
        ] {
            assert!(!can_widen_in_place(&t(from), &t(to)), "{from} -> {to}");
        }
    }

    #[test]
    fn integers_to_decimal_need_enough_integer_digits() {
        for from in ["tinyint", "smallint", "int"] {
            assert!(can_widen_in_place(&t(from), &t("decimal(10,0)")), "{from}");
            assert!(can_widen_in_place(&t(from), &t("decimal(12,2)")), "{from}");
            assert!(!can_widen_in_place(&t(from), &t("decimal(9,0)")), "{from}");
            assert!(!can_widen_in_place(&t(from), &t("decimal(10,1)")), "{from}");
        }
        assert!(can_widen_in_place(&t("bigint"), &t("decimal(20,0)")));
        assert!(can_widen_in_place(&t("bigint"), &t("decimal(38,18)")));
        assert!(!can_widen_in_place(&t("bigint"), &t("decimal(19,0)")));
        assert!(!can_widen_in_place(&t("bigint"), &t("decimal(38,19)")));
    }

    #[test]
    fn decimal_to_decimal() {
        let w = |a: &str, b: &str| can_widen_in_place(&t(a), &t(b));
        assert!(w("decimal(10,2)", "decimal(12,2)"), "more integer digits");
        assert!(w("decimal(10,2)", "decimal(12,4)"), "more fraction digits");
        assert!(w("decimal(10,2)", "decimal(11,3)"));
        assert!(!w("decimal(10,2)", "decimal(10,2)"), "equal");
        assert!(
            !w("decimal(10,2)", "decimal(10,3)"),
            "loses an integer digit"
        );
        assert!(
            !w("decimal(10,2)", "decimal(12,1)"),
            "loses a fraction digit"
        );
        assert!(!w("decimal(10,2)", "decimal(9,2)"));
        assert!(!w("decimal(10,2)", "double"));
        assert!(!w("decimal(10,0)", "bigint"));
    }

    #[test]
    fn equal_types_are_not_widenings() {
        for s in SCALARS
            .iter()
            .chain(&["array<int>", "struct<a:int>", "map<string,int>"])
        {
            assert!(!can_widen_in_place(&t(s), &t(s)), "{s}");
        }
    }

    #[test]
    fn nested_types_widen_inside() {
        let w = |a: &str, b: &str| can_widen_in_place(&t(a), &t(b));
        assert!(w("array<int>", "array<bigint>"));
        assert!(w("map<int,float>", "map<bigint,float>"));
        assert!(w("map<int,float>", "map<int,double>"));
        assert!(w(
            "struct<a:int not null,b:string>",
            "struct<a:bigint not null,b:string>"
        ));
        assert!(w("array<struct<a:date>>", "array<struct<a:timestamp_ntz>>"));
        assert!(!w("array<bigint>", "array<int>"));
        assert!(!w("struct<a:int>", "struct<b:bigint>"), "renamed");
        assert!(!w("struct<a:int>", "struct<a:bigint,b:int>"), "added field");
        assert!(
            !w("struct<a:int>", "struct<a:bigint not null>"),
            "nullability changed"
        );
        assert!(
            !w("struct<a:int>", "struct<a:bigint comment 'x'>"),
            "comment changed"
        );
        assert!(
            !w("struct<a:int,b:bigint>", "struct<a:bigint,b:int>"),
            "one narrows"
        );
        let strict = DataType::Array {
            element: Box::new(DataType::Int),
            contains_null: false,
        };
        assert!(
            !can_widen_in_place(&strict, &t("array<bigint>")),
            "null flag changed"
        );
        assert!(!w("array<int>", "int"));
    }

    #[test]
    fn lossless_casts() {
        let l = |a: &str, b: &str| is_lossless_cast(&t(a), &t(b));
        for s in SCALARS {
            assert!(l(s, s), "equal {s}");
        }
        assert!(l("int", "bigint"));
        assert!(l("decimal(10,2)", "decimal(12,4)"));
        assert!(l("smallint", "float"));
        assert!(l("void", "int"));
        for s in SCALARS
            .iter()
            .filter(|s| !["binary", "variant"].contains(s))
        {
            assert!(l(s, "string"), "{s} -> string");
        }
        assert!(l("char(5)", "varchar(5)"));
        assert!(l("varchar(5)", "varchar(10)"));
        assert!(l("array<int>", "array<string>"));
        assert!(l("struct<a:varchar(3)>", "struct<a:string>"));

        assert!(!l("binary", "string"));
        assert!(!l("variant", "string"));
        assert!(!l("array<int>", "string"));
        assert!(!l("varchar(10)", "varchar(5)"));
        assert!(!l("char(5)", "char(10)"), "padding changes the value");
        assert!(!l("string", "varchar(10)"));
        assert!(!l("bigint", "double"));
        assert!(!l("int", "float"));
        assert!(!l("bigint", "int"));
        assert!(!l("double", "float"));
        assert!(!l("string", "int"));
        assert!(!l("int", "boolean"));
        assert!(!l("decimal(10,2)", "decimal(10,1)"));
        assert!(!l("struct<a:int>", "struct<b:int>"));
    }
}
