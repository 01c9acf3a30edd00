//! A soak (issue 28): a server driven for `FERRY_SOAK_SECONDS` (default 60, what CI runs; the
//! documented long run is 600) at 80 % of the capacity each client measured first, every
//! reply checked by the client. Once a second the server's resident set, pool bytes in use
//! and open descriptors are sampled; over the last 80 % of the run none may grow beyond noise
//! ([`Trend::does_not_grow`]): its slope is not above zero by more than its 95 % confidence
//! interval, or the growth the slope makes over the window is under the bound the caller
//! states (far below what a leak of anything per request would make: at 80 % of capacity a
//! soak makes thousands to hundreds of thousands of calls).
//!
//! The figures are printed, and appended to the file `FERRY_HOSTILE_REPORT` names (as the
//! hostile tests' rows are); `docs/reliability.md` keeps them.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::load::Trend;
use crate::{Rng, spawn};

/// One client: made on its own thread by its factory; each call of the closure makes one
/// request with values from the `Rng` and checks its reply (panicking if it is wrong).
pub type Client = Box<dyn FnMut(&mut Rng)>;

/// A client's name (in the report) and what makes it, on the client's thread.
pub type MakeClient = (&'static str, Box<dyn FnOnce() -> Client + Send>);

/// What is sampled once a second, with the growth under which its trend is too small to
/// matter.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Resident set, bytes.
    pub rss: f64,
    /// Pool bytes in use.
    pub pool: f64,
    /// Open descriptors.
    pub fds: f64,
}

/// The soak's length: `FERRY_SOAK_SECONDS`, 60 by default, at least 10.
pub fn seconds() -> u64 {
    std::env::var("FERRY_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60u64)
        .max(10)
}

/// Runs the soak of `server` (its name in the report) with `clients`, sampling `sample()`
/// (resident set, pool bytes in use, open descriptors) once a second; panics unless every
/// series stays within `bounds` and calls were made.
pub fn run(server: &str, clients: Vec<MakeClient>, mut sample: impl FnMut() -> [f64; 3], bounds: Bounds) {
    let seconds = seconds();
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let names: Vec<&str> = clients.iter().map(|(name, _)| *name).collect();
    let threads: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, (name, make))| {
            let (stop, calls) = (Arc::clone(&stop), Arc::clone(&calls));
            spawn(&format!("soak client {name}"), move || {
                let mut call = make();
                let mut rng = Rng::new(i as u64 + 2);
                let rate = 0.8 * capacity(&mut call, &mut rng, Duration::from_secs(2));
                let every = Duration::from_secs_f64(1.0 / rate);
                let start = Instant::now();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Open-loop pacing: the nth call is due at start + n × every; behind, it
                    // goes at once.
                    let due = start + every.mul_f64(n as f64);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    call(&mut rng);
                    n += 1;
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                rate
            })
        })
        .collect();

    let mut samples: Vec<[f64; 3]> = Vec::new();
    let start = Instant::now();
    for s in 1..=seconds {
        // Sampling once a second is the soak's clock, not a wait for an event.
        let due = start + Duration::from_secs(s);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        samples.push(sample());
    }
    stop.store(true, Ordering::Relaxed);
    let rates: Vec<f64> = threads.into_iter().map(|c| c.join()).collect();
    let total = calls.load(Ordering::Relaxed);

    let window = &samples[samples.len() / 5..];
    let series = |k: usize| window.iter().map(|s| s[k]).collect::<Vec<_>>();
    let trends = [
        ("RSS (bytes)", Trend::of(&series(0)), bounds.rss),
        ("pool bytes in use", Trend::of(&series(1)), bounds.pool),
        ("open descriptors", Trend::of(&series(2)), bounds.fds),
    ];
    let capacities: Vec<String> = rates.iter().map(|r| format!("{:.0}", r / 0.8)).collect();
    let mut report = format!(
        "soak [{server}] {seconds} s at 80 % of {} calls/s ({}), {total} calls, every reply checked",
        capacities.join(" + "),
        names.join(" + "),
    );
    for (what, t, bound) in &trends {
        report += &format!(
            "; {what}: slope {:.1}/s ± {:.1}, growth {:.0} over the last 80 % (bound {bound:.0})",
            t.slope, t.half_width, t.growth
        );
    }
    println!("{report}");
    if let Some(path) = std::env::var_os("FERRY_HOSTILE_REPORT") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("report file");
        writeln!(f, "soak\t{report}").expect("write");
    }
    assert!(total > 0, "the soak made no call");
    for (what, t, bound) in trends {
        assert!(
            t.does_not_grow(bound),
            "{server}: {what} grows: {t:?} (bound {bound})"
        );
    }
}

/// Calls per second `call` makes back to back for `d`.
fn capacity(call: &mut Client, rng: &mut Rng, d: Duration) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < d {
        call(rng);
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}
