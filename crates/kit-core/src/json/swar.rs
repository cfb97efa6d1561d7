//! Eight bytes at a time: finding the bytes a JSON string cannot hold as they are.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is below 0x20, a quote or a backslash. Exact up
/// to the lowest such byte: a borrow can only mark bytes above one that really matches.
pub(crate) fn escape_mask(word: u64) -> u64 {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x;
    (below_space | zero_in(quote) | zero_in(backslash)) & HIGHS
}

/// The high bit of each byte of `word` that is below 0x20, a quote or a backslash: every
/// such byte, where [`escape_mask`] is exact only up to the lowest. Each byte is taken at
/// seven bits before anything is added to it, so no sum carries into the next byte.
#[inline]
pub(crate) fn exact_escape_mask(word: u64) -> u64 {
    const LOW7: u64 = ONES * 0x7f;
    // The high bit set where a byte is not zero: its low seven bits reach it when added to
    // 0x7f, and its own high bit is kept.
    let nonzero = |x: u64| ((x & LOW7) + LOW7) | x;
    // The high bit set where a byte is 0x20 or more: its low seven bits reach it when added
    // to 0x60, and its own high bit is kept.
    let at_least_space = ((word & LOW7) + ONES * 0x60) | word;
    let quote = nonzero(word ^ (ONES * u64::from(b'"')));
    let backslash = nonzero(word ^ (ONES * u64::from(b'\\')));
    !(at_least_space & quote & backslash) & HIGHS
}

/// The offset of the first byte of `bytes` from `from` on that is below 0x20, a quote or a
/// backslash, or `bytes.len()` if there is none: where a JSON string whose text starts at
/// `from` ends or has an escape. Eight bytes at a time.
///
/// ```
/// use kit_core::json::next_special;
///
/// let json = br#""octocat","id":1"#;
/// assert_eq!(next_special(json, 1), 8);
/// assert_eq!(next_special(br#"a"b"#, 0), 1);
/// assert_eq!(next_special(b"plain", 0), 5);
/// ```
pub fn next_special(bytes: &[u8], mut from: usize) -> usize {
    while let Some(word) = word_at(bytes, from) {
        let mask = escape_mask(word);
        if mask != 0 {
            return from + (mask.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while from < bytes.len() && !matches!(bytes[from], 0x00..=0x1f | b'"' | b'\\') {
        from += 1;
    }
    from
}

/// Whether any byte of `bytes` is below 0x20, a quote or a backslash: a word at a time, the
/// last word overlapping the one before it (fewer than eight bytes are padded with spaces).
/// Most strings of an event line are short names and values with nothing to escape; checking
/// them whole lets them be copied in one piece.
#[inline]
pub(crate) fn has_special(bytes: &[u8]) -> bool {
    let Some(last) = bytes.len().checked_sub(8) else {
        let mut padded = [b' '; 8];
        padded[..bytes.len()].copy_from_slice(bytes);
        return escape_mask(u64::from_le_bytes(padded)) != 0;
    };
    let mut at = 0;
    while at < last {
        // A mask is non-zero exactly when the word holds such a byte (see `escape_mask`).
        if word_at(bytes, at).is_some_and(|word| escape_mask(word) != 0) {
            return true;
        }
        at += 8;
    }
    word_at(bytes, last).is_some_and(|word| escape_mask(word) != 0)
}

/// The eight bytes of `bytes` from `at` as a little-endian word (the first byte lowest), if
/// there are eight.
#[inline]
pub(crate) fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Copies the bytes of `bytes` from `at` up to the next one a JSON string cannot hold as it is
/// to `out`, and gives that byte's offset (or the end). Whole words are copied and the excess
/// cut off, so a short run costs a store, not a call to `memcpy`: the runs between the escapes
/// of a JSON body held in a string are a few bytes each.
#[inline]
pub(crate) fn copy_run(bytes: &[u8], mut at: usize, out: &mut Vec<u8>) -> usize {
    while let Some(word) = word_at(bytes, at) {
        out.extend_from_slice(&word.to_le_bytes());
        let mask = escape_mask(word);
        if mask != 0 {
            // Only the lowest marked byte is exact (see `escape_mask`): stop there.
            let run = (mask.trailing_zeros() / 8) as usize;
            out.truncate(out.len() - 8 + run);
            return at + run;
        }
        at += 8;
    }
    // Fewer than eight left: a byte at a time (a call to copy them cost more than the loop, on
    // the short keys and values that make most of an event line).
    while let Some(&byte) = bytes.get(at) {
        if matches!(byte, 0x00..=0x1f | b'"' | b'\\') {
            break;
        }
        out.push(byte);
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn next_special_finds_what_a_byte_loop_finds(
            bytes in proptest::collection::vec(prop_oneof![any::<u8>(), Just(b'"'), Just(b'\\'), Just(b'a')], 0..40),
            from in 0usize..40,
        ) {
            let from = from.min(bytes.len());
            let slow = bytes[from..]
                .iter()
                .position(|b| matches!(b, 0x00..=0x1f | b'"' | b'\\'))
                .map_or(bytes.len(), |p| from + p);
            prop_assert_eq!(next_special(&bytes, from), slow);
        }

        #[test]
        fn the_exact_mask_marks_each_byte_a_byte_loop_marks(word in prop_oneof![
            any::<u64>(),
            proptest::collection::vec(prop_oneof![
                any::<u8>(), Just(b'"'), Just(b'\\'), Just(0x1f), Just(0x20), Just(0x00), Just(0x80), Just(0xa2), Just(0xdc),
            ], 8).prop_map(|bytes| u64::from_le_bytes(bytes.try_into().unwrap())),
        ]) {
            let slow = word.to_le_bytes().iter().enumerate().fold(0u64, |mask, (i, b)| {
                if matches!(b, 0x00..=0x1f | b'"' | b'\\') { mask | 0x80 << (8 * i) } else { mask }
            });
            prop_assert_eq!(exact_escape_mask(word), slow, "{:016x}", word);
        }

        #[test]
        fn has_special_is_whether_a_byte_loop_finds_one(
            bytes in proptest::collection::vec(prop_oneof![
                8 => Just(b'a'), 1 => any::<u8>(), 1 => Just(b'"'), 1 => Just(b'\\'), 1 => Just(0x1f), 1 => Just(b' '),
            ], 0..40),
        ) {
            let slow = bytes.iter().any(|b| matches!(b, 0x00..=0x1f | b'"' | b'\\'));
            prop_assert_eq!(has_special(&bytes), slow);
        }
    }
}
