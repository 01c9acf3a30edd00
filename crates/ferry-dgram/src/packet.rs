//! The packet format: one header per datagram, encoded into a caller's buffer, and the checked
//! decoder that is the only door for a peer's bytes.
//!
//! Every integer is big-endian (network order). The common part (20 bytes):
//!
//! ```text
//! 0   magic "Fd" (2)   2 version (1)   3 type (1)
//! 4   dst session (4): the receiver's session id (0 only in Connect)
//! 8   src session (4): the sender's session id (never 0)
//! 12  epoch (8): the sender's endpoint epoch, a random nonce per endpoint start
//! ```
//!
//! then by type:
//!
//! ```text
//! Connect  20 seg (2): the largest data payload the connecting side sends and receives
//! Accept   20 seg (2): the payload size both sides use, min(client's, server's)
//! Data     20 seq (8): message sequence number   28 pkt (8): session-wide packet number
//!          36 index (2)  38 count (2): the packet's place in its message
//!          40 msg_len (4): the whole message's length   44 payload_len (2)
//!          46 cum (8)  54 sack (8): the sender's acknowledgement, as in Ack
//!          [62 meta, on index 0 only: kind (2), flags (1), request id (8)]   payload
//! Ack      20 cum (8): every packet below it arrived   28 sack (8): bit i = packet cum+1+i arrived
//! Reset    (nothing more)
//! ```
//!
//! Control packets have exactly their length; a data packet is its header, its meta on the
//! first packet, and exactly `payload_len` bytes. So what decodes re-encodes byte for byte.
//!
//! Version 2 (this one) added the acknowledgement to every data packet, so that it rides on
//! the data a session sends anyway (eRPC returns credits on its responses), and widened the
//! selective bitmap to 64 bits (64 credits). Version 1 peers are refused ([`PacketError::BadVersion`]).

use ferry_transport::Meta;
use thiserror::Error;

/// The first two bytes of every packet.
pub const MAGIC: [u8; 2] = *b"Fd";
/// The format version this crate speaks.
pub const VERSION: u8 = 2;
/// Bytes of the header part every packet has.
pub const COMMON_LEN: usize = 20;
/// Bytes of a data packet's header without its meta.
pub const DATA_HEADER_LEN: usize = COMMON_LEN + 42;
/// Bytes of the meta on a message's first packet.
pub const META_LEN: usize = 11;
/// The largest header: a message's first data packet.
pub const MAX_HEADER_LEN: usize = DATA_HEADER_LEN + META_LEN;
/// Bytes of a Connect or Accept packet.
pub const HANDSHAKE_LEN: usize = COMMON_LEN + 2;
/// Bytes of an Ack packet.
pub const ACK_LEN: usize = COMMON_LEN + 16;
/// Bytes of a Reset packet.
pub const RESET_LEN: usize = COMMON_LEN;

/// A session id, chosen by the endpoint that owns the session; peers address packets to it.
/// 0 is never a session (a Connect's destination before the peer has chosen one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(pub u32);

impl SessionId {
    /// No session: a Connect's destination.
    pub const NONE: SessionId = SessionId(0);
}

/// The packet types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketType {
    /// A client asks for a session.
    Connect = 1,
    /// The server's answer: its session id and the payload size.
    Accept = 2,
    /// One segment of a message.
    Data = 3,
    /// Acknowledgement: cumulative packet number plus a selective bitmap.
    Ack = 4,
    /// "I have no such session": the receiver drops the session it names.
    Reset = 5,
}

impl PacketType {
    fn from_u8(b: u8) -> Option<PacketType> {
        Some(match b {
            1 => PacketType::Connect,
            2 => PacketType::Accept,
            3 => PacketType::Data,
            4 => PacketType::Ack,
            5 => PacketType::Reset,
            _ => return None,
        })
    }
}

/// A decoded (or to-be-encoded) packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The receiver's session ([`SessionId::NONE`] in Connect).
    pub dst: SessionId,
    /// The sender's session.
    pub src: SessionId,
    /// The sender's endpoint epoch.
    pub epoch: u64,
    /// What the type adds.
    pub body: Body,
}

