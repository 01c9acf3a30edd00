//! The command-line options every benchmark takes (flattened into each benchmark's `Args`):
//! where the results go, where earlier results come from, and how long a repetition runs.

use std::path::PathBuf;
use std::time::Duration;

use super::Budget;

/// Options shared by every `ferry bench` command.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// A short run: fewer configurations or repetitions and shorter repetitions, under 30 s.
    #[arg(long)]
    pub quick: bool,
    /// Write the results here: a header (machine, date, command, settings) and one record per
    /// configuration.
    #[arg(long, required_unless_present = "from")]
    pub json: Option<PathBuf>,
    /// Measure nothing: print the table and findings and draw the plot from an earlier
    /// results file.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub from: Option<PathBuf>,
    /// Also draw the results as SVG (what the plot shows is in the benchmark's description).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Measured time per repetition in milliseconds (each benchmark has a default, shorter
    /// with --quick); a warm-up of a tenth of it comes first.
    #[arg(long)]
    pub duration_ms: Option<u64>,
    /// Send exactly this many measured messages (or requests) per repetition instead of
    /// running for a time (plus a tenth of it as warm-up). For smoke tests.
    #[arg(long, conflicts_with = "duration_ms")]
    pub count: Option<u64>,
}

impl Common {
    /// The budget of one repetition: `--count`, else `--duration-ms`, else the benchmark's
    /// default for `--quick` or a full run.
    pub fn budget(&self, quick_ms: u64, full_ms: u64) -> Budget {
        let default_ms = if self.quick { quick_ms } else { full_ms };
        match (self.count, self.duration_ms) {
            (Some(n), _) => Budget::Count(n.max(1)),
            (None, Some(ms)) => Budget::Time(Duration::from_millis(ms.max(1))),
            (None, None) => Budget::Time(Duration::from_millis(default_ms.max(1))),
        }
    }
}

/// A benchmark's options parsed from `extra` after `name --json x.json`, as `ferry bench`
/// would: for the tests of what each benchmark plans from its options.
#[cfg(test)]
pub(crate) fn parse<A: clap::Args>(name: &str, extra: &[&str]) -> A {
    let command = A::augment_args(clap::Command::new("ferry-bench"));
    let mut argv = vec![name, "--json", "x.json"];
    argv.extend_from_slice(extra);
    let matches = command
        .try_get_matches_from(argv)
        .unwrap_or_else(|e| panic!("{e}"));
    A::from_arg_matches(&matches).unwrap_or_else(|e| panic!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(count: Option<u64>, duration_ms: Option<u64>) -> Common {
        Common {
            quick: false,
            json: None,
            from: None,
            plot: None,
            duration_ms,
            count,
        }
    }

    #[test]
    fn budget_prefers_count_then_duration_then_default() {
        let ms = |b: Budget| match b {
            Budget::Time(d) => Some(d.as_millis()),
            Budget::Count(_) => None,
        };
        assert!(matches!(common(Some(7), None).budget(80, 250), Budget::Count(7)));
        assert!(matches!(common(Some(0), None).budget(80, 250), Budget::Count(1)));
        assert_eq!(ms(common(None, Some(30)).budget(80, 250)), Some(30));
        let full = common(None, None);
        assert_eq!(ms(full.budget(80, 250)), Some(250));
        let quick = Common { quick: true, ..full };
        assert_eq!(ms(quick.budget(80, 250)), Some(80));
    }
}
