//! What the connections of both drivers (`udp/transport.rs`, `xdp/transport.rs`) share: a
//! received message ([`DgramFrame`]), an outgoing message serialized into one pool buffer, and
//! the error a session's end becomes.

use std::io;

use ferry_buf::{Pool, SharedBuf};
use ferry_transport::{Meta, Payload, Received, TransportError};
use ferry_wire::{DecodeError, Limits as WireLimits, MessageDesc, Outgoing, View};

use crate::SessionError;

/// A received message: its meta and the pool buffer it was reassembled in. `Send`.
#[derive(Debug, Clone)]
pub struct DgramFrame {
    meta: Meta,
    data: SharedBuf,
}

impl DgramFrame {
    pub(crate) fn new(meta: Meta, data: SharedBuf) -> DgramFrame {
        DgramFrame { meta, data }
    }

    /// The payload, as the pool buffer it arrived in.
    pub fn payload(&self) -> &SharedBuf {
        &self.data
    }
}

impl Received for DgramFrame {
    fn meta(&self) -> Meta {
        self.meta
    }

    fn bytes(&self) -> Option<&[u8]> {
        Some(&self.data)
    }

    fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &WireLimits) -> Result<View<'a>, DecodeError> {
        View::decode_shared(&self.data, desc, limits)
    }
}

/// [`TransportError::TooLong`] past `max`.
pub(crate) fn check_len(len: usize, max: usize) -> Result<(), TransportError> {
    if len > max {
        return Err(TransportError::TooLong { len, max });
    }
    Ok(())
}

/// `msg` serialized into one buffer of `pool` (zero-copy values copied behind its header
/// segment as the write reaches them), if at most `max` bytes.
pub(crate) fn serialize<M: Outgoing + ?Sized>(
    pool: &Pool,
    msg: &M,
    max: usize,
) -> Result<SharedBuf, TransportError> {
    let layout = msg.layout();
    let len = layout.total_len();
    check_len(len, max)?;
    let mut buf = pool.alloc(len)?;
    let (head, mut rest) = buf.capacity_mut()[..len].split_at_mut(layout.head_len);
    msg.write_head_gather(&layout, head, &mut |value| {
        let (dst, tail) = std::mem::take(&mut rest).split_at_mut(value.len());
        dst.copy_from_slice(value);
        rest = tail;
    })?;
    buf.set_len(len);
    Ok(buf.freeze())
}

/// `payload` copied into one buffer of `pool`, if at most `max` bytes.
pub(crate) fn gather(pool: &Pool, payload: Payload<'_>, max: usize) -> Result<SharedBuf, TransportError> {
    check_len(payload.len(), max)?;
    Ok(match payload {
        Payload::Bytes(bytes) => pool.copy_from(bytes)?,
        Payload::Gather { head, parts } => {
            let mut buf = pool.alloc(payload.len())?;
            buf.extend_from_slice(head);
            for part in parts {
                buf.extend_from_slice(part);
            }
            buf.freeze()
        }
    })
}

/// The error a session's end becomes: `ConnectionReset` (the peer restarted or reset it) or
/// `TimedOut` (it stopped answering), the [`SessionError`] inside.
pub(crate) fn session_ended(op: &'static str, e: SessionError) -> TransportError {
    let kind = match e {
        SessionError::Unresponsive => io::ErrorKind::TimedOut,
        SessionError::PeerRestarted | SessionError::PeerReset => io::ErrorKind::ConnectionReset,
    };
    TransportError::Io {
        op,
        source: io::Error::new(kind, e),
    }
}
