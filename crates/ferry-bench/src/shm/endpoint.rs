//! The two transports the benchmark drives with the same client and server code, and the
//! counters it reads from each: [`ShmConnection`] and a TCP [`Connection`].

use std::hint::spin_loop;

use ferry_net::{Connection, Transport, TransportError};
use ferry_shm::ShmConnection;

/// Counters of one side of a connection, as differences or totals. Fields a transport does
/// not have stay 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// shm: blocks published; tcp: `sendmsg` calls.
    pub publishes: u64,
    /// shm: acknowledgement-only ring entries.
    pub ack_entries: u64,
    /// Value bytes the CPU copied into the transport's memory (shm: `bytes_copied_in`; tcp:
    /// `zero_copy_values_copied`).
    pub copied_in: u64,
    /// Value bytes referenced in place (shm: `bytes_referenced`; tcp: posted as gather entries).
    pub referenced: u64,
    /// Bytes the CPU wrote per message into blocks or staging (tcp: `staged_bytes`; shm: not
    /// counted by the transport).
    pub staged: u64,
    /// shm: times this side slept on its doorbell.
    pub sleeps: u64,
    /// shm: times this side rang the peer's doorbell.
    pub wakeups: u64,
    /// shm: times a send waited for credits.
    pub credit_waits: u64,
    /// tcp: `readv` calls; shm: blocks received.
    pub receives: u64,
}

impl Counters {
    /// `f` of each pair of counters.
    fn zip(self, o: Counters, f: fn(u64, u64) -> u64) -> Counters {
        Counters {
            publishes: f(self.publishes, o.publishes),
            ack_entries: f(self.ack_entries, o.ack_entries),
            copied_in: f(self.copied_in, o.copied_in),
            referenced: f(self.referenced, o.referenced),
            staged: f(self.staged, o.staged),
            sleeps: f(self.sleeps, o.sleeps),
            wakeups: f(self.wakeups, o.wakeups),
            credit_waits: f(self.credit_waits, o.credit_waits),
            receives: f(self.receives, o.receives),
        }
    }

    /// `self - before`.
    pub fn since(self, before: Counters) -> Counters {
        self.zip(before, |a, b| a - b)
    }

    /// `self + o`.
    pub fn plus(self, o: Counters) -> Counters {
        self.zip(o, |a, b| a + b)
    }
}

/// A transport the benchmark can drive and read counters from.
pub trait Endpoint: Transport {
    /// Its counters so far.
    fn counters(&self) -> Counters;

    /// The next frame: `recv` (which may sleep, as the blocking TCP connection does in
    /// `poll(2)`), or with `spin` a busy loop of `try_recv`.
    fn next(&mut self, spin: bool) -> Result<Self::Frame, TransportError> {
        loop {
            match spin {
                false => return self.recv(),
                true => match self.try_recv()? {
                    Some(frame) => return Ok(frame),
                    None => spin_loop(),
                },
            }
        }
    }
}

impl Endpoint for ShmConnection {
    fn counters(&self) -> Counters {
        let s = self.stats();
        Counters {
            publishes: s.blocks_sent,
            ack_entries: s.ack_entries_sent,
            copied_in: s.bytes_copied_in,
            referenced: s.bytes_referenced,
            staged: 0,
            sleeps: s.sleeps,
            wakeups: s.wakeups,
            credit_waits: s.credit_waits,
            receives: s.blocks_received,
        }
    }
}

impl Endpoint for Connection {
    fn counters(&self) -> Counters {
        let s = self.stats();
        Counters {
            publishes: s.send.send_calls,
            copied_in: s.send.queue.zero_copy_values_copied,
            referenced: s.send.queue.zero_copy_values_referenced,
            staged: s.send.queue.staged_bytes,
            receives: s.recv.reads,
            ..Counters::default()
        }
    }
}
