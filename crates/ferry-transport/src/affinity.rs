//! Thread pinning, the one implementation every Ferry crate that pins uses: server loops
//! (`ferry-rpc`, `ferry-redis`), the offload engine, and the benchmarks' client and server
//! threads. A loop that busy-polls keeps its cache warm and its latency flat only on a CPU of
//! its own.

use std::io;

use rustix::thread::{CpuSet, sched_setaffinity};

/// Restricts the calling thread to CPU `cpu` (`sched_setaffinity`). An index past what the
/// kernel's CPU set holds is an `InvalidInput` error; a CPU outside the process's allowed set
/// is the kernel's `EINVAL`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= CpuSet::MAX_CPU {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is past the largest CPU index, {}", CpuSet::MAX_CPU - 1),
        ));
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_to_an_allowed_cpu_and_refuses_out_of_range() {
        let allowed = rustix::thread::sched_getaffinity(None).unwrap();
        let cpu = (0..CpuSet::MAX_CPU).find(|&c| allowed.is_set(c)).unwrap();
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            let now = rustix::thread::sched_getaffinity(None).unwrap();
            assert_eq!(now.count(), 1);
            assert!(now.is_set(cpu));
            let err = pin_current_thread(CpuSet::MAX_CPU).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        })
        .join()
        .unwrap();
    }
}
