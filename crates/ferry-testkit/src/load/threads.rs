//! Threads of a test that load the machine beside the server it measures: hostile [`Actor`]s,
//! the [`Burner`] that takes the same CPU with no I/O (a hostile case's control half), and the
//! CPU each used, as the kernel accounts it (`/proc/self/task/TID/schedstat`).
//!
//! Every thread here records its kernel thread id as it starts and stays (parked) once its work
//! is done until it is stopped: its account can be read until then, and its id is not free for
//! another thread of the process meanwhile.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A kernel thread id of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tid(i32);

impl Tid {
    /// The calling thread's.
    fn current() -> Tid {
        Tid(rustix::thread::gettid().as_raw_nonzero().get())
    }

    /// Its time on CPU (user and system, the kernel's work for its system calls among it):
    /// the first field of `/proc/self/task/TID/schedstat`, in nanoseconds. Of a thread on CPU
    /// as it is read, what it ran since its last switch or scheduler tick (at most a tick: 4 ms
    /// at `CONFIG_HZ=250`) is not in it yet. Panics if the thread is gone (every thread here
    /// stays until stopped, and is read before).
    fn cpu(self) -> Duration {
        let path = format!("/proc/self/task/{}/schedstat", self.0);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
        let ns = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no time on CPU in {path}: {text:?}"));
        Duration::from_nanos(ns)
    }
}

/// Threads that run `f` each, then wait to be stopped (see the module's doc).
#[derive(Debug)]
struct Threads {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
    tids: Vec<Tid>,
}

impl Threads {
    /// Starts one thread named `name` per item of `args`, running `f(arg, stop)`; returns once
    /// each has recorded its id.
    fn spawn<A: Send + 'static>(
        name: &str,
        args: impl IntoIterator<Item = A>,
        f: impl Fn(A, &AtomicBool) + Send + Sync + 'static,
    ) -> Threads {
        let stop = Arc::new(AtomicBool::new(false));
        let f = Arc::new(f);
        let (tx, rx) = mpsc::channel();
        let handles: Vec<JoinHandle<()>> = args
            .into_iter()
            .enumerate()
            .map(|(k, arg)| {
                let (stop, f, tx) = (Arc::clone(&stop), Arc::clone(&f), tx.clone());
                std::thread::Builder::new()
                    .name(name.to_owned())
                    .spawn(move || {
                        tx.send((k, Tid::current()))
                            .expect("the spawner waits for the id");
                        let done = catch_unwind(AssertUnwindSafe(|| f(arg, &stop)));
                        while !stop.load(Ordering::Acquire) {
                            std::thread::park();
                        }
                        if let Err(panic) = done {
                            resume_unwind(panic);
                        }
                    })
                    .expect("spawn")
            })
            .collect();
        drop(tx);
        // In the order of `args`, whatever order the threads started in.
        let mut tids = vec![Tid(0); handles.len()];
        for _ in 0..handles.len() {
            let (k, tid) = rx.recv().expect("a thread records its id as it starts");
            tids[k] = tid;
        }
        Threads { stop, handles, tids }
    }

    /// Stops them and joins them; a panic in one is this call's.
    fn stop(self, what: &str) {
        self.stop.store(true, Ordering::Release);
        for h in &self.handles {
            h.thread().unpark();
        }
        for h in self.handles {
            h.join().unwrap_or_else(|_| panic!("{what} panicked"));
        }
    }
}

/// The CPU some threads used over a wall-clock span, each thread's time on CPU apart.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuUse {
    /// Each thread's time on CPU in the span.
    pub cpu: Vec<Duration>,
    /// The span.
    pub wall: Duration,
}

impl CpuUse {
    /// Each thread's share of a core (its time on CPU over the wall time): 0 for one that
    /// slept throughout, about 1 for one that spun.
    pub fn shares(&self) -> Vec<f64> {
        let wall = self.wall.as_secs_f64().max(f64::MIN_POSITIVE);
        self.cpu.iter().map(|c| c.as_secs_f64() / wall).collect()
    }

    /// The threads' shares summed: the cores they kept busy (0 with no thread).
    pub fn cores(&self) -> f64 {
        // From +0.0: an empty `sum` of floats is -0.0, which prints as "-0.00".
        self.shares().iter().fold(0.0, |sum, s| sum + s)
    }
}

/// A window on some threads' CPU, from when it began.
#[derive(Debug)]
pub struct CpuWindow {
    start: Instant,
    from: Vec<(Tid, Duration)>,
}

impl CpuWindow {
    fn begin(tids: &[Tid]) -> CpuWindow {
        // The wall clock first and the accounts after: the span read covers what they count.
        let start = Instant::now();
        CpuWindow {
            start,
            from: tids.iter().map(|&t| (t, t.cpu())).collect(),
        }
    }

    /// What the threads used since the window began. Read it before they are stopped.
    pub fn read(&self) -> CpuUse {
        let cpu = self
            .from
            .iter()
            .map(|&(t, from)| t.cpu().saturating_sub(from))
            .collect();
        CpuUse {
            cpu,
            wall: self.start.elapsed(),
        }
    }
}

