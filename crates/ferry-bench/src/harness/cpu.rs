//! CPU accounting, the one place every benchmark reads CPU time from: the calling thread's
//! ([`thread_cpu_time`], `getrusage(RUSAGE_THREAD)`), this process's threads by name
//! ([`threads_cpu_time`]), another process's ([`cpu`]: a server's, `redis-benchmark`'s), a
//! core's or the whole machine's ([`core`], [`machine`]: `/proc/stat`).
//!
//! For a process, the precise source is `/proc/PID/task/TID/schedstat`, whose first field is
//! the thread's time on a CPU in nanoseconds (`se.sum_exec_runtime`), summed over the
//! process's threads. `/proc/PID/stat` (fields 14 and 15, `utime` and `stime`) is the
//! fallback: it also counts threads that have exited, but in clock ticks of 10 ms. A kernel
//! built without `CONFIG_SCHED_INFO` shows zeros in `schedstat`; then the ticks are used.
//!
//! `/proc/stat`'s per-CPU lines tell how busy a core was whoever ran on it: what the server's
//! core did beyond the server's own time is other processes, kernel threads and the
//! hypervisor's steal, the disturbance of a run on a shared machine ([`super::load`] reads
//! the same for the whole machine over a run).

use std::io;
use std::time::Duration;

/// Clock ticks per second of `/proc/PID/stat` (`USER_HZ`): 100 on every Linux architecture
/// this project builds for (the kernel converts to it for user space, whatever its `HZ`).
pub(super) const USER_HZ: u64 = 100;

/// The fields of `/proc/PID/stat` the harness reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Field 3: `R`, `S`, `D`, `Z` (exited, not yet reaped), ...
    pub state: char,
    /// Field 4: the parent's process id.
    pub ppid: u32,
    /// Field 14: user time, clock ticks.
    pub utime: u64,
    /// Field 15: system time, clock ticks.
    pub stime: u64,
    /// Field 16: user time of the children it has waited for, clock ticks.
    pub cutime: u64,
    /// Field 17: system time of the children it has waited for, clock ticks.
    pub cstime: u64,
}

/// Parses `/proc/PID/stat`. The command name (field 2) is in parentheses and may itself
/// hold spaces and parentheses, so the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    // `rest` starts at field 3.
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let mut fields = fields.skip(14 - 5);
    let mut next = || fields.next()?.parse().ok();
    Some(Stat {
        state,
        ppid,
        utime: next()?,
        stime: next()?,
        cutime: next()?,
        cstime: next()?,
    })
}

/// Parses the first field of `/proc/PID/task/TID/schedstat`: nanoseconds on a CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// Parses the `Cpus_allowed_list:` line of `/proc/PID/status` (e.g. `1` or `0-1`).
pub fn parse_cpus_allowed(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_owned())
}

/// One CPU's time from `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CoreTicks {
    /// user + nice + system + irq + softirq + steal: the time the CPU ran anything (or the
    /// hypervisor kept it).
    pub busy: u64,
    /// busy + idle + iowait.
    pub total: u64,
    /// steal: the time the hypervisor ran something else on the CPU.
    pub steal: u64,
}

impl CoreTicks {
    /// Busy time from `before` to `self`, in seconds.
    pub fn busy_since(self, before: CoreTicks) -> f64 {
        self.busy.saturating_sub(before.busy) as f64 / USER_HZ as f64
    }
}

/// Parses CPU `cpu`'s line (`cpuN user nice system idle iowait irq softirq steal ...`) of
/// `/proc/stat`; `None` for the first line, every CPU's sum.
pub fn parse_core(stat: &str, cpu: Option<usize>) -> Option<CoreTicks> {
    let name = cpu.map_or_else(|| "cpu".to_owned(), |c| format!("cpu{c}"));
    let line = stat
        .lines()
        .find(|l| l.split_ascii_whitespace().next() == Some(name.as_str()))?;
    let v: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    Some(CoreTicks {
        busy,
        total: busy + at(3) + at(4),
        steal: at(7),
    })
}

/// Reads CPU `cpu`'s times from `/proc/stat`.
pub fn core(cpu: usize) -> io::Result<CoreTicks> {
    read_core(Some(cpu))
}

/// Reads every CPU's times summed (the first line of `/proc/stat`).
pub fn machine() -> io::Result<CoreTicks> {
    read_core(None)
}

fn read_core(cpu: Option<usize>) -> io::Result<CoreTicks> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_core(&text, cpu).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "no {} line in /proc/stat",
                cpu.map_or("cpu".to_owned(), |c| format!("cpu{c}"))
            ),
        )
    })
}

