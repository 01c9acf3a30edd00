//! One descriptor that is readable when a UDP connection has work: an `epoll` set holding the
//! socket (readable; writable too while the kernel's send buffer was full) and a `timerfd`
//! armed at the protocol core's next timer, so that an outer event loop polling only this
//! descriptor also wakes for retransmissions. Safe code: rustix wraps the syscalls.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create, timerfd_settime,
};

/// The epoll set and its timer.
#[derive(Debug)]
pub(crate) struct Wake {
    epoll: OwnedFd,
    timer: OwnedFd,
    /// When the timer fires, if armed (it stays readable after that until set again).
    armed: Option<Instant>,
    /// Whether the socket is watched for writability too.
    write: bool,
    /// `timerfd_settime` and `epoll_ctl` calls made by [`update`](Self::update).
    pub(crate) syscalls: u64,
}

impl Wake {
    /// A set watching `socket` for reading, with the timer disarmed.
    pub(crate) fn new(socket: BorrowedFd<'_>) -> io::Result<Wake> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let timer = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        epoll::add(
            &epoll,
            socket,
            epoll::EventData::new_u64(0),
            epoll::EventFlags::IN,
        )?;
        epoll::add(
            &epoll,
            &timer,
            epoll::EventData::new_u64(1),
            epoll::EventFlags::IN,
        )?;
        Ok(Wake {
            epoll,
            timer,
            armed: None,
            write: false,
            syscalls: 0,
        })
    }

    /// Brings the set up to date: the timer fires at `deadline` (the core's next timer), and
    /// the socket is watched for writing while `write`. Lazy: a timer armed earlier than
    /// `deadline` is left to fire (a spurious wake-up, after which it is set again), so most
    /// calls make no syscall.
    pub(crate) fn update(
        &mut self,
        socket: BorrowedFd<'_>,
        deadline: Option<Instant>,
        write: bool,
        now: Instant,
    ) -> io::Result<()> {
        if write != self.write {
            let flags = if write {
                epoll::EventFlags::IN | epoll::EventFlags::OUT
            } else {
                epoll::EventFlags::IN
            };
            self.syscalls += 1;
            epoll::modify(&self.epoll, socket, epoll::EventData::new_u64(0), flags)?;
            self.write = write;
        }
        let fired = self.armed.is_some_and(|at| at <= now);
        let sooner = match (deadline, self.armed) {
            (Some(d), Some(at)) => d < at,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !(fired || sooner) {
            return Ok(());
        }
        // A zero it_value disarms; a due deadline fires in a nanosecond.
        let after = deadline.map(|d| d.saturating_duration_since(now).max(Duration::from_nanos(1)));
        let value = after.map_or(
            Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            |d| Timespec {
                tv_sec: d.as_secs().try_into().unwrap_or(i64::MAX),
                tv_nsec: d.subsec_nanos().into(),
            },
        );
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // Setting the timer also clears a past expiry, so it stops being readable.
        self.syscalls += 1;
        timerfd_settime(&self.timer, TimerfdTimerFlags::empty(), &spec)?;
        self.armed = deadline;
        Ok(())
    }
}

impl AsFd for Wake {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}