thread_local! {
    /// The ids of the actors spawned on this thread inside [`actors_started_by`], if inside.
    static STARTED: RefCell<Option<Vec<Tid>>> = const { RefCell::new(None) };
}

/// Runs `start` and returns what it returned, with a window on the CPU of every [`Actor`]'s
/// threads it spawned (on this thread), begun as it returns: what a hostile case's actors use
/// while the good client measures. Actors spawned elsewhere (another test's) are not in it,
/// nor is what `start` did on this thread (idle connections it opened cost no thread: their
/// share is 0).
pub fn actors_started_by<T>(start: impl FnOnce() -> T) -> (T, CpuWindow) {
    let outer = STARTED.replace(Some(Vec::new()));
    let out = start();
    let tids = STARTED.replace(outer).expect("set above");
    (out, CpuWindow::begin(&tids))
}

/// A hostile actor: threads that work until told to stop, counting what they did.
#[derive(Debug)]
pub struct Actor {
    threads: Threads,
    count: Arc<AtomicU64>,
}

impl Actor {
    /// Starts `threads` threads running `f(stop, count)`; `f` returns once `stop` is set (or
    /// sooner, if its work is done).
    pub fn spawn(threads: usize, f: impl Fn(&AtomicBool, &AtomicU64) + Send + Sync + 'static) -> Actor {
        let count = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&count);
        let threads = Threads::spawn("ferry-actor", 0..threads, move |_, stop| f(stop, &counted));
        STARTED.with_borrow_mut(|started| {
            if let Some(started) = started {
                started.extend(&threads.tids);
            }
        });
        Actor { threads, count }
    }

    /// Stops it and joins its threads (a panic in one is this call's); returns its count.
    pub fn stop(self) -> u64 {
        self.threads.stop("a hostile actor");
        self.count.load(Ordering::Relaxed)
    }
}

/// The duty cycle's period: a [`Burner`] thread of share `s` spins `s` of it by its own CPU
/// clock, then sleeps the rest.
const PERIOD: Duration = Duration::from_millis(1);

/// A share from which a burner thread only spins (the sleep left would be a few µs).
const SPIN_ONLY: f64 = 0.99;

/// Threads that take CPU and do no I/O: a hostile case's actors' CPU without the attack, for
/// the control half (the good client's latencies with the cores as busy, the server not
/// attacked). Started by the test's thread as the actors are, so at their priority (and
/// scheduling policy).
#[derive(Debug)]
pub struct Burner {
    threads: Threads,
    window: CpuWindow,
}

impl Burner {
    /// One thread per item of `shares` (each a share of a core, as
    /// [`CpuUse::shares`] gives), burning it.
    pub fn start(shares: &[f64]) -> Burner {
        let threads = Threads::spawn("ferry-burner", shares.to_vec(), burn);
        let window = CpuWindow::begin(&threads.tids);
        Burner { threads, window }
    }

    /// What its threads used since it started.
    pub fn used(&self) -> CpuUse {
        self.window.read()
    }

    /// Stops it; returns what its threads used since it started.
    pub fn stop(self) -> CpuUse {
        let used = self.window.read();
        self.threads.stop("a burner");
        used
    }
}

/// A burner thread's duty cycle until `stop`: spin `share` of each [`PERIOD`] by the thread's
/// CPU clock (what the kernel gave it, not the time that passed), then sleep the rest of the
/// period's length, however long the spin took: on a busy machine, where a spin takes longer
/// than its CPU time, the thread then uses at most its share, where sleeping only what was
/// left of the period made it spin throughout. Under a real-time policy (a suite run under `chrt -f`), a thread that spins keeps its
/// core from every thread of its priority until it sleeps, which an actor blocking in its
/// system calls does not: there it yields between clock readings.
fn burn(share: f64, stop: &AtomicBool) {
    let share = share.clamp(0.0, 1.0);
    let (spin, rest) = (PERIOD.mul_f64(share), PERIOD.mul_f64(1.0 - share));
    let realtime = realtime_policy();
    while !stop.load(Ordering::Relaxed) {
        let cpu = own_cpu();
        while own_cpu().saturating_sub(cpu) < spin {
            if realtime {
                std::thread::yield_now();
            }
        }
        if share < SPIN_ONLY {
            // The pacing of a load (the rest of the period), not a wait for an event.
            std::thread::sleep(rest);
        }
    }
}

/// The calling thread's time on CPU, by its CPU clock.
fn own_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Whether the calling thread runs under a real-time policy.
fn realtime_policy() -> bool {
    realtime(&std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default())
}

