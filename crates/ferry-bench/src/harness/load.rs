//! How busy the machine was while a benchmark ran: the load average at the start and the end,
//! and the CPU time other processes used over the run (`/proc/stat`'s busy time of every CPU,
//! less this process's and its children's). It goes into every results file's header, and a
//! run on a busy machine says so on stdout: its figures share the cores with someone else.
//!
//! "Ours" is this process (all its threads, `/proc/self/stat`'s `utime + stime`), the
//! children it has reaped (`cutime + cstime`) and the descendants still running at the end
//! (redis-server, redis-benchmark, Ferry servers started as child processes), so that a
//! benchmark's own servers never count as other work.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::cpu::{self, CoreTicks, USER_HZ};

/// Other processes' CPU, in CPUs (CPU-seconds per second), above which a run counts as busy.
const BUSY: f64 = 0.1;

/// Takes the readings at the start of a run; [`LoadMeter::finish`] takes the end's.
#[derive(Debug)]
pub struct LoadMeter {
    started: Instant,
    loadavg: Option<[f64; 3]>,
    machine: Option<CoreTicks>,
    ours_ticks: u64,
}

/// The machine's load over one run, as written into the results' header (`"load"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// `/proc/loadavg`'s 1, 5 and 15 minute averages when the run started (`null` if
    /// unreadable).
    pub loadavg_start: Option<[f64; 3]>,
    /// The same at the end.
    pub loadavg_end: Option<[f64; 3]>,
    /// The run's wall time, seconds.
    pub wall_s: f64,
    /// CPU-seconds this process and its children used over the run.
    pub ours_cpu_s: f64,
    /// CPU-seconds every other process (and the kernel's own threads, and interrupts) used
    /// over the run: the machine's busy time less ours. `null` if `/proc/stat` was
    /// unreadable.
    pub others_cpu_s: Option<f64>,
    /// CPU-seconds the hypervisor kept from this machine's CPUs (`steal`), `null` likewise.
    pub steal_s: Option<f64>,
}

impl LoadMeter {
    /// Reads the start of a run.
    pub fn start() -> LoadMeter {
        LoadMeter {
            started: Instant::now(),
            loadavg: loadavg(),
            machine: cpu::machine().ok(),
            ours_ticks: ours_ticks(),
        }
    }

    /// Reads the end of the run.
    pub fn finish(self) -> MachineLoad {
        let machine = cpu::machine().ok();
        let ours_s = ours_ticks().saturating_sub(self.ours_ticks) as f64 / USER_HZ as f64;
        let (others, steal) = match (self.machine, machine) {
            (Some(a), Some(b)) => (
                Some((b.busy_since(a) - ours_s).max(0.0)),
                Some(b.steal.saturating_sub(a.steal) as f64 / USER_HZ as f64),
            ),
            _ => (None, None),
        };
        MachineLoad {
            loadavg_start: self.loadavg,
            loadavg_end: loadavg(),
            wall_s: self.started.elapsed().as_secs_f64(),
            ours_cpu_s: ours_s,
            others_cpu_s: others,
            steal_s: steal,
        }
    }
}

impl MachineLoad {
    /// Other processes' average CPU use over the run, in CPUs (`None` if unknown).
    pub fn others_cpus(&self) -> Option<f64> {
        Some(self.others_cpu_s? / self.wall_s.max(1e-9))
    }

    /// A warning when other work used at least a tenth of a CPU on average (steal included),
    /// `None` on a quiet machine or when it cannot be told.
    pub fn warning(&self) -> Option<String> {
        let others = self.others_cpus()?;
        let steal = self.steal_s.unwrap_or(0.0) / self.wall_s.max(1e-9);
        if others + steal < BUSY {
            return None;
        }
        Some(format!(
            "warning: the machine was busy: other processes used {others:.2} CPUs on average over this \
             {:.0} s run{} (load average {}); its figures shared the cores and may be lower and noisier \
             than on a quiet machine",
            self.wall_s,
            if steal >= 0.01 {
                format!(", and the hypervisor kept {steal:.2} CPUs")
            } else {
                String::new()
            },
            self.loadavg_end.map_or("unknown".to_owned(), |l| format!(
                "{:.2} {:.2} {:.2}",
                l[0], l[1], l[2]
            ))
        ))
    }
}

/// `/proc/loadavg`'s three averages.
fn loadavg() -> Option<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut f = text.split_ascii_whitespace().map(|v| v.parse::<f64>().ok());
    Some([f.next()??, f.next()??, f.next()??])
}

/// Clock ticks this process, its reaped children and its live descendants have used.
fn ours_ticks() -> u64 {
    let me = std::process::id();
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|t| cpu::parse_stat(&t))
        .map_or(0, |s| s.utime + s.stime + s.cutime + s.cstime);
    own + descendants(me)
        .into_iter()
        .filter_map(|pid| cpu::stat(pid).ok())
        .map(|s| s.utime + s.stime)
        .sum::<u64>()
}

/// The processes below `root` (children, grandchildren, ...), from every `/proc/PID/stat`'s
/// parent field.
fn descendants(root: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, cpu::stat(pid).ok()?.ppid)))
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parents
                .iter()
                .filter(|&&(_, pp)| pp == parent)
                .map(|&(pid, _)| pid),
        );
        i += 1;
    }
    out.remove(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(others: Option<f64>, steal: Option<f64>) -> MachineLoad {
        MachineLoad {
            loadavg_start: Some([0.1, 0.2, 0.3]),
            loadavg_end: Some([2.0, 1.0, 0.5]),
            wall_s: 10.0,
            ours_cpu_s: 19.0,
            others_cpu_s: others,
            steal_s: steal,
        }
    }

    #[test]
    fn busy_is_a_tenth_of_a_cpu_of_other_work() {
        assert_eq!(load(Some(0.5), Some(0.0)).warning(), None);
        let w = load(Some(15.0), Some(0.0))
            .warning()
            .expect("1.5 CPUs of other work");
        assert!(w.contains("1.50 CPUs") && w.contains("2.00 1.00 0.50"), "{w}");
        let stolen = load(Some(0.0), Some(2.0))
            .warning()
            .expect("a fifth of a CPU stolen");
        assert!(stolen.contains("hypervisor kept 0.20 CPUs"), "{stolen}");
        assert_eq!(load(None, None).warning(), None);
    }

    #[test]
    fn loadavg_lines() {
        assert_eq!(
            parse_loadavg("0.52 1.03 0.98 2/611 48213\n"),
            Some([0.52, 1.03, 0.98])
        );
        assert_eq!(parse_loadavg("0.52 x"), None);
    }

    #[test]
    fn our_children_count_as_ours() {
        // A child of ours that spins: ours, not others'.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let meter = LoadMeter::start();
        assert!(descendants(std::process::id()).contains(&child.id()));
        child.wait().unwrap();
        let l = meter.finish();
        assert!(l.ours_cpu_s > 0.0, "{l:?}");
        assert!(l.others_cpu_s.is_some() && l.loadavg_end.is_some(), "{l:?}");
    }
}
