//! The few system calls the drivers make themselves, through `rustix`'s safe wrappers: `poll`
//! of one descriptor (a blocking client's wait) and an eventfd that wakes a sleeping loop
//! (the loop's own wait is [`ferry_transport::Readiness`]; pinning is
//! [`ferry_transport::pin_current_thread`]).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};

/// `poll` timeout from a duration (`None`: wait for ever).
pub(crate) fn timespec(timeout: Option<Duration>) -> Option<Timespec> {
    timeout.map(|t| Timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(t.subsec_nanos()),
    })
}

/// Polls `fds`, retrying on `EINTR`.
pub(crate) fn poll(fds: &mut [PollFd<'_>], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timespec(timeout);
    loop {
        match rustix::event::poll(fds, ts.as_ref()) {
            Err(rustix::io::Errno::INTR) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
}

/// Waits until `fd` is readable (or hung up), at most `timeout`.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<()> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    poll(&mut fds, timeout).map(drop)
}

/// Wakes a loop that sleeps in its wait: an eventfd written only when the loop has said it is
/// about to sleep, so a busy-polling loop costs its wakers no system call.
#[derive(Debug)]
pub(crate) struct Waker {
    fd: OwnedFd,
    sleeping: AtomicBool,
}

impl Waker {
    pub(crate) fn new() -> io::Result<Waker> {
        let fd = rustix::event::eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)?;
        Ok(Waker {
            fd,
            sleeping: AtomicBool::new(false),
        })
    }

    /// Wakes the loop if it sleeps (or is about to).
    pub(crate) fn wake(&self) {
        // SeqCst pairs with `sleep`: either the loop sees the work this thread queued before
        // calling, or this thread sees the flag and writes.
        if self.sleeping.load(Ordering::SeqCst) {
            self.ring();
        }
    }

    /// Wakes the loop whatever it does (shutdown).
    pub(crate) fn ring(&self) {
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// The loop is about to sleep: it looks for queued work once more after this.
    pub(crate) fn sleep(&self) {
        self.sleeping.store(true, Ordering::SeqCst);
    }

    /// The loop is awake (its wakers make no more system calls).
    pub(crate) fn awake(&self) {
        self.sleeping.store(false, Ordering::SeqCst);
    }

    /// Empties the counter: called when a wait reported the eventfd readable (else it would
    /// end every later wait at once), and only then, so that a wake-up by anything else costs
    /// no `read(2)`.
    pub(crate) fn drain(&self) {
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut b);
    }
}

impl AsFd for Waker {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
