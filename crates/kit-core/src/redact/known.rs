//! The matcher of known secrets: automata in tiers, so that a run meeting secrets one at a
//! time does not build one automaton over all of them again for each.
//!
//! A `cargo test` run is one process, and every value it redacts is remembered for the rest of
//! it. One automaton over every secret had to be built again after each new one: a suite of
//! 4 000 tests that each sign in and get a fresh token spent 16 s building (8 000: 83 s), the
//! work growing with the square of the secrets (issue 9's forty-fourth stop). Tiers make it
//! grow as `n log n`: new secrets get an automaton of their own, and two neighbouring tiers are
//! merged whenever the older is less than twice the newer, so each tier is at least twice the
//! next, and a secret is rebuilt into a larger one at most `log2 n` times. A search asks every
//! tier, at most `log2 n` of them; while all secrets fit in a few KiB they are kept in one.

use std::ops::Range;

use aho_corasick::{AhoCorasick, Input, Match};

use super::secrets::leftmost_longest;

/// Secrets up to this many bytes in all are always kept in one automaton: rebuilding it costs
/// less than searching twice.
const ONE_TIER_BYTES: usize = 16 * 1024;

/// One automaton over a run of secrets, in the order they were remembered.
#[derive(Clone)]
struct Tier {
    automaton: AhoCorasick,
    /// The secrets it holds, by position in the registry's list.
    secrets: Range<usize>,
    bytes: usize,
}

/// Every known secret, searched leftmost-longest across the tiers: the earliest match, the
/// longest of those starting there, as one automaton over them all would find.
#[derive(Clone, Default)]
pub(crate) struct KnownSecrets {
    tiers: Vec<Tier>,
}

impl KnownSecrets {
    /// How many secrets of `values` the tiers hold: those after were remembered since.
    pub(crate) fn covered(&self) -> usize {
        self.tiers.last().map_or(0, |t| t.secrets.end)
    }

    /// The tiers with the secrets of `values` from [`covered`](Self::covered) on added, in one
    /// new tier merged with its neighbours as the tiers' rule says.
    pub(crate) fn with_new(&self, values: &[Box<str>]) -> KnownSecrets {
        self.with_new_kept_whole_up_to(values, ONE_TIER_BYTES)
    }

    fn with_new_kept_whole_up_to(&self, values: &[Box<str>], one_tier_bytes: usize) -> KnownSecrets {
        let mut tiers = self.tiers.clone();
        let from = self.covered();
        if from < values.len() {
            let mut secrets = from..values.len();
            let mut bytes: usize = values[from..].iter().map(|v| v.len()).sum();
            let small = tiers.iter().map(|t| t.bytes).sum::<usize>() + bytes <= one_tier_bytes;
            // Merge while the older neighbour is less than twice the new tier, or all is small.
            while let Some(older) = tiers.last() {
                if !small && older.bytes >= 2 * bytes {
                    break;
                }
                secrets.start = older.secrets.start;
                bytes += older.bytes;
                tiers.pop();
            }
            let patterns: Vec<&[u8]> = values[secrets.clone()].iter().map(|v| v.as_bytes()).collect();
            match leftmost_longest(&patterns) {
                Ok(automaton) => tiers.push(Tier {
                    automaton,
                    secrets,
                    bytes,
                }),
                // Past every limit aho-corasick has: the tiers stay as they were, and the new
                // secrets are tried again with the next ones, rather than failing the request
                // being recorded.
                Err(_) => return self.clone(),
            }
        }
        KnownSecrets { tiers }
    }

    /// Whether any secret occurs in `haystack`.
    pub(crate) fn is_match(&self, haystack: &[u8]) -> bool {
        self.tiers.iter().any(|t| t.automaton.is_match(haystack))
    }

    /// The secrets' occurrences in `haystack`, leftmost-longest and not overlapping, in order.
    pub(crate) fn find_iter<'h>(&'h self, haystack: &'h [u8]) -> impl Iterator<Item = Range<usize>> + 'h {
        let mut at = 0;
        // Each tier's next match at or after `at`, found again only once `at` passes its start.
        let mut next: Vec<Option<Match>> = self
            .tiers
            .iter()
            .map(|t| t.automaton.find(Input::new(haystack)))
            .collect();
        std::iter::from_fn(move || {
            for (tier, found) in self.tiers.iter().zip(next.iter_mut()) {
                if found.is_some_and(|m| m.start() < at) {
                    *found = tier.automaton.find(Input::new(haystack).range(at..));
                }
            }
            let best = next
                .iter()
                .flatten()
                .min_by_key(|m| (m.start(), std::cmp::Reverse(m.end())))?;
            at = best.end();
            Some(best.start()..best.end())
        })
    }
}

