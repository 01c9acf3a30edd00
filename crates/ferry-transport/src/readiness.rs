//! Readiness of many descriptors for one thread: a level-triggered `epoll` set, the one every
//! Ferry event loop waits on (`ferry-rpc`'s loop, `ferry redis`'s loops). A turn costs the
//! descriptors that are ready, not the descriptors registered: 2,000 idle connections cost
//! nothing per wait (with `poll(2)` each wait walked them all).
//!
//! Level-triggered, so the rule of the crate docs holds unchanged: drain with `try_recv`
//! before waiting, and a descriptor that still has something reports it again.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use rustix::event::Timespec;
use rustix::event::epoll::{self, EventData, EventFlags};

/// What a registered descriptor is watched for (hang-ups and errors are always reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Interest {
    /// Readable, or the peer closed its side.
    pub read: bool,
    /// Writable.
    pub write: bool,
}

impl Interest {
    /// Readable.
    pub const READ: Interest = Interest {
        read: true,
        write: false,
    };
    /// Readable or writable.
    pub const BOTH: Interest = Interest {
        read: true,
        write: true,
    };

    fn flags(self) -> EventFlags {
        let mut flags = EventFlags::empty();
        if self.read {
            flags |= EventFlags::IN | EventFlags::RDHUP;
        }
        if self.write {
            flags |= EventFlags::OUT;
        }
        flags
    }
}

/// One descriptor found ready by [`Readiness::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    /// The token it was registered with.
    pub token: u64,
    /// Readable, or hung up (a read then says how).
    pub readable: bool,
    /// Writable.
    pub writable: bool,
    /// An error is pending on it (TCP: also zero-copy completions on the error queue).
    pub error: bool,
}

/// A level-triggered `epoll` set and the buffer its waits fill.
pub struct Readiness {
    epoll: OwnedFd,
    events: Vec<epoll::Event>,
}

impl Readiness {
    /// An empty set whose waits report at most `batch` descriptors each (the others on the
    /// next wait: the set is level-triggered).
    pub fn new(batch: usize) -> io::Result<Readiness> {
        Ok(Readiness {
            epoll: epoll::create(epoll::CreateFlags::CLOEXEC)?,
            events: Vec::with_capacity(batch.max(1)),
        })
    }

    /// Watches `fd` for `interest`, reported with `token`.
    pub fn add(&self, fd: impl AsFd, token: u64, interest: Interest) -> io::Result<()> {
        Ok(epoll::add(
            &self.epoll,
            fd,
            EventData::new_u64(token),
            interest.flags(),
        )?)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: impl AsFd, token: u64, interest: Interest) -> io::Result<()> {
        Ok(epoll::modify(
            &self.epoll,
            fd,
            EventData::new_u64(token),
            interest.flags(),
        )?)
    }

    /// Stops watching `fd` (closing its last descriptor does too).
    pub fn remove(&self, fd: impl AsFd) -> io::Result<()> {
        Ok(epoll::delete(&self.epoll, fd)?)
    }

    /// Waits until a descriptor is ready or `timeout` passes (`None`: for ever; zero: a look
    /// without waiting), retrying on `EINTR`; the descriptors ready.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<impl Iterator<Item = Ready> + '_> {
        let timeout = timeout.map(|t| Timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        self.events.clear();
        loop {
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut self.events),
                timeout.as_ref(),
            ) {
                Err(rustix::io::Errno::INTR) => continue,
                other => other?,
            };
            break;
        }
        Ok(self.events.iter().map(|e| {
            let flags = e.flags;
            Ready {
                token: e.data.u64(),
                readable: flags.intersects(EventFlags::IN | EventFlags::RDHUP | EventFlags::HUP),
                writable: flags.contains(EventFlags::OUT),
                error: flags.contains(EventFlags::ERR),
            }
        }))
    }
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("epoll", &self.epoll)
            .field("batch", &self.events.capacity())
            .finish()
    }
}

impl AsFd for Readiness {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn reports_what_is_ready_by_token_and_level() {
        let mut set = Readiness::new(8).expect("epoll");
        let (mut a, b) = UnixStream::pair().expect("pair");
        let (_c, d) = UnixStream::pair().expect("pair");
        set.add(&b, 7, Interest::READ).expect("add");
        set.add(&d, 9, Interest::READ).expect("add");
        assert_eq!(
            set.wait(Some(Duration::ZERO)).expect("wait").count(),
            0,
            "nothing yet"
        );
        a.write_all(b"x").expect("write");
        for _ in 0..2 {
            // Level-triggered: unread, it is reported again.
            let ready: Vec<Ready> = set.wait(None).expect("wait").collect();
            assert_eq!(ready.len(), 1);
            assert_eq!(
                (ready[0].token, ready[0].readable, ready[0].writable),
                (7, true, false)
            );
        }
        set.modify(&d, 9, Interest::BOTH).expect("modify");
        let mut tokens: Vec<u64> = set.wait(None).expect("wait").map(|r| r.token).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, [7, 9], "d is writable");
        set.remove(&b).expect("remove");
        drop(a);
        let ready: Vec<Ready> = set.wait(None).expect("wait").collect();
        assert_eq!(ready.len(), 1);
        assert_eq!((ready[0].token, ready[0].writable), (9, true));
    }
}
