//! A busy machine on demand: [`BusyLoops`] starts CPU-bound child processes that spin until
//! dropped, so a test can check that a command still does its job while other work runs
//! (the way users' machines are: a build, another server, a test suite), and [`wait_until`]
//! waits for a condition instead of a fixed delay.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `n` busy loops (`sh -c 'while :; do :; done'`), each its own process at the default
/// priority, killed and reaped when this is dropped (also when the test panics).
#[derive(Debug)]
pub struct BusyLoops(Vec<Child>);

impl BusyLoops {
    /// Starts `n` busy loops. Panics if `sh` cannot be started (every Linux machine has it).
    pub fn start(n: usize) -> BusyLoops {
        let children = (0..n)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("starting a busy loop (sh)")
            })
            .collect();
        BusyLoops(children)
    }

    /// How many are still running (each should be, until dropped).
    pub fn running(&mut self) -> usize {
        self.0
            .iter_mut()
            .filter_map(|c| c.try_wait().ok())
            .filter(Option::is_none)
            .count()
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls `cond` (every millisecond at most) until it holds, and panics naming `what` if it
/// has not by `limit`: the wait a fixed sleep stood for, with a hang guard.
pub fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waited {limit:?} for {what}, and it did not happen"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_loops_run_until_dropped() {
        let mut busy = BusyLoops::start(2);
        assert_eq!(busy.running(), 2);
        let pids: Vec<u32> = busy.0.iter().map(Child::id).collect();
        drop(busy);
        for pid in pids {
            // Reaped by the drop: no /proc entry is left (a zombie would still have one).
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "busy loop {pid} outlived its guard"
            );
        }
    }

    #[test]
    fn wait_until_returns_once_true_and_panics_when_never() {
        let mut n = 0;
        wait_until("the third poll", Duration::from_secs(5), || {
            n += 1;
            n == 3
        });
        assert_eq!(n, 3);
        let never = std::panic::catch_unwind(|| wait_until("never", Duration::from_millis(20), || false));
        assert!(never.is_err());
    }
}
