//! The one lifecycle every benchmark goes through: plan, run (with a progress bar), records,
//! the summary table, the targets marked met or missed, the plot. A benchmark is a
//! [`Benchmark`]: what it measures and how it shows it; [`main`] does the rest, the same way
//! for all of them:
//!
//! ```text
//!  measuring:  plan ─▶ run (progress bar, machine load metered) ─▶ records ─▶ --json PATH
//!                                                                     │
//!  --from PATH: ──────────────────────────── records read back ◀──────┘
//!                                                                     ▼
//!                                      table ─▶ targets (met / missed) ─▶ --plot PATH
//! ```
//!
//! The results file is one JSON object: the header (`benchmark`, `command`, `date`,
//! `machine`, `load`: [`MachineLoad`], `settings`) and the benchmark's records, whose fields
//! sit beside the header (a benchmark with one figure has `records`; one with several has a
//! key per figure). `--from` reads exactly what `--json` wrote, so redrawing never measures.

use std::path::Path;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::{Deserialize as _, Serialize};
use serde_json::{Value, json};

use super::cli::Common;
use super::load::{LoadMeter, MachineLoad};
use super::progress::Progress;
use super::report::{command_line, machine, now_utc};
use crate::BoxError;

/// A benchmark, as the lifecycle runs it.
pub trait Benchmark {
    /// Its name in the results' header and on the progress bar (`"rpc"`).
    const NAME: &'static str;
    /// Everything a run measured: serialized beside the results' header, so it must be a
    /// struct (`{ records: Vec<Record> }` for one figure, a field per figure otherwise).
    type Records: Serialize + DeserializeOwned;

    /// How many runs the plan holds (the progress bar's length).
    fn plan(&self) -> u64;

    /// Measures: the settings for the results' header, and the records. Calls
    /// [`Progress::start`] and [`Progress::done`] around each run of the plan.
    fn run(&self, progress: &Progress) -> Result<(Value, Self::Records), BoxError>;

    /// Prints the summary table (and whatever findings it has) to stdout.
    fn table(records: &Self::Records);

    /// The targets, each met or missed (none by default).
    fn targets(_records: &Self::Records) -> Vec<Target> {
        Vec::new()
    }

    /// Draws the plot as SVG at `path`.
    fn plot(records: &Self::Records, path: &Path) -> Result<(), BoxError>;
}

/// A target: what is compared, the goal, what was measured, and whether it was met.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// What is compared (`"hybrid / tonic, calls/s, 16 in flight"`).
    pub what: String,
    /// The goal (`">= 5x"`).
    pub goal: String,
    /// What this run measured (`"7.3x"`), or why it could not (`"not measured"`).
    pub measured: String,
    /// `None` when this run could not tell (a configuration it did not run).
    pub met: Option<bool>,
}

impl Target {
    /// A target of a ratio that should be at least `goal` (`at_least`) or at most `goal`.
    pub fn ratio(what: impl Into<String>, measured: Option<f64>, at_least: bool, goal: f64) -> Target {
        let bound = if at_least { ">=" } else { "<=" };
        Target {
            what: what.into(),
            goal: format!("{bound} {goal}x"),
            measured: measured.map_or("not measured".to_owned(), |m| format!("{m:.2}x")),
            met: measured
                .filter(|m| m.is_finite())
                .map(|m| if at_least { m >= goal } else { m <= goal }),
        }
    }

    /// `met`, `MISSED` or `not measured`.
    pub fn verdict(&self) -> &'static str {
        match self.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        }
    }
}

/// Prints `targets` as a table (nothing if there are none).
pub fn print_targets(targets: &[Target]) {
    if targets.is_empty() {
        return;
    }
    let mut t = super::table::Table::new(["target", "goal", "measured", "verdict"]);
    for target in targets {
        t.row([
            target.what.clone(),
            target.goal.clone(),
            target.measured.clone(),
            target.verdict().to_owned(),
        ]);
    }
    println!("Targets (ratios of figures from this one run):");
    t.print();
}

/// Runs `bench` as `common` asks: measure (and write `--json`, if given), or read `--from`; then the
/// table, the targets and, with `--plot`, the plot. Returns the records.
pub fn main<B: Benchmark>(bench: &B, common: &Common) -> Result<B::Records, BoxError> {
    let (records, load) = match &common.from {
        Some(from) => (read::<B>(from)?, None),
        None => {
            let started = Instant::now();
            let meter = LoadMeter::start();
            let progress = Progress::new(bench.plan(), B::NAME);
            let (settings, records) = bench.run(&progress)?;
            progress.finish();
            let load = meter.finish();
            print!("{} in {:.1} s", B::NAME, started.elapsed().as_secs_f64());
            // `--json` is required by every `ferry bench` command; `ferry calibrate` makes it
            // optional (its output is the thresholds file).
            if let Some(path) = &common.json {
                write(path, B::NAME, settings, &records, &load)?;
                print!("; results in {}", path.display());
            }
            println!("\n");
            (records, Some(load))
        }
    };
    B::table(&records);
    print_targets(&B::targets(&records));
    if let Some(plot) = &common.plot {
        B::plot(&records, plot)?;
        // A benchmark of several figures writes one file each beside `plot`, and says where.
        if plot.exists() {
            println!("plot in {}", plot.display());
        }
    }
    if let Some(warning) = load.as_ref().and_then(MachineLoad::warning) {
        println!("\n{warning}");
    }
    Ok(records)
}

