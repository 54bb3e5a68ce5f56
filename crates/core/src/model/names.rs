//! Name helpers shared by validation and suggestions, and the limits every
//! name is held to.

/// Unity Catalog's limit for a name, and the file-name limit of common file
/// systems (255 bytes): the stricter of the two, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// The longest suffix the operator appends to a table's name for a table of
/// its own beside it: the shallow clone `<table>__delta_operator_clone_v<version>`
/// (a version has at most 20 digits). Staging copies are shorter.
pub const LONGEST_SUFFIX: &str = "__delta_operator_clone_v00000000000000000000";

/// A table name leaves room for that suffix.
pub const MAX_TABLE_NAME_BYTES: usize = MAX_NAME_BYTES - LONGEST_SUFFIX.len();

/// Characters Spark refuses in a column name unless column mapping is on.
pub const NEEDS_COLUMN_MAPPING: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];

/// Whether a column or field name needs column mapping.
pub fn needs_column_mapping(name: &str) -> bool {
    name.chars().any(|c| NEEDS_COLUMN_MAPPING.contains(&c))
}

/// Whether any field name inside a type needs column mapping.
pub fn type_needs_column_mapping(t: &crate::model::DataType) -> bool {
    use crate::model::DataType;
    match t {
        DataType::Struct { fields } => fields
            .iter()
            .any(|f| needs_column_mapping(&f.name) || type_needs_column_mapping(&f.data_type)),
        DataType::Array { element, .. } => type_needs_column_mapping(element),
        DataType::Map { key, value, .. } => {
            type_needs_column_mapping(key) || type_needs_column_mapping(value)
        }
        _ => false,
    }
}

/// Whether a character is invisible: it shows as nothing, or changes how
/// its neighbours show, so two names that differ by one look the same (zero
/// width space, non-joiner and joiner, direction marks and overrides, word
/// joiner, BOM, soft hyphen, variation selectors, Hangul fillers, tags:
/// Unicode's default-ignorable code points).
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
        | '\u{ffa0}' | '\u{fff0}'..='\u{fff8}' | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e0fff}')
}

/// Why a name holding an invisible character is refused (message, fix), if it holds one.
fn invisible_problem(name: &str) -> Option<(String, String)> {
    let c = name.chars().find(|c| is_invisible(*c))?;
    Some((
        format!(
            "'{}' contains the invisible character {} (it looks like a name without it)",
            printable(name),
            c.escape_unicode()
        ),
        "remove it: names may not hold zero-width, joiner, direction, BOM or soft-hyphen characters"
            .into(),
    ))
}

/// A name with control characters and other invisible ones escaped, for
/// messages and terminals (`\u{1b}` instead of a raw ESC).
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a catalog, schema or table name cannot be used (message, fix), if it
/// cannot. These names are also folders of the lake, so nothing in them may
/// step outside it or be mistaken for Delta's or the operator's own folders.
pub fn object_name_problem(name: &str, max_bytes: usize) -> Option<(String, String)> {
    let shown = printable(name);
    if name.is_empty() {
        return Some(("is empty".into(), "give it a name".into()));
    }
    if name.len() > max_bytes {
        return Some((
            format!("is {} bytes long; the limit is {max_bytes}", name.len()),
            format!("shorten it to at most {max_bytes} bytes"),
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some((
            format!(
                "'{shown}' contains the control character {}",
                c.escape_unicode()
            ),
            "use a name without control characters".into(),
        ));
    }
    if let Some(p) = invisible_problem(name) {
        return Some(p);
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '.' | ' ' | '/' | '\\')) {
        return Some((
            format!("'{shown}' contains {c:?}"),
            "use a name without '.', spaces, '/' or '\\'".into(),
        ));
    }
    if name.eq_ignore_ascii_case("_delta_log") {
        return Some((
            "'_delta_log' is the folder of a Delta table's log".into(),
            "choose another name".into(),
        ));
    }
    None
}

/// Why a column or nested field name cannot be used (message, fix), if it cannot.
pub fn column_name_problem(name: &str) -> Option<(String, String)> {
    if name.is_empty() {
        return Some(("is empty".into(), "name the column".into()));
    }
    if name.len() > MAX_NAME_BYTES {
        return Some((
            format!(
                "is {} bytes long; the limit is {MAX_NAME_BYTES}",
                name.len()
            ),
            format!("shorten it to at most {MAX_NAME_BYTES} bytes"),
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some((
            format!(
                "'{}' contains the control character {}",
                printable(name),
                c.escape_unicode()
            ),
            "use a name without control characters".into(),
        ));
    }
    invisible_problem(name)
}

/// Kept at this path for callers that name it here; it lives with the other
/// suggestion helpers.
pub use super::suggest::edit_distance;

/// How two names are compared as a reader sees them (Unicode normalisation,
/// case, lookalike letters): implemented outside the pure core, which cannot
/// depend on the Unicode tables (`delta_operator_names::Reader`).
pub trait Lookalikes {
    /// What two names that may be one to a reader share (compared first: cheap to index).
    fn key(&self, name: &str) -> String;
    /// Why `a` and `b`, different strings, are one name to a reader, if they are.
    fn clash(&self, a: &str, b: &str) -> Option<String>;
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_that_would_escape_or_break_the_lake_are_refused() {
        for bad in [
            "",
            "a.b",
            "a/b",
            "a\\b",
            "..",
            ".staging",
            "_delta_log",
            "_DELTA_LOG",
            "a b",
            "esc\u{1b}[31m",
            "nul\0",
            "new\nline",
        ] {
            assert!(
                super::object_name_problem(bad, super::MAX_TABLE_NAME_BYTES).is_some(),
                "{bad:?} passed"
            );
        }
        assert!(
            super::object_name_problem(
                &"x".repeat(super::MAX_TABLE_NAME_BYTES),
                super::MAX_TABLE_NAME_BYTES
            )
            .is_none()
        );
        assert!(
            super::object_name_problem(
                &"x".repeat(super::MAX_TABLE_NAME_BYTES + 1),
                super::MAX_TABLE_NAME_BYTES
            )
            .is_some()
        );
        assert!(super::object_name_problem("orders_2024", super::MAX_TABLE_NAME_BYTES).is_none());
        assert_eq!(super::printable("a\u{1b}b\n"), "a\\u{1b}b\\u{a}");
    }

    #[test]
    fn invisible_characters_are_refused_in_every_name() {
        for c in [
            '\u{200b}', '\u{200c}', '\u{200d}', '\u{feff}', '\u{ad}', '\u{2060}', '\u{202e}',
        ] {
            let name = format!("or{c}ders");
            let (message, fix) = super::column_name_problem(&name).expect(&name);
            assert!(
                message.contains("invisible")
                    && message.contains(&format!("{}", c.escape_unicode())),
                "{message}"
            );
            assert!(fix.contains("remove it"));
            assert!(
                super::object_name_problem(&name, super::MAX_TABLE_NAME_BYTES).is_some(),
                "{name:?}"
            );
            // shown escaped, never raw
            assert!(!super::printable(&name).contains(c));
        }
        assert!(super::column_name_problem("caf\u{e9}").is_none());
        assert!(super::column_name_problem("\u{0437}\u{0430}\u{043a}\u{0430}\u{0437}").is_none());
    }
}
