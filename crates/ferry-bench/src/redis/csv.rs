//! `redis-benchmark --csv` output (7.0): a header line, then one line per test, every field
//! quoted, latencies in milliseconds:
//!
//! ```text
//! "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
//! "GET","87719.30","0.300","0.104","0.287","0.383","0.735","4.439"
//! ```
//!
//! Lines that are not quoted (warnings some versions print on stdout) are skipped.

/// The header of 7.0's CSV, field by field.
const HEADER: [&str; 8] = [
    "test",
    "rps",
    "avg_latency_ms",
    "min_latency_ms",
    "p50_latency_ms",
    "p95_latency_ms",
    "p99_latency_ms",
    "max_latency_ms",
];

/// One test's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The test's title (`GET`, or the command line of a custom command).
    pub test: String,
    /// Requests per second.
    pub rps: f64,
    /// Mean latency, ms.
    pub avg_ms: f64,
    /// Smallest latency, ms.
    pub min_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

/// Why the output could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum CsvError {
    /// No header line (`"test","rps",...`) in the output.
    #[error("no CSV header in redis-benchmark's output: {0:?}")]
    NoHeader(String),
    /// The header is not 7.0's.
    #[error("unexpected CSV header {found:?}; expected {expected:?}")]
    Header {
        /// The fields found.
        found: Vec<String>,
        /// 7.0's fields.
        expected: Vec<String>,
    },
    /// A line with the wrong number of fields or a field that is not a number.
    #[error("line {line}: {what} in {text:?}")]
    Line {
        /// 1-based line number in the output.
        line: usize,
        /// What was wrong.
        what: String,
        /// The line.
        text: String,
    },
}

/// The quoted fields of one line: `"a","b"` to `["a", "b"]`. redis-benchmark neither
/// escapes quotes nor leaves fields unquoted; `None` if the line is not of that form.
fn fields(line: &str) -> Option<Vec<String>> {
    let inner = line.trim_end().strip_prefix('"')?.strip_suffix('"')?;
    Some(inner.split("\",\"").map(str::to_owned).collect())
}

/// Parses the whole output into its rows, checking the header.
pub fn parse(output: &str) -> Result<Vec<Row>, CsvError> {
    let mut lines = output.lines().enumerate().filter(|(_, l)| l.starts_with('"'));
    let (_, header) = lines
        .next()
        .ok_or_else(|| CsvError::NoHeader(output.chars().take(300).collect()))?;
    let header = fields(header).unwrap_or_default();
    if header != HEADER {
        return Err(CsvError::Header {
            found: header,
            expected: HEADER.iter().map(|s| (*s).to_owned()).collect(),
        });
    }
    lines
        .map(|(i, text)| {
            let err = |what: String| CsvError::Line {
                line: i + 1,
                what,
                text: text.to_owned(),
            };
            let f = fields(text).ok_or_else(|| err("not a quoted CSV line".to_owned()))?;
            if f.len() != HEADER.len() {
                return Err(err(format!("{} fields, expected {}", f.len(), HEADER.len())));
            }
            let mut nums = [0f64; 7];
            for (k, (v, name)) in f[1..].iter().zip(&HEADER[1..]).enumerate() {
                nums[k] = v
                    .parse()
                    .map_err(|_| err(format!("{name} = {v:?} is not a number")))?;
            }
            let [rps, avg_ms, min_ms, p50_ms, p95_ms, p99_ms, max_ms] = nums;
            Ok(Row {
                test: f[0].clone(),
                rps,
                avg_ms,
                min_ms,
                p50_ms,
                p95_ms,
                p99_ms,
                max_ms,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output of `redis-benchmark --csv -n 20000 -r 100000 -t get,set -d 64` (7.0.15), with
    /// the warning 7.0 prints when the server does not answer `CONFIG GET`.
    const TWO: &str = "WARNING: Could not fetch server CONFIG\n\
\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
\"SET\",\"81632.65\",\"0.322\",\"0.096\",\"0.295\",\"0.463\",\"0.783\",\"1.263\"\n\
\"GET\",\"87719.30\",\"0.300\",\"0.104\",\"0.287\",\"0.383\",\"0.735\",\"4.439\"\n";

    #[test]
    fn rows() {
        let rows = parse(TWO).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[1],
            Row {
                test: "GET".to_owned(),
                rps: 87719.30,
                avg_ms: 0.300,
                min_ms: 0.104,
                p50_ms: 0.287,
                p95_ms: 0.383,
                p99_ms: 0.735,
                max_ms: 4.439,
            }
        );
        let custom = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
\"mget m:__rand_int__ m:__rand_int__\",\"606060.62\",\"0.901\",\"0.272\",\"0.799\",\"1.311\",\"4.775\",\"4.911\"\n";
        let rows = parse(custom).unwrap();
        assert_eq!(rows[0].test, "mget m:__rand_int__ m:__rand_int__");
        assert_eq!(rows[0].p99_ms, 4.775);
    }

    #[test]
    fn refusals() {
        assert!(matches!(parse(""), Err(CsvError::NoHeader(_))));
        assert!(matches!(
            parse("\"test\",\"rps\"\n"),
            Err(CsvError::Header { .. })
        ));
        let short = TWO.replace(",\"1.263\"", "");
        assert!(
            matches!(parse(&short), Err(CsvError::Line { line: 3, .. })),
            "{:?}",
            parse(&short)
        );
        let nan = TWO.replace("87719.30", "fast");
        let e = parse(&nan).unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("rps = \"fast\""), "{e}");
    }
}
