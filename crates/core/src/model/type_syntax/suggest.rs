//! The nearest known type word to an unknown one, for the "did you mean"
//! of a type error. Type words are short and typos in them are often two
//! letters swapped, so the distance counts a swap as one edit.

use crate::model::suggest::{nearest, typo_distance};

/// Every type word the parser in `ddl.rs` knows (a word added to its match
/// belongs here too): canonical names first, so they win ties when
/// suggesting, then aliases.
#[rustfmt::skip]
const TYPE_WORDS: &[&str] = &[
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "char",
    "varchar", "string", "binary", "date", "timestamp", "timestamp_ntz", "variant", "void",
    "array", "map", "struct", "bool", "byte", "short", "integer", "long", "real", "dec",
    "numeric", "timestamp_ltz",
];

/// The known type word closest to `word` (case-insensitive): within 2 edits
/// (at most half the word's length, so `a` suggests nothing), or else a known
/// word that `word` (3+ characters) is a prefix of.
pub fn nearest_type_name(word: &str) -> Option<&'static str> {
    let word = word.to_ascii_lowercase();
    let max = 2.min(word.chars().count() / 2);
    // ties go to the first, so canonical names win over aliases
    let by_distance = nearest(
        TYPE_WORDS.iter().copied(),
        |known| typo_distance(&word, known),
        |_| max,
    );
    by_distance.or_else(|| {
        (word.len() >= 3).then(|| TYPE_WORDS.iter().copied().find(|k| k.starts_with(&word)))?
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::err;
    use super::*;

    #[test]
    fn unknown_types_suggest_the_nearest_name() {
        let e = err("strng");
        assert_eq!(e.suggestion.as_deref(), Some("string"));
        assert_eq!(
            e.to_string(),
            "unknown type 'strng'; did you mean 'string'?"
        );
        let e = err("array<bigitn>");
        assert_eq!((e.offset, e.suggestion.as_deref()), (6, Some("bigint")));
        assert_eq!(
            err("timestamp_nz").suggestion.as_deref(),
            Some("timestamp_ntz")
        );
        assert_eq!(err("Integr").suggestion.as_deref(), Some("integer"));

        assert_eq!(nearest_type_name("timest"), Some("timestamp"), "prefix");
        assert_eq!(nearest_type_name("varc"), Some("varchar"), "prefix");
        assert_eq!(nearest_type_name("doubel"), Some("double"));
        assert_eq!(nearest_type_name("in"), Some("int"));
        assert_eq!(nearest_type_name("STRIN"), Some("string"));
        assert_eq!(nearest_type_name("a"), None, "too short to guess");
        assert_eq!(nearest_type_name("geography"), None);
        assert_eq!(nearest_type_name("interval"), None);
        let e = err("geography");
        assert_eq!(e.suggestion, None);
        assert_eq!(e.to_string(), "unknown type 'geography'");
    }

    #[test]
    fn swapped_letters_still_suggest() {
        // plain Levenshtein would make these 2 edits away, too far for 3 letters
        assert_eq!(nearest_type_name("itn"), Some("int"));
        assert_eq!(nearest_type_name("mpa"), Some("map"));
        assert_eq!(nearest_type_name("srtnig"), Some("string"));
    }
}
