//! The interface every Ferry transport offers, so that the RPC layer and applications run
//! over TCP ([`Connection`]) or shared memory (`ferry_shm::ShmConnection`) unchanged.

use ferry_wire::{DecodeError, Limits, MessageDesc, Serialize, View};

use crate::frame::Meta;
use crate::reader::Frame;
use crate::sender::Raw;
use crate::{Connection, NetError};

/// A message-oriented, batched transport of Ferry objects.
pub trait Transport {
    /// A received message.
    type Frame: Received;

    /// Queues a Ferry message; zero-copy values are referenced, not copied, where the
    /// transport can (the transport decides how; see its docs).
    fn send<M: Serialize + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), NetError>;

    /// Queues a payload that is not a Ferry message.
    fn send_raw(&mut self, meta: Meta, raw: Raw<'_>) -> Result<(), NetError>;

    /// Sends everything queued.
    fn flush(&mut self) -> Result<(), NetError>;

    /// The next message received (sending what is queued meanwhile).
    fn recv(&mut self) -> Result<Self::Frame, NetError>;
}

/// A received message, read in place in the memory it arrived in.
pub trait Received {
    /// Kind, flags and request id.
    fn meta(&self) -> Meta;

    /// The payload as contiguous bytes, when the transport carries it that way: always over
    /// TCP; over shared memory only for raw frames (a Ferry message's values stay wherever
    /// the sender's memory holds them).
    fn raw(&self) -> Option<&[u8]>;

    /// Validates the Ferry message and returns its view (no copy).
    fn view(&self, desc: &'static MessageDesc, limits: &Limits) -> Result<View<'_>, DecodeError>;
}

impl Transport for Connection {
    type Frame = Frame;

    fn send<M: Serialize + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), NetError> {
        Connection::send(self, meta, msg)
    }

    fn send_raw(&mut self, meta: Meta, raw: Raw<'_>) -> Result<(), NetError> {
        Connection::send_raw(self, meta, raw)
    }

    fn flush(&mut self) -> Result<(), NetError> {
        Connection::flush(self)
    }

    fn recv(&mut self) -> Result<Frame, NetError> {
        Connection::recv(self)
    }
}

impl Received for Frame {
    fn meta(&self) -> Meta {
        self.header.meta
    }

    fn raw(&self) -> Option<&[u8]> {
        Some(&self.payload)
    }

    fn view(&self, desc: &'static MessageDesc, limits: &Limits) -> Result<View<'_>, DecodeError> {
        View::decode_shared(&self.payload, desc, limits)
    }
}
