//! The grammar of a JSON number, shared by the readers that must tell where one ends.

use std::ops::Range;

/// A number's parts, as byte ranges of the text it was found in.
pub(crate) struct NumberToken {
    /// Whether it begins with `-`.
    pub(crate) negative: bool,
    /// The integer part's digits.
    pub(crate) integer: Range<usize>,
    /// The fraction's digits, after the `.` (empty when there is none).
    pub(crate) fraction: Range<usize>,
    /// Whether the exponent is negative, and its digits, when there is one.
    pub(crate) exponent: Option<(bool, Range<usize>)>,
    /// Where the number ends.
    pub(crate) end: usize,
}

/// The number that begins at `start` in `bytes`, or `None` if what begins there is not one:
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. Nothing after it is looked at.
pub(crate) fn number(bytes: &[u8], start: usize) -> Option<NumberToken> {
    let negative = bytes.get(start) == Some(&b'-');
    let digits = start + usize::from(negative);
    let integer_end = match bytes.get(digits)? {
        b'0' => digits + 1,
        b'1'..=b'9' => skip_digits(bytes, digits),
        _ => return None,
    };
    let mut end = integer_end;
    let mut fraction = end..end;
    if bytes.get(end) == Some(&b'.') {
        end = skip_digits(bytes, end + 1);
        fraction = integer_end + 1..end;
        if fraction.is_empty() {
            return None;
        }
    }
    let mut exponent = None;
    if let Some(b'e' | b'E') = bytes.get(end) {
        end += 1;
        let exponent_negative = bytes.get(end) == Some(&b'-');
        if let Some(b'+' | b'-') = bytes.get(end) {
            end += 1;
        }
        let from = end;
        end = skip_digits(bytes, from);
        if end == from {
            return None;
        }
        exponent = Some((exponent_negative, from..end));
    }
    Some(NumberToken {
        negative,
        integer: digits..integer_end,
        fraction,
        exponent,
        end,
    })
}

fn skip_digits(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = bytes.get(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_ends_where_json_says_a_number_ends() {
        for (text, end) in [
            ("0", 1),
            ("-0", 2),
            ("12,", 2),
            ("01", 1),
            ("1.5]", 3),
            ("-2.25e+10}", 9),
            ("3E-2", 4),
            ("1e5x", 3),
        ] {
            assert_eq!(number(text.as_bytes(), 0).map(|n| n.end), Some(end), "{text}");
        }
        for text in ["", "-", "+1", ".5", "1.", "1.e5", "1e", "1e+", "-a"] {
            assert!(number(text.as_bytes(), 0).is_none(), "{text}");
        }
    }

    #[test]
    fn it_gives_each_part() {
        let n = number(b"[-12.50e-3]", 1).unwrap();
        assert!(n.negative);
        assert_eq!((n.integer, n.fraction, n.end), (2..4, 5..7, 10));
        assert_eq!(n.exponent, Some((true, 9..10)));
    }
}
