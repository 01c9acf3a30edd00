//! What a test under hostile load measures and checks: a good client's latencies (p50, p99),
//! this process's resident memory and open descriptors, the descriptor limit raised for
//! thousands of connections, hostile actors' threads and the CPU they use, a burner of as much
//! CPU for a case's control half, and a report line per case (printed, and appended to the file
//! `FERRY_HOSTILE_REPORT` names, for `docs/reliability.md`). Nothing here asserts on time:
//! the ratios are recorded, not checked.

use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

mod threads;

pub use threads::{Actor, Burner, CpuUse, CpuWindow, actors_started_by};

/// Latencies of a good client's calls.
#[derive(Debug, Clone, Default)]
pub struct Latencies(Vec<Duration>);

impl Latencies {
    /// No calls yet.
    pub fn new() -> Latencies {
        Latencies::default()
    }

    /// Records one call's latency.
    pub fn record(&mut self, d: Duration) {
        self.0.push(d);
    }

    /// Calls recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q` quantile (0.0 ..= 1.0) by the nearest-rank method; zero with no calls.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// The median.
    pub fn p50(&self) -> Duration {
        self.quantile(0.50)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }
}

/// This process's resident set in bytes (`VmRSS` of `/proc/self/status`). Panics if it
/// cannot be read (Linux only, as every Ferry test).
pub fn rss_bytes() -> u64 {
    rss_bytes_of("self")
}

/// The resident set in bytes of process `pid` (a number, or `self`), from `/proc/PID/status`.
/// Panics if it cannot be read.
pub fn rss_bytes_of(pid: &str) -> u64 {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no VmRSS in {path}"));
    kib * 1024
}

/// The descriptors of process `pid` (a number, or `self`) by what they link to, digits
/// dropped (`socket:[]`, `anon_inode:[eventfd]`, a file's path), counted: to name what a
/// failed descriptor check found left open or closed.
pub fn fd_kinds_of(pid: &str) -> std::collections::BTreeMap<String, usize> {
    let mut kinds = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(target) = std::fs::read_link(entry.path()) {
            let kind = target.to_string_lossy().replace(|c: char| c.is_ascii_digit(), "");
            *kinds.entry(kind).or_insert(0) += 1;
        }
    }
    kinds
}

/// This process's open descriptors (entries of `/proc/self/fd`, less the one listing them).
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("reading /proc/self/fd")
        .count()
        .saturating_sub(1)
}

/// Raises this process's soft limit on open descriptors to at least `want` if the hard limit
/// allows; returns the soft limit now in force (the caller skips, saying why, if it is short).
pub fn raise_fd_limit(want: u64) -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let current = now.current.unwrap_or(u64::MAX);
    if current >= want {
        return current;
    }
    let target = now.maximum.map_or(want, |max| want.min(max));
    let raised = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: now.maximum,
        },
    );
    if raised.is_ok() { target } else { current }
}

/// Whether a thread of this process whose name starts with `name` is asleep (state `S` in
/// `/proc/self/task/*/stat`: blocked in a system call, as an event loop waiting on `epoll`),
/// `None` if no such thread runs. A loop that spins is never seen asleep.
pub fn thread_asleep(name: &str) -> Option<bool> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if !comm.starts_with(name) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).ok()?;
        // `pid (comm) S ...`: the state follows the last `)`.
        let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
        return Some(state == 'S');
    }
    None
}

/// Slowloris: `conns` connections to `addr` (`HOST:PORT`), each sent `request` one byte per
/// `every` (from its start again once whole) until the actor is stopped; it counts the bytes.
pub fn trickle(addr: String, request: Vec<u8>, conns: usize, every: Duration) -> Actor {
    Actor::spawn(1, move |stop, count| {
        let mut streams: Vec<std::net::TcpStream> = (0..conns)
            .map(|_| std::net::TcpStream::connect(&addr).expect("connect"))
            .collect();
        let mut at = 0;
        while !stop.load(Ordering::Relaxed) {
            for s in &mut streams {
                s.write_all(&request[at % request.len()..][..1]).expect("trickle");
                count.fetch_add(1, Ordering::Relaxed);
            }
            at += 1;
            // The pacing of the load (a byte per connection per interval), not a wait for an
            // event.
            std::thread::sleep(every);
        }
    })
}

