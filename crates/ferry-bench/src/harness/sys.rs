//! The two system calls the harness needs that `std` does not wrap: thread affinity and
//! per-thread CPU time. The only unsafe code in `ferry-bench`.

use std::io;
use std::time::Duration;

/// Restricts the calling thread to CPU `cpu`.
pub(super) fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "CPU index out of range",
        ));
    }
    // SAFETY: `cpu_set_t` is a plain bit array for which all zeroes is the empty set; `cpu` is
    // below CPU_SETSIZE (checked above), so CPU_SET stays inside it; sched_setaffinity reads
    // `size_of::<cpu_set_t>()` bytes of the set we own, and pid 0 means the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// CPU time the calling thread has used so far, user plus system (`getrusage(RUSAGE_THREAD)`).
pub(super) fn thread_cpu_time() -> io::Result<Duration> {
    // SAFETY: `rusage` is plain integers (all zeroes is valid), and getrusage writes at most
    // one `rusage` into the one we own.
    let (rc, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        (rc, usage)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(tv(usage.ru_utime) + tv(usage.ru_stime))
}