/// The type-specific part of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Asks for a session; `seg` is the largest data payload the client uses.
    Connect {
        /// The client's segment size.
        seg: u16,
    },
    /// Grants a session; `seg` is the payload size both sides use from now on.
    Accept {
        /// The agreed segment size.
        seg: u16,
    },
    /// A segment of a message.
    Data(DataHeader),
    /// Every packet below `cum` arrived; bit `i` of `sack` says packet `cum + 1 + i` arrived.
    /// Sent alone only when no data packet of the session leaves to carry it.
    Ack {
        /// The cumulative acknowledgement: the lowest packet number not yet received.
        cum: u64,
        /// The selective bitmap above `cum`.
        sack: u64,
    },
    /// The sender has no session `src`: the receiver drops its session `dst`.
    Reset,
}

/// A data packet's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// The message's sequence number in its session (0, 1, 2, ...).
    pub seq: u64,
    /// The session-wide packet number (consecutive across messages).
    pub pkt: u64,
    /// This packet's index in its message.
    pub index: u16,
    /// The message's packet count (at least 1; an empty message is one empty packet).
    pub count: u16,
    /// The whole message's length.
    pub msg_len: u32,
    /// This packet's payload length.
    pub payload_len: u16,
    /// The sender's cumulative acknowledgement of the packets it received, as in [`Body::Ack`].
    pub cum: u64,
    /// The sender's selective bitmap above `cum`, as in [`Body::Ack`].
    pub sack: u64,
    /// The message's meta: `Some` exactly on index 0.
    pub meta: Option<Meta>,
}

impl Header {
    /// The packet's type.
    pub fn packet_type(&self) -> PacketType {
        match self.body {
            Body::Connect { .. } => PacketType::Connect,
            Body::Accept { .. } => PacketType::Accept,
            Body::Data(_) => PacketType::Data,
            Body::Ack { .. } => PacketType::Ack,
            Body::Reset => PacketType::Reset,
        }
    }

    /// Bytes [`encode`](Self::encode) writes (the header only; a data packet's payload follows).
    pub fn encoded_len(&self) -> usize {
        match self.body {
            Body::Connect { .. } | Body::Accept { .. } => HANDSHAKE_LEN,
            Body::Data(d) if d.meta.is_some() => MAX_HEADER_LEN,
            Body::Data(_) => DATA_HEADER_LEN,
            Body::Ack { .. } => ACK_LEN,
            Body::Reset => RESET_LEN,
        }
    }

    /// Writes the header into `out` and returns its length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let len = self.encoded_len();
        if out.len() < len {
            return Err(EncodeError::BufferTooSmall {
                need: len,
                have: out.len(),
            });
        }
        if let Body::Data(d) = self.body
            && d.meta.is_some() != (d.index == 0)
        {
            return Err(EncodeError::MetaPlacement { index: d.index });
        }
        let mut w = Writer { out, at: 0 };
        w.put(&MAGIC);
        w.put(&[VERSION, self.packet_type() as u8]);
        w.put(&self.dst.0.to_be_bytes());
        w.put(&self.src.0.to_be_bytes());
        w.put(&self.epoch.to_be_bytes());
        match self.body {
            Body::Connect { seg } | Body::Accept { seg } => w.put(&seg.to_be_bytes()),
            Body::Data(d) => {
                w.put(&d.seq.to_be_bytes());
                w.put(&d.pkt.to_be_bytes());
                w.put(&d.index.to_be_bytes());
                w.put(&d.count.to_be_bytes());
                w.put(&d.msg_len.to_be_bytes());
                w.put(&d.payload_len.to_be_bytes());
                w.put(&d.cum.to_be_bytes());
                w.put(&d.sack.to_be_bytes());
                if let Some(m) = d.meta {
                    w.put(&m.kind.to_be_bytes());
                    w.put(&[m.flags]);
                    w.put(&m.request_id.to_be_bytes());
                }
            }
            Body::Ack { cum, sack } => {
                w.put(&cum.to_be_bytes());
                w.put(&sack.to_be_bytes());
            }
            Body::Reset => {}
        }
        debug_assert_eq!(w.at, len);
        Ok(len)
    }
}

struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.out[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
}

/// Why a header could not be encoded (a caller's mistake, not a peer's).
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The output buffer is shorter than the header.
    #[error("header needs {need} bytes, buffer has {have}")]
    BufferTooSmall {
        /// The header's length.
        need: usize,
        /// The buffer's length.
        have: usize,
    },
    /// A data header's meta must be present on index 0 and only there.
    #[error("data packet {index}: meta belongs on packet 0 and only there")]
    MetaPlacement {
        /// The packet's index.
        index: u16,
    },
}

