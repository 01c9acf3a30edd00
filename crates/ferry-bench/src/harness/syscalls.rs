//! Syscalls per thread, counted by the kernel: a BPF program (`bpf/syscalls.c`, its object
//! committed beside it) on the raw tracepoint `sys_enter` (attached by name: no tracefs
//! needed) adds one to a watched
//! thread's count on every syscall it enters. A benchmark that reports syscalls calls
//! [`start`] once; from then on a thread is watched from its first [`thread_syscalls`], and
//! the figure a benchmark wants is the difference of two readings on the same thread (each
//! reading is itself one or two `bpf(2)` calls, counted in the next difference: a few per
//! window of thousands of calls).
//!
//! The program runs on every syscall of every thread on the machine while attached (a hash
//! lookup; tens of nanoseconds), so it is attached only by the benchmarks that report
//! syscalls, for the whole run, and every configuration of the run pays it alike. Loading
//! needs root (or CAP_BPF and CAP_PERFMON) and tracepoints; without them [`start`] says why
//! and every reading is `None`. The program stays attached until the process exits.

use std::sync::{Mutex, OnceLock, PoisonError};

use aya::Ebpf;
use aya::maps::{HashMap, MapError};
use aya::programs::RawTracePoint;

/// Bytes aligned for the ELF parser (`include_bytes!` alone gives byte alignment).
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

/// The compiled program (clang -target bpf; `bpf/build.sh` rebuilds it).
static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../../bpf/syscalls.o"));

/// The loaded, attached program, or why it could not be.
static COUNTER: OnceLock<Result<Mutex<Ebpf>, String>> = OnceLock::new();

fn load() -> Result<Mutex<Ebpf>, String> {
    let mut ebpf = Ebpf::load(&OBJECT.0).map_err(|e| format!("loading the syscall counter: {e}"))?;
    let program: &mut RawTracePoint = ebpf
        .program_mut("ferry_count_syscalls")
        .ok_or("the syscall counter's object has no program ferry_count_syscalls")?
        .try_into()
        .map_err(|e| format!("the syscall counter's program: {e}"))?;
    program
        .load()
        .map_err(|e| format!("verifying the syscall counter (root or CAP_BPF needed): {e}"))?;
    program
        .attach("sys_enter")
        .map_err(|e| format!("attaching the syscall counter to the raw tracepoint sys_enter: {e}"))?;
    Ok(Mutex::new(ebpf))
}

/// Loads and attaches the counter (once per process), or says why it cannot run here.
pub fn start() -> Result<(), &'static str> {
    COUNTER
        .get_or_init(load)
        .as_ref()
        .map(drop)
        .map_err(String::as_str)
}

/// Syscalls the calling thread has entered since it was first watched (this call watches it
/// if it was not), or `None` if the counter was not started, cannot run here, or has no room
/// for the thread.
pub fn thread_syscalls() -> Option<u64> {
    let counter = COUNTER.get()?.as_ref().ok()?;
    let mut ebpf = counter.lock().unwrap_or_else(PoisonError::into_inner);
    let mut counts: HashMap<_, u32, u64> = HashMap::try_from(ebpf.map_mut("counts")?).ok()?;
    let tid = super::sys::thread_id();
    match counts.get(&tid, 0) {
        Ok(n) => Some(n),
        Err(MapError::KeyNotFound) => counts.insert(tid, 0, 0).ok().map(|()| 0),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter counts the calling thread's syscalls, and only its own.
    #[test]
    fn a_thread_counts_its_own_syscalls() {
        const TEST: &str = "harness::syscalls::a_thread_counts_its_own_syscalls";
        if let Err(why) = start() {
            return ferry_testkit::tools::skip(TEST, why);
        }
        let before = thread_syscalls().expect("watched");
        // Each a syscall or more (statx); another thread's own syscalls meanwhile.
        for _ in 0..100 {
            let _ = std::fs::metadata("/");
        }
        let other = std::thread::spawn(|| {
            let a = thread_syscalls().expect("watched");
            (0..10).for_each(|_| drop(std::fs::metadata("/")));
            thread_syscalls().expect("watched") - a
        });
        let other = other.join().expect("the other thread");
        let mine = thread_syscalls().expect("watched") - before;
        assert!(mine >= 100, "100 stat calls and {mine} syscalls counted");
        assert!(
            (10..100).contains(&other),
            "the other thread's 10 stat calls: {other} counted"
        );
    }
}
