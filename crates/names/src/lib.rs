//! Names that are different strings but the same name to a reader: they
//! differ only by Unicode normalisation (NFC `é` and NFD `e` + `◌́`, a
//! full-width `ｉｄ`) or case, or by confusable letters (Cyrillic `а`, Greek
//! `ο` for Latin `a`, `o`). Within one table's columns, one struct's fields,
//! one schema's tables, one catalog's schemas and one target's catalogs, such
//! pairs are refused: an engine would keep both and every reader would pick the
//! wrong one; and a declared table whose name is a live undeclared table's of its
//! schema to a reader is refused by the plan (`Reader`, the core's
//! `model::names::Lookalikes`). (Invisible characters are refused in any name by
//! `model::names`.) Its own crate: the pure core cannot depend on the Unicode
//! tables, and validation (api) and the engine (backend) both need them.

use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

/// What two names are compared by: NFKC, lower-cased, NFKC again, then every
/// non-ASCII character replaced by its UTS #39 prototype (`а` → `a`). ASCII
/// stays as it is, so `rn` and `m`, `l` and `1` stay apart: only letters from
/// outside ASCII are read as the letters they look like.
pub fn comparison_key(name: &str) -> String {
    let folded: String = name
        .nfkc()
        .collect::<String>()
        .to_lowercase()
        .nfkc()
        .collect();
    let mut out = String::with_capacity(folded.len());
    for c in folded.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            out.extend(skeleton(c.encode_utf8(&mut buf)).flat_map(char::to_lowercase));
        }
    }
    out
}

/// Why `a` and `b` are one name to a reader though they are different
/// strings, if they are. Names equal ignoring case are left to the duplicate
/// checks, which say so in their own words.
pub fn clash(a: &str, b: &str) -> Option<String> {
    if a.to_lowercase() == b.to_lowercase() {
        return None;
    }
    let fold = |s: &str| -> String { s.nfkc().collect::<String>().to_lowercase().nfkc().collect() };
    if fold(a) == fold(b) {
        return Some(
            "they differ only by Unicode normalisation (NFC/NFD or compatibility forms) and case"
                .into(),
        );
    }
    if comparison_key(a) == comparison_key(b) {
        let invisible: Vec<String> = a
            .chars()
            .chain(b.chars())
            .filter(|c| delta_operator_core::model::names::is_invisible(*c))
            .map(|c| format!("{}", c.escape_unicode()))
            .collect();
        if !invisible.is_empty() {
            // each such name is also refused on its own (`model::names`)
            return Some(format!(
                "they differ only by invisible characters: {}",
                invisible.join(", ")
            ));
        }
        let odd: Vec<String> = a
            .chars()
            .chain(b.chars())
            .filter(|c| !c.is_ascii())
            .map(|c| format!("{}", c.escape_unicode()))
            .collect();
        return Some(format!(
            "they look the same: {} can be read as Latin letters",
            odd.join(", ")
        ));
    }
    None
}

/// How the engine compares a declared table's name with the live ones: these
/// functions, behind the core's seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reader;

impl delta_operator_core::model::names::Lookalikes for Reader {
    fn key(&self, name: &str) -> String {
        comparison_key(name)
    }
    fn clash(&self, a: &str, b: &str) -> Option<String> {
        clash(a, b)
    }
}

/// Every pair of `names` (with their spec paths) that `clash`es: the later
/// one, the earlier one and why, once per later name.
pub fn clashes(names: &[(&str, String)]) -> Vec<(usize, usize, String)> {
    let mut first: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, (name, _)) in names.iter().enumerate() {
        let key = comparison_key(name);
        match first.get(&key) {
            Some(&j) => {
                if let Some(why) = clash(name, names[j].0) {
                    out.push((i, j, why));
                }
            }
            None => {
                first.insert(key, i);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::clash;

    #[test]
    fn normalisation_forms_case_and_confusables_clash() {
        // NFC é and NFD e + combining acute
        let why = clash("caf\u{e9}", "cafe\u{301}").unwrap();
        assert!(why.contains("normalisation"), "{why}");
        assert!(clash("CAF\u{c9}", "cafe\u{301}").is_some());
        // full-width letters are the ASCII ones under NFKC
        assert!(
            clash("\u{ff49}\u{ff44}", "id")
                .unwrap()
                .contains("normalisation")
        );
        // Cyrillic а, о, р, е, с and Greek ο look Latin
        let why = clash("\u{43e}rders", "orders").unwrap();
        assert!(
            why.contains("look the same") && why.contains("\\u{43e}"),
            "{why}"
        );
        assert!(clash("p\u{430}yment", "payment").is_some());
        assert!(clash("\u{440}\u{435}\u{441}", "pec").is_some());
        assert!(clash("\u{3bf}k", "ok").is_some());
        // names that are merely alike, or equal ignoring case, do not clash here
        for (a, b) in [
            ("rn", "m"),
            ("col1", "coll"),
            ("x0", "xo"),
            ("orders", "order"),
            ("Id", "ID"),
            ("caf\u{e9}", "cafe"),
        ] {
            assert!(clash(a, b).is_none(), "{a} {b}");
        }
        // a Cyrillic name of its own is fine beside Latin ones
        assert!(clash("\u{437}\u{430}\u{43a}\u{430}\u{437}", "orders").is_none());
    }
}