/// One reading of a process's CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuReading {
    /// Sum of its threads' `schedstat` nanoseconds; `None` if a thread's file could not be
    /// read or parsed.
    pub sched_ns: Option<u64>,
    /// `utime + stime` of the whole process, in nanoseconds (10 ms steps).
    pub tick_ns: u64,
}

impl CpuReading {
    /// Whether the precise source is usable: read, and not all zeros on a process that has
    /// used ticks (a kernel without `CONFIG_SCHED_INFO`).
    pub fn precise(self) -> bool {
        matches!(self.sched_ns, Some(ns) if ns > 0 || self.tick_ns == 0)
    }

    /// The CPU time used since the process started, in nanoseconds, and its source.
    pub fn total(self) -> (u64, Source) {
        match self.sched_ns {
            Some(ns) if self.precise() => (ns, Source::Schedstat),
            _ => (self.tick_ns, Source::Ticks),
        }
    }

    /// The CPU time used from `before` to `self`, in nanoseconds, and whether it came from
    /// `schedstat` (precise) or ticks.
    pub fn since(self, before: CpuReading) -> (u64, Source) {
        match (self.sched_ns, before.sched_ns) {
            (Some(a), Some(b)) if self.precise() && before.precise() && a >= b => (a - b, Source::Schedstat),
            _ => (self.tick_ns.saturating_sub(before.tick_ns), Source::Ticks),
        }
    }
}

/// Where a CPU time came from (its name in the results: `schedstat`, `stat-ticks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `/proc/PID/task/*/schedstat`, nanoseconds.
    Schedstat,
    /// `/proc/PID/stat` clock ticks (10 ms).
    #[serde(rename = "stat-ticks")]
    Ticks,
}

/// Reads `/proc/PID/stat`.
pub fn stat(pid: u32) -> io::Result<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat(&text)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/stat: {text:?}")))
}

/// Reads the CPU time of process `pid` (all its threads). Works on a zombie too (exited, not
/// yet reaped): that is how the harness reads `redis-benchmark`'s total.
pub fn cpu(pid: u32) -> io::Result<CpuReading> {
    let st = stat(pid)?;
    let tick_ns = (st.utime + st.stime) * (1_000_000_000 / USER_HZ);
    let mut sched_ns = Some(0u64);
    match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => {
            for task in tasks {
                let path = task?.path().join("schedstat");
                // A thread that exits between the listing and the read is gone from both
                // readings' sums alike; `stat`'s ticks keep its time.
                let ns = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| parse_schedstat(&t));
                sched_ns = match (sched_ns, ns) {
                    (Some(sum), Some(ns)) => Some(sum + ns),
                    _ => None,
                };
            }
        }
        Err(_) => {
            sched_ns = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()
                .and_then(|t| parse_schedstat(&t));
        }
    }
    Ok(CpuReading { sched_ns, tick_ns })
}

