//! Text from an archive as a terminal should show it.
//!
//! An archive is input like any other: a test's name, a failure message quoting a response,
//! a route, an entry's name in a zip someone else wrote. Printed as they are, an escape
//! sequence in one of them is obeyed by the terminal (it can retitle the window, move the
//! cursor, hide the lines above, or answer a query as if typed), a line break forges a line of
//! the output (an outcome, or a command in what `kit-cli curl` prints to paste into a shell),
//! and a bidirectional override shows text in an order other than its own.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character and bidirectional control written as an escape:
/// `\n`, `\r`, `\t`, or `\u{1b}` (the form Rust's own debug output uses). Everything else,
/// backslashes and text beyond ASCII included, is left as it is; `text` is borrowed when it
/// holds nothing to escape.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Each line of `text` through [`visible`], the line breaks kept: for a message shown whole.
/// A carriage return before a line break goes with the break.
pub(crate) fn visible_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && hidden(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let broken = lines.peek().is_some();
        let line = if broken {
            line.strip_suffix('\r').unwrap_or(line)
        } else {
            line
        };
        out.push_str(&visible(line));
        if broken {
            out.push('\n');
        }
    }
    Cow::Owned(out)
}

/// Unicode's control characters (C0, DEL and C1: ESC and CSI among them) and the nine
/// bidirectional embeddings, overrides and isolates that rustc's `text_direction_codepoint`
/// lints name.
pub(crate) fn hidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Appends the escape [`visible`] shows `c` as (`c` being [`hidden`]).
pub(crate) fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        for text in ["", "GET /items/{id}", r"C:\tmp\n is a path", "José — naïve ✓ 表"] {
            assert!(matches!(visible(text), Cow::Borrowed(t) if t == text), "{text:?}");
        }
    }

    #[test]
    fn controls_and_bidi_overrides_are_escaped() {
        let cases = [
            ("a\nb", r"a\nb"),
            ("a\r\nb\tc", r"a\r\nb\tc"),
            ("\x1b]0;owned\x07title", r"\u{1b}]0;owned\u{7}title"),
            ("\x1b[2J", r"\u{1b}[2J"),
            ("nul\0del\x7f", r"nul\u{0}del\u{7f}"),
            // C1: NEL and the one-character CSI some terminals obey.
            ("\u{85}\u{9b}31m", r"\u{85}\u{9b}31m"),
            ("user\u{202e}txt.exe", r"user\u{202e}txt.exe"),
            ("\u{2066}isolated\u{2069}", r"\u{2066}isolated\u{2069}"),
        ];
        for (text, shown) in cases {
            assert_eq!(visible(text), shown, "{text:?}");
            assert!(!visible(text).chars().any(hidden));
        }
    }

    #[test]
    fn lines_keep_their_breaks_and_lose_their_carriage_returns() {
        assert!(matches!(visible_lines("a\nb\n"), Cow::Borrowed("a\nb\n")));
        assert_eq!(visible_lines("a\r\n\x1b[1Ab\rc\n"), "a\n\\u{1b}[1Ab\\rc\n");
        assert_eq!(visible_lines("a\n\tb\r"), "a\n\\tb\\r");
    }
}
