//! A progress bar on long reads, shown only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Tests read so far, of those the archives list. Hidden unless stderr is a terminal, so
/// pipelines and logs never see control characters.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar on stderr when it is a terminal; nothing otherwise.
    pub(crate) fn for_stderr() -> Self {
        if !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} tests, {eta} left")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        // Short reads finish before it would draw: only long ones show a bar.
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// No bar.
    pub(crate) fn hidden() -> Self {
        Progress { bar: None }
    }

    /// Starts reading `name`, which holds `tests` tests.
    pub(crate) fn archive(&self, name: &str, tests: usize) {
        if let Some(bar) = &self.bar {
            bar.inc_length(tests as u64);
            // A file's name is anyone's: shown, not obeyed, like all text from an archive.
            bar.set_message(kit_core::visible::text(name).into_owned());
        }
    }

    /// One more test read.
    pub(crate) fn test(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