/// What a decoder accepts: the endpoint's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest datagram (header and payload).
    pub max_datagram: usize,
    /// The largest message.
    pub max_message_len: u32,
}

/// A decoded packet: the header and, for data, its payload (a slice of the input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The header.
    pub header: Header,
    /// The data payload (empty for other types).
    pub payload: &'a [u8],
}

/// Why a peer's bytes are not a packet. Each names what and where.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PacketError {
    /// Fewer bytes than the header of this type needs.
    #[error("packet of {have} bytes is shorter than its {need}-byte header")]
    TooShort {
        /// Bytes the header needs.
        need: usize,
        /// Bytes there are.
        have: usize,
    },
    /// The datagram is longer than the endpoint's MTU.
    #[error("datagram of {len} bytes exceeds the MTU of {max}")]
    TooLong {
        /// The datagram's length.
        len: usize,
        /// The endpoint's MTU.
        max: usize,
    },
    /// Bytes 0..2 are not [`MAGIC`].
    #[error("bad magic at offset 0: {found:02x?}")]
    BadMagic {
        /// What was there.
        found: [u8; 2],
    },
    /// Byte 2 is not [`VERSION`].
    #[error("unsupported version {found} at offset 2 (this side speaks {VERSION})")]
    BadVersion {
        /// What was there.
        found: u8,
    },
    /// Byte 3 is no known type.
    #[error("unknown packet type {found} at offset 3")]
    BadType {
        /// What was there.
        found: u8,
    },
    /// A packet's length differs from what its header says.
    #[error("{ty:?} packet: expected {expected} bytes, found {found}")]
    Length {
        /// The packet's type.
        ty: PacketType,
        /// The length its header implies.
        expected: usize,
        /// The datagram's length.
        found: usize,
    },
    /// A field holds a value the format forbids.
    #[error("{ty:?} packet: field `{field}` at offset {offset} is {value}: {rule}")]
    Field {
        /// The packet's type.
        ty: PacketType,
        /// The field's name.
        field: &'static str,
        /// Its offset in the packet.
        offset: usize,
        /// Its value.
        value: u64,
        /// The rule broken.
        rule: &'static str,
    },
}

/// Reads fixed-width big-endian fields at offsets already checked against the length.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut b = [0; N];
        b.copy_from_slice(&self.0[at..at + N]);
        b
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_be_bytes(self.bytes(at))
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.bytes(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_be_bytes(self.bytes(at))
    }
}