#[cfg(test)]
mod tests {
    use aho_corasick::MatchKind;
    use proptest::prelude::*;

    use super::*;

    fn boxed(values: &[String]) -> Vec<Box<str>> {
        values.iter().map(|v| v.as_str().into()).collect()
    }

    /// Secrets arriving in batches, tiered at any size, are found exactly as one automaton over
    /// them all finds them: the same occurrences, in the same order.
    fn agrees_with_one_automaton(secrets: &[String], batches: &[usize], text: &str, one_tier_bytes: usize) {
        let values = boxed(secrets);
        let mut known = KnownSecrets::default();
        let mut end = 0;
        for &batch in batches.iter().chain([&secrets.len()]) {
            end = (end + batch).min(values.len());
            known = known.with_new_kept_whole_up_to(&values[..end], one_tier_bytes);
        }
        assert_eq!(known.covered(), values.len());
        let one = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(secrets)
            .unwrap();
        let expected: Vec<Range<usize>> = one.find_iter(text).map(|m| m.range()).collect();
        let found: Vec<Range<usize>> = known.find_iter(text.as_bytes()).collect();
        assert_eq!(
            found,
            expected,
            "tiers: {:?}",
            known.tiers.iter().map(|t| t.secrets.clone()).collect::<Vec<_>>()
        );
        assert_eq!(known.is_match(text.as_bytes()), !expected.is_empty());
    }

    #[test]
    fn a_secret_in_an_older_tier_and_a_longer_one_in_a_newer_are_found_leftmost_longest() {
        let secrets = ["12345678", "0123456789", "abcdefgh12", "defgh1234567", "zzzzzzzz"].map(String::from);
        for text in [
            "x0123456789y",
            "abcdefgh1234567",
            "12345678zzzzzzzzz0123456789",
            "none here",
        ] {
            agrees_with_one_automaton(&secrets, &[1, 1, 1, 1], text, 0);
        }
        // Two tiers (the older more than twice the newer), one secret the other's prefix:
        // the longer wins, whichever tier holds it.
        let long = "x".repeat(30);
        let shorter_first = ["abcdefgh".to_owned(), long.clone(), "abcdefgh12".to_owned()];
        let longer_first = ["abcdefgh12".to_owned(), long, "abcdefgh".to_owned()];
        for secrets in [shorter_first, longer_first] {
            agrees_with_one_automaton(&secrets, &[2, 1], "..abcdefgh12..abcdefgh..", 0);
        }
    }

    #[test]
    fn tiers_stay_few_and_small_sets_stay_whole() {
        let values: Vec<Box<str>> = (0..4_000)
            .map(|i| format!("secret-{i:06}-padding").into())
            .collect();
        let mut known = KnownSecrets::default();
        for end in 1..=values.len() {
            known = known.with_new(&values[..end]);
            if values[..end].iter().map(|v| v.len()).sum::<usize>() <= ONE_TIER_BYTES {
                assert_eq!(known.tiers.len(), 1);
            }
            // Each tier at least twice the next: no more than log2 of them, and one more.
            assert!(known.tiers.len() <= (usize::BITS - end.leading_zeros()) as usize + 1);
        }
        assert!(known.tiers.len() > 1);
        assert_eq!(
            known.find_iter(b"..secret-003999-padding..").collect::<Vec<_>>(),
            vec![2..23]
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn tiers_find_what_one_automaton_finds(
            secrets in proptest::collection::vec("[ab]{8,14}|[abc]{8,10}|[ab]{30,60}", 1..24),
            batches in proptest::collection::vec(1usize..5, 0..12),
            pieces in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..4, "[abc ]{0,3}"), 0..24),
            one_tier_bytes in prop::sample::select(vec![0usize, 40, 1 << 20]),
        ) {
            let mut seen = std::collections::HashSet::new();
            let secrets: Vec<String> = secrets.into_iter().filter(|s| seen.insert(s.clone())).collect();
            // The text is made of the secrets, their beginnings and their ends, and a little
            // else: matches that touch, overlap and extend one another across tiers.
            let mut text = String::new();
            for (which, part, filler) in &pieces {
                let secret = which.get(&secrets);
                let half = secret.len() / 2;
                text.push_str(match part {
                    0 | 1 => secret,
                    2 => &secret[..half],
                    _ => &secret[half..],
                });
                text.push_str(filler);
            }
            agrees_with_one_automaton(&secrets, &batches, &text, one_tier_bytes);
        }
    }
}