/// The CPUs process `pid` may run on, as the kernel lists them (`1`, `0-1`).
pub fn cpus_allowed(pid: u32) -> Option<String> {
    parse_cpus_allowed(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// CPU time used by the calling thread so far, user plus system (`getrusage(RUSAGE_THREAD)`).
///
/// Only the calling thread's own time: time the kernel spends on its behalf in interrupt
/// context, or in other threads, is not included.
pub fn thread_cpu_time() -> Duration {
    // getrusage(RUSAGE_THREAD) on the calling thread cannot fail on Linux; zero is a safe answer.
    super::sys::thread_cpu_time().unwrap_or_default()
}

/// The CPU time, so far, of this process's threads whose name starts with `prefix`
/// (`/proc/self/task/*/comm` and `schedstat`): a server's threads, read from the benchmark's.
pub fn threads_cpu_time(prefix: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .map(|task| task.path())
        .filter(|dir| {
            std::fs::read_to_string(dir.join("comm")).is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .filter_map(|dir| parse_schedstat(&std::fs::read_to_string(dir.join("schedstat")).ok()?))
        .sum();
    Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `redis-server` line from this machine, with a command name that has spaces and a
    /// parenthesis spliced in to check the field counting.
    const STAT: &str = "21696 (redis-server *:7777) S 1 21695 17702 0 -1 4194624 1335 0 0 0 \
                        57 102 0 0 20 0 5 0 878012 104857600 2516 18446744073709551615 1 1 0 0 \
                        0 0 0 4097 17642 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn stat_fields() {
        assert_eq!(
            parse_stat(STAT),
            Some(Stat {
                state: 'S',
                ppid: 1,
                utime: 57,
                stime: 102,
                cutime: 0,
                cstime: 0,
            })
        );
        let odd = STAT.replace("(redis-server *:7777)", "(a) b (c))");
        assert_eq!(parse_stat(&odd).map(|s| (s.utime, s.stime)), Some((57, 102)));
        let zombie = "21006 (sh) Z 21003 21003 17702 0 -1 4228172 0 0 0 0 20 0 3 4 20 0 1 0";
        assert_eq!(
            parse_stat(zombie),
            Some(Stat {
                state: 'Z',
                ppid: 21003,
                utime: 20,
                stime: 0,
                cutime: 3,
                cstime: 4,
            })
        );
        assert_eq!(parse_stat("21006 (sh) Z 1 2"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn schedstat_and_status() {
        assert_eq!(parse_schedstat("206660386 178855 8\n"), Some(206_660_386));
        assert_eq!(parse_schedstat(""), None);
        let status = "Name:\tredis-server\nCpus_allowed:\t2\nCpus_allowed_list:\t1\nMems_allowed:\t1\n";
        assert_eq!(parse_cpus_allowed(status).as_deref(), Some("1"));
        assert_eq!(parse_cpus_allowed("Name:\tx\n"), None);
    }

    #[test]
    fn core_lines() {
        let stat = "cpu  1149004 0 537018 596829 5148 0 61203 2418 0 0\n\
                    cpu0 547808 0 267956 326704 1928 0 30276 1211 0 0\n\
                    cpu1 601196 0 269062 270124 3220 0 30926 1206 0 0\n\
                    intr 13382644 0 0\n";
        let c1 = parse_core(stat, Some(1)).unwrap();
        assert_eq!(c1.busy, 601_196 + 269_062 + 30_926 + 1206);
        assert_eq!(c1.total, c1.busy + 270_124 + 3220);
        assert_eq!(
            parse_core(stat, Some(0)).unwrap().busy,
            547_808 + 267_956 + 30_276 + 1211
        );
        assert_eq!(parse_core(stat, Some(2)), None);
        assert_eq!(
            parse_core(stat, None).unwrap().busy,
            1_149_004 + 537_018 + 61_203 + 2418
        );
        // Old kernels have fewer columns.
        assert_eq!(
            parse_core("cpu3 1 2 3 4\n", Some(3)),
            Some(CoreTicks {
                busy: 6,
                total: 10,
                steal: 0
            })
        );
        let later = CoreTicks {
            busy: c1.busy + 250,
            ..c1
        };
        assert_eq!(later.busy_since(c1), 2.5);
        assert!(core(0).is_ok() && machine().is_ok());
    }

    #[test]
    fn readings_prefer_schedstat() {
        let r = |sched: Option<u64>, ticks: u64| CpuReading {
            sched_ns: sched,
            tick_ns: ticks * 10_000_000,
        };
        assert_eq!(
            r(Some(3_500_000), 0).since(r(Some(1_000_000), 0)),
            (2_500_000, Source::Schedstat)
        );
        // schedstat all zeros while ticks advance: a kernel without sched_info.
        assert_eq!(r(Some(0), 7).since(r(Some(0), 2)), (50_000_000, Source::Ticks));
        // A thread's file unreadable in one reading.
        assert_eq!(r(None, 7).since(r(Some(5), 2)), (50_000_000, Source::Ticks));
        assert_eq!(r(Some(5), 0).total(), (5, Source::Schedstat));
        assert_eq!(r(None, 1).total(), (10_000_000, Source::Ticks));
    }

    #[test]
    fn thread_times_advance() {
        let spin = || {
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < std::time::Duration::from_millis(30) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        let before = thread_cpu_time();
        spin();
        assert!(thread_cpu_time() > before);
        let named = std::thread::Builder::new()
            .name("cpu-test-spin".into())
            .spawn(move || {
                spin();
                threads_cpu_time("cpu-test-spin")
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(named > Duration::ZERO && threads_cpu_time("no-such-thread-name") == Duration::ZERO);
    }

    #[test]
    fn reads_this_process() {
        let pid = std::process::id();
        // Spin until this thread has used 20 ms of CPU (not 20 ms of a busy machine's wall
        // time: regression, it once got 5 ms of CPU in 30 ms of wall time under load).
        let start = thread_cpu_time();
        let mut x = 0u64;
        while thread_cpu_time() - start < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let mine = std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|t| parse_schedstat(&t))
            .expect("/proc/thread-self/schedstat");
        let reading = cpu(pid).expect("/proc/self");
        // The process's sum holds this thread's time. (Not a difference of two sums: other
        // tests' threads that exit between two readings leave the later sum, so a difference
        // fell short of this thread's 20 ms when they ran beside it.)
        assert!(mine >= 10_000_000, "this thread's schedstat: {mine} ns");
        assert!(
            reading.sched_ns.is_some_and(|sum| sum >= mine),
            "{reading:?} against this thread's {mine} ns"
        );
        assert!(cpus_allowed(pid).is_some());
        // The process's state is its main thread's, which may be waiting for this test.
        assert!(stat(pid).is_ok());
    }
}