/// Writes the results file: the header, then `records`' fields beside it.
pub fn write<R: Serialize>(
    path: &Path,
    benchmark: &str,
    settings: Value,
    records: &R,
    load: &MachineLoad,
) -> Result<(), BoxError> {
    let mut doc = json!({
        "benchmark": benchmark,
        "command": command_line(),
        "date": now_utc(),
        "machine": machine(),
        "load": load,
        "settings": settings,
    });
    let Value::Object(fields) = serde_json::to_value(records)? else {
        return Err(format!("{benchmark}: its records are not a JSON object").into());
    };
    doc.as_object_mut()
        .ok_or("the results' header is not an object")?
        .extend(fields);
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(())
}

/// Reads an earlier results file of `B`, after saying which run it was.
fn read<B: Benchmark>(from: &Path) -> Result<B::Records, BoxError> {
    let text = std::fs::read_to_string(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", from.display()))?;
    if let Some(name) = doc["benchmark"].as_str().filter(|&n| n != B::NAME) {
        return Err(format!("{} holds results of `{name}`, not `{}`", from.display(), B::NAME).into());
    }
    let records = B::Records::deserialize(&doc).map_err(|e| format!("{}: {e}", from.display()))?;
    println!("{} ({}), {}:", doc["command"], doc["date"], from.display());
    if let Some(warning) = doc
        .get("load")
        .and_then(|l| MachineLoad::deserialize(l).ok()?.warning())
    {
        println!("{warning}");
    }
    println!();
    Ok(records)
}

/// A results file committed under `docs/benchmarks/`, as JSON and as its records: what the
/// benchmarks' tests read back, so that `--from` keeps working on the published results.
#[cfg(test)]
pub(crate) fn committed<R: DeserializeOwned>(file: &str) -> (Value, R) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/benchmarks")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records = R::deserialize(&doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (doc, records)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Row {
        size: u64,
        rate: f64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Rows {
        records: Vec<Row>,
    }

    struct Fake {
        runs: Cell<u64>,
    }

    impl Benchmark for Fake {
        const NAME: &'static str = "fake";
        type Records = Rows;

        fn plan(&self) -> u64 {
            2
        }

        fn run(&self, progress: &Progress) -> Result<(Value, Rows), BoxError> {
            let mut records = Vec::new();
            for size in [64, 4096] {
                progress.start(format!("{size} B"));
                self.runs.set(self.runs.get() + 1);
                records.push(Row {
                    size,
                    rate: 1e6 / size as f64,
                });
                progress.done();
            }
            Ok((json!({"sizes": [64, 4096]}), Rows { records }))
        }

        fn table(_: &Rows) {}

        fn targets(r: &Rows) -> Vec<Target> {
            vec![Target::ratio(
                "small / large",
                Some(r.records[0].rate / r.records[1].rate),
                true,
                10.0,
            )]
        }

        fn plot(_: &Rows, path: &Path) -> Result<(), BoxError> {
            std::fs::write(path, "<svg/>")?;
            Ok(())
        }
    }

    fn common(json: Option<&Path>, from: Option<&Path>, plot: Option<&Path>) -> Common {
        Common {
            quick: true,
            json: json.map(Path::to_owned),
            from: from.map(Path::to_owned),
            plot: plot.map(Path::to_owned),
            duration_ms: None,
            count: None,
        }
    }

    #[test]
    fn from_reads_back_what_json_wrote_without_measuring() {
        let dir = std::env::temp_dir().join(format!("ferry-lifecycle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (json_path, svg) = (dir.join("r.json"), dir.join("r.svg"));
        let bench = Fake { runs: Cell::new(0) };
        let measured = main(&bench, &common(Some(&json_path), None, None)).unwrap();
        assert_eq!(bench.runs.get(), 2);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        assert_eq!(doc["benchmark"], "fake");
        assert_eq!(doc["settings"]["sizes"][1], 4096);
        assert_eq!(doc["records"][0]["size"], 64);
        assert!(doc["load"]["wall_s"].as_f64().is_some(), "{}", doc["load"]);
        let redrawn = main(&bench, &common(None, Some(&json_path), Some(&svg))).unwrap();
        assert_eq!(bench.runs.get(), 2, "--from measured");
        assert_eq!(redrawn, measured);
        assert!(svg.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn from_refuses_another_benchmarks_results() {
        let path = std::env::temp_dir().join(format!("ferry-lifecycle-other-{}.json", std::process::id()));
        std::fs::write(&path, r#"{"benchmark": "rpc", "records": []}"#).unwrap();
        let err = main(&Fake { runs: Cell::new(0) }, &common(None, Some(&path), None)).unwrap_err();
        assert!(err.to_string().contains("not `fake`"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn targets_say_met_missed_or_not_measured() {
        assert_eq!(Target::ratio("a", Some(6.0), true, 5.0).verdict(), "met");
        assert_eq!(Target::ratio("a", Some(4.0), true, 5.0).verdict(), "MISSED");
        assert_eq!(Target::ratio("a", Some(0.8), false, 0.9).verdict(), "met");
        assert_eq!(Target::ratio("a", None, true, 5.0).verdict(), "not measured");
        assert_eq!(
            Target::ratio("a", Some(f64::NAN), true, 5.0).verdict(),
            "not measured"
        );
    }
}
