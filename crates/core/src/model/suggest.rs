//! Typo suggestions: how far a word is from another, and which of a list is
//! nearest. One place for the distance and the pick, so a manifest key, an
//! enum value, a column, a privilege and a type word are all matched by the
//! same code; each caller brings its own case folding and its own limit,
//! which differ on purpose (see the callers).

/// Levenshtein distance over chars: how many edits turn `a` into `b`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// [`edit_distance`], with a swap of two adjacent characters counting as one
/// edit (`bigitn` → `bigint` is 1, `itn` → `int` is 1): the least of the
/// plain distance and, after one or two adjacent swaps, the swaps plus the
/// distance left. Two swaps suffice, as suggestions are at most 2 edits away;
/// past that (or when the lengths differ by more) the plain distance is
/// returned.
pub fn typo_distance(a: &str, b: &str) -> usize {
    let plain = edit_distance(a, b);
    if plain <= 1 || a.chars().count().abs_diff(b.chars().count()) > 2 {
        return plain;
    }
    let mut best = plain;
    for once in adjacent_swaps(a) {
        best = best.min(1 + edit_distance(&once, b));
        for twice in adjacent_swaps(&once) {
            best = best.min(2 + edit_distance(&twice, b));
        }
    }
    best
}

/// `s` with each pair of adjacent, differing characters swapped in turn.
fn adjacent_swaps(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    (1..chars.len())
        .filter(|&i| chars[i - 1] != chars[i])
        .map(|i| {
            let mut swapped = chars.clone();
            swapped.swap(i - 1, i);
            swapped.into_iter().collect()
        })
        .collect()
}

/// The candidate at the least `distance` (from the word being matched, which
/// the closure holds), among those no farther than `within` allows for that
/// candidate; of equals, the first in `candidates` order. None when no
/// candidate is close enough to be a typo of the word.
pub fn nearest<'a>(
    candidates: impl IntoIterator<Item = &'a str>,
    distance: impl Fn(&str) -> usize,
    within: impl Fn(&str) -> usize,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(c), c))
        .filter(|&(d, c)| d <= within(c))
        .min_by_key(|&(d, _)| d) // min_by_key keeps the first of equals
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("strng", "string"), 1);
        assert_eq!(edit_distance("bigitn", "bigint"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn adjacent_swaps_count_as_one_edit() {
        assert_eq!(typo_distance("bigitn", "bigint"), 1);
        assert_eq!(typo_distance("itn", "int"), 1);
        assert_eq!(typo_distance("srtnig", "string"), 2, "two swaps");
        assert_eq!(typo_distance("dobule", "double"), 1);
        assert_eq!(typo_distance("strng", "string"), 1);
        assert_eq!(typo_distance("date", "date"), 0);
        assert_eq!(typo_distance("ab", "ba"), 1);
        assert_eq!(typo_distance("abc", "abcdefgh"), 5, "plain past 2 edits");
    }

    #[test]
    fn nearest_keeps_the_first_of_equals_within_the_limit() {
        let from = |w: &'static str| move |c: &str| edit_distance(w, c);
        assert_eq!(nearest(["cat", "bat"], from("hat"), |_| 1), Some("cat"));
        assert_eq!(nearest(["bat", "cat"], from("hat"), |_| 1), Some("bat"));
        assert_eq!(nearest(["cat", "hat"], from("hat"), |_| 1), Some("hat"));
        assert_eq!(nearest(["cat", "bat"], from("dog"), |_| 2), None);
        assert_eq!(
            nearest(["cat", "kitten"], from("kiten"), |c| c.len() / 4),
            Some("kitten"),
            "the limit is the candidate's"
        );
    }
}