/// Reads (and drops) what the server sends until it closes the connection (end of file or
/// a reset). Panics on any other error, such as the read timeout the caller set: the server
/// did not close it.
pub fn read_until_closed(mut s: impl Read) {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

/// A series sampled once a second, and whether it grows: the least-squares slope per sample
/// with its 95 % confidence interval (the t quantile of 2.0, for thirty samples or more), and
/// the growth that slope makes over the series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// Units per sample.
    pub slope: f64,
    /// Half the confidence interval's width.
    pub half_width: f64,
    /// `slope` times the samples' span.
    pub growth: f64,
}

impl Trend {
    /// The trend of `ys` (at least three samples, equally spaced).
    pub fn of(ys: &[f64]) -> Trend {
        let n = ys.len() as f64;
        assert!(ys.len() >= 3, "a trend needs three samples");
        let mean_x = (n - 1.0) / 2.0;
        let mean_y = ys.iter().sum::<f64>() / n;
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for (i, y) in ys.iter().enumerate() {
            let dx = i as f64 - mean_x;
            sxx += dx * dx;
            sxy += dx * (y - mean_y);
        }
        let slope = sxy / sxx;
        let sse: f64 = ys
            .iter()
            .enumerate()
            .map(|(i, y)| {
                let fit = mean_y + slope * (i as f64 - mean_x);
                (y - fit) * (y - fit)
            })
            .sum();
        let se = (sse / (n - 2.0) / sxx).sqrt();
        Trend {
            slope,
            half_width: 2.0 * se,
            growth: slope * (n - 1.0),
        }
    }

    /// Does not grow beyond noise: the slope is not above zero by more than its confidence
    /// interval (no rise the noise cannot explain), or the growth over the series is under
    /// `bound` (a rise too small to matter at this length, stated by the caller). A series
    /// that falls does not grow: a heap that settles, or buffers given back, are not a leak.
    pub fn does_not_grow(&self, bound: f64) -> bool {
        self.slope <= self.half_width || self.growth < bound
    }
}

/// One hostile-load case's figures: the good client's latencies quiet, loaded (while the case
/// runs) and in the control half (after the case, while a [`Burner`] takes the CPU the case's
/// actors took, with no I/O to the server), the CPU of both, and the process's resident set.
/// [`report`](Self::report) prints them as a Markdown table row.
#[derive(Debug, Clone)]
pub struct CaseReport<'a> {
    /// The server (a section of `docs/reliability.md`).
    pub server: &'a str,
    /// The case.
    pub case: &'a str,
    /// The good client's calls with nothing else running.
    pub quiet: &'a Latencies,
    /// The same calls during the case.
    pub loaded: &'a Latencies,
    /// The same calls after the case, beside the burner.
    pub control: &'a Latencies,
    /// The case's actors' threads during the loaded half ([`actors_started_by`]).
    pub actors: &'a CpuUse,
    /// The burner's threads during the control half.
    pub burner: &'a CpuUse,
    /// The resident set after the case, in bytes.
    pub rss: u64,
}

impl CaseReport<'_> {
    /// The row: case, calls, quiet p50/p99, loaded p50/p99, the p99 ratio (loaded over
    /// quiet), control p50/p99, the cores the actors and the burner kept busy, the loaded p99
    /// over the control's, RSS in MiB.
    pub fn row(&self) -> String {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let ratio = |a: &Latencies, b: &Latencies| us(a.p99()) / us(b.p99()).max(f64::MIN_POSITIVE);
        format!(
            "| {} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.2} | {:.0} / {:.0} | {:.2} / {:.2} | {:.2} | {:.0} |",
            self.case,
            self.loaded.len(),
            us(self.quiet.p50()),
            us(self.quiet.p99()),
            us(self.loaded.p50()),
            us(self.loaded.p99()),
            ratio(self.loaded, self.quiet),
            us(self.control.p50()),
            us(self.control.p99()),
            self.actors.cores(),
            self.burner.cores(),
            ratio(self.loaded, self.control),
            self.rss as f64 / (1 << 20) as f64,
        )
    }

    /// Prints the row (with the server's name) and, if `FERRY_HOSTILE_REPORT` names a file,
    /// appends `server<TAB>row` to it (the documented command sorts them into sections).
    pub fn report(&self) {
        let row = self.row();
        println!("hostile [{}] {row}", self.server);
        if let Some(path) = std::env::var_os("FERRY_HOSTILE_REPORT") {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .expect("opening FERRY_HOSTILE_REPORT");
            writeln!(file, "{}\t{row}", self.server).expect("writing FERRY_HOSTILE_REPORT");
        }
    }
}