impl<'a> Packet<'a> {
    /// Decodes and validates `bytes` against `limits`. Every field is checked before any is
    /// used; on success every length and index in the header is consistent with the datagram.
    pub fn decode(bytes: &'a [u8], limits: &Limits) -> Result<Packet<'a>, PacketError> {
        if bytes.len() > limits.max_datagram {
            return Err(PacketError::TooLong {
                len: bytes.len(),
                max: limits.max_datagram,
            });
        }
        if bytes.len() < COMMON_LEN {
            return Err(PacketError::TooShort {
                need: COMMON_LEN,
                have: bytes.len(),
            });
        }
        let r = Reader(bytes);
        let magic: [u8; 2] = r.bytes(0);
        if magic != MAGIC {
            return Err(PacketError::BadMagic { found: magic });
        }
        if bytes[2] != VERSION {
            return Err(PacketError::BadVersion { found: bytes[2] });
        }
        let ty = PacketType::from_u8(bytes[3]).ok_or(PacketError::BadType { found: bytes[3] })?;
        let field = |field, offset, value: u64, rule| PacketError::Field {
            ty,
            field,
            offset,
            value,
            rule,
        };
        let fixed = match ty {
            PacketType::Connect | PacketType::Accept => HANDSHAKE_LEN,
            PacketType::Data => DATA_HEADER_LEN,
            PacketType::Ack => ACK_LEN,
            PacketType::Reset => RESET_LEN,
        };
        if bytes.len() < fixed {
            return Err(PacketError::TooShort {
                need: fixed,
                have: bytes.len(),
            });
        }
        if ty != PacketType::Data && bytes.len() != fixed {
            return Err(PacketError::Length {
                ty,
                expected: fixed,
                found: bytes.len(),
            });
        }
        let dst = r.u32(4);
        let src = r.u32(8);
        if (ty == PacketType::Connect) != (dst == 0) {
            let rule = if ty == PacketType::Connect {
                "a Connect is addressed to no session (0)"
            } else {
                "must name the receiver's session (not 0)"
            };
            return Err(field("dst session", 4, dst.into(), rule));
        }
        if src == 0 {
            return Err(field(
                "src session",
                8,
                0,
                "must name the sender's session (not 0)",
            ));
        }
        let mut payload: &[u8] = &[];
        let body = match ty {
            PacketType::Connect | PacketType::Accept => {
                let seg = r.u16(20);
                if seg == 0 {
                    return Err(field("seg", 20, 0, "must be at least 1"));
                }
                if ty == PacketType::Connect {
                    Body::Connect { seg }
                } else {
                    Body::Accept { seg }
                }
            }
            PacketType::Ack => Body::Ack {
                cum: r.u64(20),
                sack: r.u64(28),
            },
            PacketType::Reset => Body::Reset,
            PacketType::Data => {
                let (d, p) = decode_data(bytes, limits, &field)?;
                payload = p;
                Body::Data(d)
            }
        };
        Ok(Packet {
            header: Header {
                dst: SessionId(dst),
                src: SessionId(src),
                epoch: r.u64(12),
                body,
            },
            payload,
        })
    }
}

fn decode_data<'a>(
    bytes: &'a [u8],
    limits: &Limits,
    field: &dyn Fn(&'static str, usize, u64, &'static str) -> PacketError,
) -> Result<(DataHeader, &'a [u8]), PacketError> {
    let r = Reader(bytes);
    let (seq, pkt, index, count) = (r.u64(20), r.u64(28), r.u16(36), r.u16(38));
    let (msg_len, payload_len) = (r.u32(40), r.u16(44));
    if count == 0 {
        return Err(field("count", 38, 0, "a message has at least one packet"));
    }
    if index >= count {
        return Err(field("index", 36, index.into(), "must be below count"));
    }
    if pkt < u64::from(index) {
        return Err(field(
            "pkt",
            28,
            pkt,
            "must be at least index (the message's first packet number is pkt - index)",
        ));
    }
    if msg_len > limits.max_message_len {
        return Err(field(
            "msg_len",
            40,
            msg_len.into(),
            "exceeds the endpoint's max_message_len",
        ));
    }
    if u32::from(payload_len) > msg_len {
        return Err(field(
            "payload_len",
            44,
            payload_len.into(),
            "exceeds the message length",
        ));
    }
    if count == 1 && u32::from(payload_len) != msg_len {
        return Err(field(
            "payload_len",
            44,
            payload_len.into(),
            "a one-packet message is its whole payload",
        ));
    }
    let (meta, head) = if index == 0 {
        if bytes.len() < MAX_HEADER_LEN {
            return Err(PacketError::TooShort {
                need: MAX_HEADER_LEN,
                have: bytes.len(),
            });
        }
        let meta = Meta {
            kind: r.u16(62),
            flags: bytes[64],
            request_id: r.u64(65),
        };
        (Some(meta), MAX_HEADER_LEN)
    } else {
        (None, DATA_HEADER_LEN)
    };
    let expected = head + usize::from(payload_len);
    if bytes.len() != expected {
        return Err(PacketError::Length {
            ty: PacketType::Data,
            expected,
            found: bytes.len(),
        });
    }
    let d = DataHeader {
        seq,
        pkt,
        index,
        count,
        msg_len,
        payload_len,
        cum: r.u64(46),
        sack: r.u64(54),
        meta,
    };
    Ok((d, &bytes[head..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_datagram: 1472,
        max_message_len: 1 << 20,
    };

    fn encode(h: &Header, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0; h.encoded_len()];
        assert_eq!(h.encode(&mut out), Ok(h.encoded_len()));
        out.extend_from_slice(payload);
        out
    }

    fn data(index: u16, count: u16, msg_len: u32, payload_len: u16) -> Header {
        Header {
            dst: SessionId(7),
            src: SessionId(9),
            epoch: 0x0102_0304_0506_0708,
            body: Body::Data(DataHeader {
                seq: 3,
                pkt: 40 + u64::from(index),
                index,
                count,
                msg_len,
                payload_len,
                cum: 0x1112_1314_1516_1718,
                sack: 0x8000_0000_0000_0001,
                meta: (index == 0).then_some(Meta {
                    kind: 0xabcd,
                    flags: 5,
                    request_id: 77,
                }),
            }),
        }
    }

    #[test]
    fn ack_bytes_both_ways() {
        let h = Header {
            dst: SessionId(1),
            src: SessionId(2),
            epoch: 3,
            body: Body::Ack {
                cum: 4,
                sack: 0x8000_0000_0000_0001,
            },
        };
        let bytes = encode(&h, &[]);
        let want: Vec<u8> = [
            &b"Fd"[..],
            &[2, 4],
            &[0, 0, 0, 1],
            &[0, 0, 0, 2],
            &[0, 0, 0, 0, 0, 0, 0, 3],
            &[0, 0, 0, 0, 0, 0, 0, 4],
            &[0x80, 0, 0, 0, 0, 0, 0, 1],
        ]
        .concat();
        assert_eq!(bytes, want);
        let p = Packet::decode(&want, &LIMITS).unwrap();
        assert_eq!(p.header, h);
        assert!(p.payload.is_empty());
    }

    #[test]
    fn first_data_packet_bytes_both_ways() {
        let h = data(0, 2, 5, 3);
        let bytes = encode(&h, b"abc");
        assert_eq!(bytes.len(), MAX_HEADER_LEN + 3);
        assert_eq!(&bytes[20..28], &3u64.to_be_bytes());
        assert_eq!(&bytes[36..46], &[0, 0, 0, 2, 0, 0, 0, 5, 0, 3]);
        assert_eq!(&bytes[46..54], &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]);
        assert_eq!(&bytes[54..62], &[0x80, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&bytes[62..73], &[0xab, 0xcd, 5, 0, 0, 0, 0, 0, 0, 0, 77]);
        let p = Packet::decode(&bytes, &LIMITS).unwrap();
        assert_eq!((p.header, p.payload), (h, &b"abc"[..]));
    }

    #[test]
    fn every_refusal_names_what() {
        let good = encode(&data(1, 2, 5, 2), b"de");
        assert!(Packet::decode(&good, &LIMITS).is_ok());
        let with = |at: usize, b: &[u8]| {
            let mut v = good.clone();
            v[at..at + b.len()].copy_from_slice(b);
            Packet::decode(&v, &LIMITS).unwrap_err()
        };
        assert_eq!(with(0, b"X"), PacketError::BadMagic { found: *b"Xd" });
        assert_eq!(with(2, &[1]), PacketError::BadVersion { found: 1 });
        assert_eq!(with(3, &[9]), PacketError::BadType { found: 9 });
        let field_of = |e: PacketError| match e {
            PacketError::Field { field, offset, .. } => (field, offset),
            other => panic!("expected a field error, got {other}"),
        };
        assert_eq!(field_of(with(4, &[0, 0, 0, 0])), ("dst session", 4));
        assert_eq!(field_of(with(8, &[0, 0, 0, 0])), ("src session", 8));
        assert_eq!(field_of(with(38, &[0, 0])), ("count", 38));
        assert_eq!(field_of(with(36, &[0, 2])), ("index", 36));
        assert_eq!(field_of(with(28, &[0; 8])), ("pkt", 28));
        assert_eq!(field_of(with(40, &[0, 0x10, 0, 1])), ("msg_len", 40));
        assert_eq!(field_of(with(44, &[0, 6])), ("payload_len", 44));
        assert_eq!(
            with(44, &[0, 3]),
            PacketError::Length {
                ty: PacketType::Data,
                expected: DATA_HEADER_LEN + 3,
                found: DATA_HEADER_LEN + 2
            }
        );
        // One-packet messages: the payload is the whole message.
        let one = encode(&data(0, 1, 3, 2), b"ab");
        assert_eq!(
            field_of(Packet::decode(&one, &LIMITS).unwrap_err()),
            ("payload_len", 44)
        );
        // A first packet too short for its meta.
        assert_eq!(
            Packet::decode(&encode(&data(0, 2, 5, 0), &[])[..66], &LIMITS).unwrap_err(),
            PacketError::TooShort {
                need: MAX_HEADER_LEN,
                have: 66
            }
        );
        // Every truncation is refused, none panics.
        for cut in 0..good.len() {
            assert!(Packet::decode(&good[..cut], &LIMITS).is_err(), "cut at {cut}");
        }
        let long = vec![0; LIMITS.max_datagram + 1];
        assert_eq!(
            Packet::decode(&long, &LIMITS).unwrap_err(),
            PacketError::TooLong { len: 1473, max: 1472 }
        );
    }

    #[test]
    fn control_packets_have_exact_lengths() {
        for body in [
            Body::Accept { seg: 1 },
            Body::Ack { cum: 0, sack: 0 },
            Body::Reset,
        ] {
            let h = Header {
                dst: SessionId(1),
                src: SessionId(2),
                epoch: 0,
                body,
            };
            let mut bytes = encode(&h, &[]);
            bytes.push(0);
            assert!(matches!(
                Packet::decode(&bytes, &LIMITS),
                Err(PacketError::Length { .. })
            ));
        }
        let connect = Header {
            dst: SessionId::NONE,
            src: SessionId(2),
            epoch: 0,
            body: Body::Connect { seg: 0 },
        };
        let e = Packet::decode(&encode(&connect, &[]), &LIMITS).unwrap_err();
        assert!(
            matches!(
                e,
                PacketError::Field {
                    field: "seg",
                    offset: 20,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn encode_refuses_small_buffers_and_misplaced_meta() {
        let h = data(0, 1, 0, 0);
        assert_eq!(
            h.encode(&mut [0; 10]),
            Err(EncodeError::BufferTooSmall {
                need: MAX_HEADER_LEN,
                have: 10
            })
        );
        let Body::Data(mut d) = data(1, 2, 4, 2).body else {
            unreachable!()
        };
        d.meta = Some(Meta::default());
        let h = Header {
            body: Body::Data(d),
            ..h
        };
        assert_eq!(
            h.encode(&mut [0; MAX_HEADER_LEN]),
            Err(EncodeError::MetaPlacement { index: 1 })
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn header() -> impl Strategy<Value = (Header, Vec<u8>)> {
            let common = (1u32.., 1u32.., any::<u64>());
            let body = prop_oneof![
                (1u16..).prop_map(|seg| (Body::Connect { seg }, vec![])),
                (1u16..).prop_map(|seg| (Body::Accept { seg }, vec![])),
                (any::<u64>(), any::<u64>()).prop_map(|(cum, sack)| (Body::Ack { cum, sack }, vec![])),
                Just((Body::Reset, vec![])),
                (
                    any::<u64>(),
                    0u64..1 << 40,
                    1u16..600,
                    any::<u16>(),
                    0u32..1 << 20,
                    proptest::collection::vec(any::<u8>(), 0..1400),
                    any::<(u16, u8, u64)>(),
                    any::<(u64, u64)>()
                )
                    .prop_map(
                        |(seq, pkt, count, index, extra, payload, (kind, flags, request_id), (cum, sack))| {
                            let index = index % count;
                            let payload_len = payload.len() as u32;
                            let msg_len = if count == 1 {
                                payload_len
                            } else {
                                payload_len + extra
                            };
                            let d = DataHeader {
                                seq,
                                pkt: pkt + u64::from(index),
                                index,
                                count,
                                msg_len,
                                payload_len: payload_len as u16,
                                cum,
                                sack,
                                meta: (index == 0).then_some(Meta {
                                    kind,
                                    flags,
                                    request_id,
                                }),
                            };
                            (Body::Data(d), payload)
                        }
                    ),
            ];
            (common, body).prop_map(|((dst, src, epoch), (body, payload))| {
                let dst = if matches!(body, Body::Connect { .. }) {
                    0
                } else {
                    dst
                };
                (
                    Header {
                        dst: SessionId(dst),
                        src: SessionId(src),
                        epoch,
                        body,
                    },
                    payload,
                )
            })
        }

        proptest! {
            #[test]
            fn round_trip((h, payload) in header()) {
                let bytes = encode(&h, &payload);
                prop_assert_eq!(bytes.len(), h.encoded_len() + payload.len());
                let limits = Limits { max_datagram: 1 << 16, max_message_len: 1 << 21 };
                let p = Packet::decode(&bytes, &limits).unwrap();
                prop_assert_eq!(p.header, h);
                prop_assert_eq!(p.payload, &payload[..]);
            }

            #[test]
            fn what_decodes_re_encodes_identically((h, payload) in header(), at in any::<usize>(), byte in any::<u8>()) {
                // A valid packet with one byte changed: refused, or a packet that re-encodes to the same bytes.
                let mut bytes = encode(&h, &payload);
                let at = at % bytes.len();
                bytes[at] = byte;
                let limits = Limits { max_datagram: 1 << 16, max_message_len: 1 << 21 };
                if let Ok(p) = Packet::decode(&bytes, &limits) {
                    prop_assert_eq!(encode(&p.header, p.payload), bytes);
                }
            }
        }
    }
}