/// Whether a thread's `/proc/.../stat` line names `SCHED_FIFO` or `SCHED_RR` (1 or 2) as its
/// policy (field 41).
fn realtime(stat: &str) -> bool {
    // `pid (comm) state ...`: the fields after the last `)` start at the third.
    let policy = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(41 - 3))
        .and_then(|p| p.parse::<u32>().ok());
    matches!(policy, Some(1 | 2))
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;

    use super::*;
    use crate::{DEADLINE, wait_until};

    /// CPU the spinning actor spends by its own clock.
    const SPIN: Duration = Duration::from_millis(50);

    #[test]
    fn actors_cpu_is_the_kernels_account_of_their_threads() {
        let go = Arc::new(Barrier::new(2));
        let spun = Arc::new(AtomicBool::new(false));
        let ((spinner, sleeper), window) = actors_started_by(|| {
            let (go, spun) = (Arc::clone(&go), Arc::clone(&spun));
            let spinner = Actor::spawn(1, move |_, count| {
                go.wait();
                let from = own_cpu();
                while own_cpu() - from < SPIN {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                spun.store(true, Ordering::Release);
            });
            // Parked until stopped: asleep throughout.
            let sleeper = Actor::spawn(1, |_, _| {});
            (spinner, sleeper)
        });
        // Not an actor started inside: not in the window.
        let outside = Actor::spawn(1, |_, _| {});
        go.wait();
        wait_until("the actor spun its CPU time", DEADLINE, || {
            spun.load(Ordering::Acquire)
        });
        // The kernel's account holds at least what the spinner's clock counted once it is
        // switched out (parked: on CPU as it is read, its last tick's worth may be missing).
        wait_until("the kernel's account of the spinner", DEADLINE, || {
            window.read().cpu[0] >= SPIN
        });
        let used = window.read();
        eprintln!("a spinner and a sleeper: {used:?}");
        assert_eq!(used.cpu.len(), 2, "{used:?}");
        // No thread is on CPU longer than the time that passed.
        assert!(used.cpu[0] <= used.wall, "{used:?}");
        let shares = used.shares();
        assert!(shares[0] > 0.0 && shares[0] <= 1.0, "{shares:?}");
        // The sleeper was parked while at least `SPIN` of wall time passed.
        assert!(shares[1] < 0.01, "{shares:?}");
        assert!((used.cores() - shares[0] - shares[1]).abs() < 1e-9);
        assert!(spinner.stop() > 0);
        sleeper.stop();
        outside.stop();
    }

    #[test]
    fn an_actor_that_panics_panics_its_stop() {
        let actor = Actor::spawn(1, |_, _| panic!("on purpose"));
        let stopped = catch_unwind(AssertUnwindSafe(|| actor.stop()));
        assert!(stopped.is_err());
    }

    #[test]
    fn a_burner_burns_its_shares_and_no_more() {
        let start = Instant::now();
        let burner = Burner::start(&[1.0, 0.5, 0.0]);
        wait_until("the burner's threads on CPU", DEADLINE, || {
            let used = burner.used();
            used.cpu[0] >= Duration::from_millis(20)
                && used.cpu[1] >= Duration::from_millis(20)
                && !used.cpu[2].is_zero()
        });
        let used = burner.stop();
        let wall = start.elapsed();
        eprintln!("burning 1.0, 0.5 and 0.0 for {wall:?}: {used:?}");
        assert_eq!(used.cpu.len(), 3);
        // Nonzero for each (the share-0 thread still wakes each period), and no thread on CPU
        // longer than the time that passed.
        for (i, cpu) in used.cpu.iter().enumerate() {
            assert!(!cpu.is_zero() && *cpu <= wall, "thread {i}: {used:?}");
        }
        // The half-share thread spins half of each period and sleeps the rest: a whole period
        // of slack and a quarter of the time for what sleeping costs.
        assert!(used.cpu[1] <= wall.mul_f64(0.75) + PERIOD, "{used:?}");
        assert!(used.cpu[2] <= wall.mul_f64(0.25) + PERIOD, "{used:?}");
    }

    #[test]
    fn the_policy_from_a_stat_line() {
        // `chrt -f 50 cat /proc/self/stat` and `cat /proc/self/stat` on this kernel (6.18), the
        // name made to hold `) ` as a command's name may.
        let fifo = "16012 (c) t) R 16010 16010 7800 0 -1 4194560 178 0 0 0 0 0 0 0 -51 0 1 0 1144588 \
                    3133440 414 18446744073709551615 94870110105600 94870110125481 140732446432016 0 0 0 \
                    0 0 0 0 0 0 17 1 50 1 0 0 0 94870110141488 94870110143104 94870748352512 \
                    140732446436035 140732446436055 140732446436055 140732446437355 0";
        let other = "16014 (c) t) R 16010 16010 7800 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 1144589 \
                     3133440 382 18446744073709551615 94803904630784 94803904650665 140732428182128 0 0 \
                     0 0 0 0 0 0 0 17 1 0 0 0 0 0 94803904666672 94803904668288 94803934404608 \
                     140732428184260 140732428184280 140732428184280 140732428185579 0";
        assert!(realtime(fifo));
        assert!(!realtime(other));
        assert!(!realtime(""));
    }
}
