//! The system calls the harness needs that `std` does not wrap: per-thread CPU time and the
//! thread's id. The only unsafe code in `ferry-bench`.

use std::io;
use std::time::Duration;

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

/// The calling thread's id as the kernel numbers it (`gettid`): what the syscall counter's
/// program keys its counts by.
pub(super) fn thread_id() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::gettid() };
    tid as u32
}