/// The table header of [`CaseReport::row`].
pub const REPORT_HEADER: &str = "| case | calls | quiet p50 / p99 (µs) | loaded p50 / p99 (µs) | p99 ratio | \
     control p50 / p99 (µs) | CPU of actors / burner (cores) | loaded / control p99 | RSS (MiB) |\n\
     |---|---|---|---|---|---|---|---|---|";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut l = Latencies::new();
        assert_eq!(l.p99(), Duration::ZERO);
        for ms in (1..=100).rev() {
            l.record(Duration::from_millis(ms));
        }
        assert_eq!(l.p50(), Duration::from_millis(50));
        assert_eq!(l.p99(), Duration::from_millis(99));
        assert_eq!(l.quantile(1.0), Duration::from_millis(100));
        assert_eq!(l.quantile(0.0), Duration::from_millis(1));
    }

    #[test]
    fn trends_flat_and_growing() {
        let noise = [3.0, 5.0, 4.0, 6.0, 3.0, 5.0, 4.0, 6.0, 3.0, 5.0];
        let flat = Trend::of(&noise);
        assert!(flat.does_not_grow(0.0), "{flat:?}");
        let leak: Vec<f64> = noise
            .iter()
            .enumerate()
            .map(|(i, y)| y + 10.0 * i as f64)
            .collect();
        let leak = Trend::of(&leak);
        assert!((leak.slope - 10.0).abs() < 1.0, "{leak:?}");
        assert!(!leak.does_not_grow(50.0), "{leak:?}");
        assert!(leak.does_not_grow(200.0), "under a bound it is allowed");
        // A fall is not growth, however steep: the test's bound of 0 admits no rise at all.
        let fall: Vec<f64> = noise
            .iter()
            .enumerate()
            .map(|(i, y)| y - 10.0 * i as f64)
            .collect();
        let fall = Trend::of(&fall);
        assert!(fall.slope < -fall.half_width, "{fall:?}");
        assert!(fall.does_not_grow(0.0), "{fall:?}");
    }

    #[test]
    fn a_row_fills_the_headers_columns() {
        let lat = |us: u64| {
            let mut l = Latencies::new();
            (0..100).for_each(|_| l.record(Duration::from_micros(us)));
            l
        };
        let (quiet, loaded, control) = (lat(10), lat(40), lat(20));
        let cpu = |ms: &[u64]| CpuUse {
            cpu: ms.iter().map(|&m| Duration::from_millis(m)).collect(),
            wall: Duration::from_millis(100),
        };
        let (actors, burner) = (cpu(&[90, 80]), cpu(&[85, 80]));
        let row = CaseReport {
            server: "s",
            case: "c",
            quiet: &quiet,
            loaded: &loaded,
            control: &control,
            actors: &actors,
            burner: &burner,
            rss: 3 << 20,
        }
        .row();
        assert_eq!(
            row,
            "| c | 100 | 10 / 10 | 40 / 40 | 4.00 | 20 / 20 | 1.70 / 1.65 | 2.00 | 3 |"
        );
        let columns = |line: &str| line.matches('|').count();
        for line in REPORT_HEADER.lines() {
            assert_eq!(columns(line), columns(&row), "{line}");
        }
    }

    #[test]
    fn no_threads_use_zero_cores_not_minus_zero() {
        // The first run printed "-0.00 / -0.00" for the cases without actor threads.
        let none = CpuUse {
            cpu: Vec::new(),
            wall: Duration::from_millis(100),
        };
        assert_eq!(format!("{:.2}", none.cores()), "0.00");
    }

    #[test]
    fn this_process_has_memory_and_descriptors() {
        assert!(rss_bytes() > 0);
        // The other tests of this binary open files of their own meanwhile (the threads'
        // tests read `/proc` in a loop): a count they moved is tried again, a hundred times at
        // most, and a count that is wrong fails every try.
        let counted = (0..100).any(|_| {
            let before = open_fds();
            let f = std::fs::File::open("/proc/self/status").unwrap();
            let open = open_fds();
            drop(f);
            open == before + 1 && open_fds() == before
        });
        assert!(
            counted,
            "open_fds never counted one more file open, then one less"
        );
        assert!(raise_fd_limit(64) >= 64);
    }
}
