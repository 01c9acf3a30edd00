//! Progress of a sweep on stderr: an [`indicatif`] bar that counts runs. indicatif draws
//! nothing when stderr is not a terminal, so logs and CI output carry only the results.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` runs; [`Progress::suspend`] prints around it.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar for `total` runs of `what` (e.g. "datapath").
    pub fn new(total: u64, what: &str) -> Progress {
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} runs, eta {eta} {msg}",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix(what.to_owned());
        Progress(bar)
    }

    /// Names the run under way.
    pub fn start(&self, run: String) {
        self.0.set_message(run);
    }

    /// Counts one run as done.
    pub fn done(&self) {
        self.0.inc(1);
    }

    /// Runs `f` (which prints to stdout) with the bar cleared, then draws the bar again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.suspend(f)
    }

    /// Removes the bar.
    pub fn finish(self) {
        self.0.finish_and_clear();
    }
}
