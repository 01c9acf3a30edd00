//! The transport and received-frame traits.

use std::os::fd::AsFd;

use ferry_wire::{DecodeError, Limits, MessageDesc, Outgoing, View};

use crate::{Meta, Payload, TransportError};

/// A message-oriented, batched transport of Ferry objects.
///
/// Sends are queued and batched; [`flush`](Self::flush) (or a full batch) hands them to the
/// kernel or the peer. Receiving is blocking ([`recv`](Self::recv)) or not
/// ([`try_recv`](Self::try_recv)); the descriptor ([`AsFd`]) becomes readable when a frame may
/// have arrived (see the crate docs for the rule that makes a poll loop correct).
pub trait Transport: AsFd {
    /// A received message.
    type Frame: Received;

    /// Queues a Ferry message; zero-copy values are referenced, not copied, where the
    /// transport can (the transport decides how; see its docs).
    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError>;

    /// Queues a payload that is not a Ferry message.
    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError>;

    /// Sends everything queued.
    fn flush(&mut self) -> Result<(), TransportError>;

    /// The next message received, waiting for it (and sending what is queued meanwhile).
    fn recv(&mut self) -> Result<Self::Frame, TransportError>;

    /// The next message if one has arrived, never waiting: `Ok(None)` when there is none yet,
    /// after which the descriptor becomes readable when one may have arrived. Sends what is
    /// queued as far as that does not wait.
    fn try_recv(&mut self) -> Result<Option<Self::Frame>, TransportError>;

    /// Bytes this side has sent that the kernel or the peer may still read, so their buffers
    /// are still held (zero-copy TCP sends until their completion; shared-memory blocks and
    /// the values they reference until the peer acknowledges them). Copying sends hold none.
    fn in_flight(&self) -> usize;
}

/// A received message, read in place in the memory it arrived in.
pub trait Received {
    /// Kind, flags and request id.
    fn meta(&self) -> Meta;

    /// The payload as contiguous bytes, when the transport carries it that way: always over
    /// TCP; over shared memory only for payloads sent with
    /// [`send_payload`](Transport::send_payload) (a Ferry message's values stay wherever the
    /// sender's memory holds them).
    fn bytes(&self) -> Option<&[u8]>;

    /// Validates the Ferry message and returns its view (no copy). `limits` apply as given:
    /// `max_message_len` bounds the message (its header segment and the values it
    /// references), whatever memory it is read from. `desc` is a generated `static` or a
    /// descriptor borrowed from a run-time schema (`ferry_reflect::Schema`), which the view then
    /// borrows too.
    fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &Limits) -> Result<View<'a>, DecodeError>;
}
