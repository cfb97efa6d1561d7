//! Text as a terminal should show it: control characters written as escapes, never obeyed.
//!
//! What the kit shows comes partly from elsewhere: a response body quoted in a failure
//! message, a test's name or a route read back from an archive, an entry's name in a zip
//! someone else wrote. Printed as it is, an escape sequence in such text is obeyed by the
//! terminal (it can colour or hide what follows, clear the screen, retitle the window), a
//! carriage return overwrites the start of its line, a line break forges a line of output (an
//! outcome, or a command in what `kit-cli curl` prints to paste into a shell), and a
//! bidirectional override shows text in an order other than its own. Shown escaped, each is
//! also something a reader can see: a failure caused by an invisible character says so.
//!
//! ```
//! use kit_core::visible;
//!
//! let body = "build \x1b[31mfailed\x1b[0m\r\n\tat step 3";
//! assert_eq!(visible::text(body), r"build \u{1b}[31mfailed\u{1b}[0m\r\n\tat step 3");
//! assert_eq!(visible::lines(body), "build \\u{1b}[31mfailed\\u{1b}[0m\n\tat step 3");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` on one line: every [hidden](is_hidden) character written as an escape (`\n`, `\r`,
/// `\t`, or `\u{1b}`, the form Rust's debug output uses). Everything else, backslashes and
/// text beyond ASCII included, is left as it is; `text` is borrowed when it holds nothing to
/// escape.
///
/// ```
/// use std::borrow::Cow;
/// use kit_core::visible;
///
/// assert!(matches!(visible::text("GET /items/{id}"), Cow::Borrowed(_)));
/// assert_eq!(visible::text("evil\nPassed forged"), r"evil\nPassed forged");
/// assert_eq!(visible::text("report\u{202e}fdp.exe"), r"report\u{202e}fdp.exe");
/// ```
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` shown whole: line breaks and tabs kept, a carriage return before a line break
/// dropped with it, every other [hidden](is_hidden) character escaped as [`text`] escapes it.
/// For a message of several lines.
///
/// ```
/// use std::borrow::Cow;
/// use kit_core::visible;
///
/// assert!(matches!(visible::lines("one\n\ttwo\n"), Cow::Borrowed(_)));
/// assert_eq!(visible::lines("one\r\ntwo\x1b[2K\r"), "one\ntwo\\u{1b}[2K\\r");
/// ```
pub fn lines(text: &str) -> Cow<'_, str> {
    let kept = |c: char| matches!(c, '\n' | '\t');
    if !text.chars().any(|c| !kept(c) && is_hidden(c)) {
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
        for c in line.chars() {
            if !kept(c) && is_hidden(c) {
                push_escape(&mut out, c);
            } else {
                out.push(c);
            }
        }
        if broken {
            out.push('\n');
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal would act on `c` rather than show it: Unicode's control characters
/// (C0, DEL and C1: ESC and the one-character CSI among them) and the nine bidirectional
/// embeddings, overrides and isolates that rustc's `text_direction_codepoint` lints name.
///
/// ```
/// use kit_core::visible::is_hidden;
///
/// assert!(is_hidden('\x1b') && is_hidden('\u{9b}') && is_hidden('\u{202e}'));
/// assert!(!is_hidden('é') && !is_hidden('\\'));
/// ```
pub fn is_hidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Appends the escape [`text`] shows `c` as, for a caller escaping text of its own format
/// (Markdown, say) one character at a time. `c` should be [hidden](is_hidden).
///
/// ```
/// let mut out = String::from("bell: ");
/// kit_core::visible::push_escape(&mut out, '\x07');
/// assert_eq!(out, r"bell: \u{7}");
/// ```
pub fn push_escape(out: &mut String, c: char) {
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
        for plain in ["", "GET /items/{id}", r"C:\tmp\n is a path", "José — naïve ✓ 表"] {
            assert!(matches!(text(plain), Cow::Borrowed(t) if t == plain), "{plain:?}");
            assert!(
                matches!(lines(plain), Cow::Borrowed(t) if t == plain),
                "{plain:?}"
            );
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
        for (hostile, shown) in cases {
            assert_eq!(text(hostile), shown, "{hostile:?}");
            assert!(!text(hostile).chars().any(is_hidden));
        }
    }

    #[test]
    fn lines_keep_their_breaks_and_tabs_and_lose_a_carriage_return_before_a_break() {
        assert!(matches!(lines("a\n\tb\n"), Cow::Borrowed("a\n\tb\n")));
        assert_eq!(lines("a\r\n\x1b[1Ab\rc\n"), "a\n\\u{1b}[1Ab\\rc\n");
        assert_eq!(lines("a\n\tb\r"), "a\n\tb\\r");
        assert_eq!(lines("\r\n\r\n"), "\n\n");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Text weighted towards what matters here: controls, bidi marks, breaks, backslashes.
        fn hostile() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                any::<char>().prop_map(String::from),
                prop::sample::select(vec![
                    "\x1b[31m",
                    "\x1b]0;t\x07",
                    "\r\n",
                    "\n",
                    "\r",
                    "\t",
                    "\\",
                    "\u{9b}",
                    "\u{85}",
                    "\u{202e}",
                    "\u{2069}",
                    "é",
                    "表",
                    "plain",
                ])
                .prop_map(str::to_owned),
            ];
            prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// One line, nothing hidden, and every character that was not hidden is still there
            /// in order.
            #[test]
            fn text_is_one_line_of_what_was_shown(s in hostile()) {
                let shown = text(&s);
                prop_assert!(!shown.chars().any(is_hidden), "{:?}", shown);
                let kept: String = s.chars().filter(|c| !is_hidden(*c)).collect();
                let mut rest = shown.chars();
                prop_assert!(kept.chars().all(|c| rest.any(|d| d == c)), "{:?} in {:?}", kept, shown);
                prop_assert_eq!(matches!(shown, Cow::Borrowed(_)), !s.chars().any(is_hidden));
            }

            /// The same lines (a carriage return before a break dropped), tabs kept, nothing
            /// else hidden.
            #[test]
            fn lines_keep_the_lines(s in hostile()) {
                let shown = lines(&s);
                prop_assert!(
                    !shown.chars().any(|c| !matches!(c, '\n' | '\t') && is_hidden(c)),
                    "{:?}",
                    shown
                );
                let were: Vec<&str> = s.split('\n').collect();
                let lines: Vec<&str> = shown.split('\n').collect();
                prop_assert_eq!(lines.len(), were.len());
                for (i, (line, was)) in lines.iter().zip(&were).enumerate() {
                    let was = if i + 1 < were.len() { was.strip_suffix('\r').unwrap_or(was) } else { was };
                    // Between its tabs, a line is what `text` shows.
                    let pieces: Vec<Cow<'_, str>> = was.split('\t').map(text).collect();
                    prop_assert_eq!(line.split('\t').collect::<Vec<_>>(), pieces, "{:?}", s);
                }
            }
        }
    }
}
