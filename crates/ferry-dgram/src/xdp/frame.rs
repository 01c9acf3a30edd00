//! Ethernet II + IPv4 + UDP framing, sans-IO: [`write_headers`] puts the 42 bytes of headers
//! in front of a datagram, [`parse`] is the only door for a received frame.
//!
//! Sent frames carry no IPv4 options, the Don't Fragment bit, identification 0 (RFC 6864
//! allows it for atomic datagrams), TTL 64, a computed IPv4 header checksum, and **UDP
//! checksum 0** ("no checksum", allowed over IPv4 by RFC 768): the frame never leaves the
//! Ethernet segment, whose CRC covers it, and a sum over the payload would be a second pass
//! over every byte. A received UDP checksum that is not 0 is verified.
//!
//! [`parse`] checks every length and field before it uses it and refuses: another EtherType
//! (VLAN tags included), an IP version other than 4, a header length below 5 words or beyond
//! the frame, a total length beyond the frame, fragments (More Fragments or an offset),
//! another protocol than UDP, a wrong IPv4 header checksum, a UDP length other than the IP
//! payload's, a wrong UDP checksum. Ethernet padding after the IP packet is ignored.

use std::net::{Ipv4Addr, SocketAddrV4};

use thiserror::Error;

/// Ethernet II header: destination, source, EtherType.
pub const ETH_LEN: usize = 14;
/// IPv4 header without options.
pub const IPV4_LEN: usize = 20;
/// UDP header.
pub const UDP_LEN: usize = 8;
/// Every header [`write_headers`] writes.
pub const HEADERS_LEN: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
/// The longest UDP payload in one IPv4 packet (65535 less the IPv4 and UDP headers).
pub const MAX_PAYLOAD: usize = 65_535 - IPV4_LEN - UDP_LEN;

const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_UDP: u8 = 17;
/// Flags and fragment offset: Don't Fragment only.
const DONT_FRAGMENT: u16 = 0x4000;
/// More Fragments and the 13-bit offset.
const FRAGMENT_BITS: u16 = 0x3fff;
const TTL: u8 = 64;

/// A MAC address.
pub type Mac = [u8; 6];

/// Who a frame is from and to, at both layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    /// The sender's MAC.
    pub src_mac: Mac,
    /// The receiver's MAC.
    pub dst_mac: Mac,
    /// The sender's IPv4 address and UDP port.
    pub src: SocketAddrV4,
    /// The receiver's IPv4 address and UDP port.
    pub dst: SocketAddrV4,
}

/// A received frame's UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// The frame's addresses.
    pub addresses: Addresses,
    /// The UDP payload: a slice of the frame.
    pub payload: &'a [u8],
}

/// A header a frame is cut off in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The Ethernet header (bytes 0 to 13).
    Ethernet,
    /// The IPv4 header (from byte 14).
    Ipv4,
    /// The UDP header (after the IPv4 header).
    Udp,
}

/// Why a frame is not a UDP datagram we take, naming the field and its offset in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame ends inside a header.
    #[error("frame of {len} bytes ends in the {layer:?} header, which needs {need} bytes")]
    Truncated {
        /// The header.
        layer: Layer,
        /// Bytes the frame must have for it.
        need: usize,
        /// The frame's length.
        len: usize,
    },
    /// EtherType (offset 12) is not IPv4.
    #[error("EtherType {0:#06x} at offset 12 is not IPv4 (0x0800)")]
    EtherType(u16),
    /// IP version (offset 14, high nibble) is not 4.
    #[error("IP version {0} at offset 14 is not 4")]
    Version(u8),
    /// IPv4 header length (offset 14, low nibble, in 32-bit words) below 5 or beyond the frame.
    #[error("IPv4 header length {words} words at offset 14 is below 5 or beyond the {len}-byte frame")]
    HeaderLength {
        /// The field.
        words: u8,
        /// The frame's length.
        len: usize,
    },
    /// IPv4 total length (offset 16) shorter than its header or longer than the frame.
    #[error("IPv4 total length {total} at offset 16: header is {header} bytes, the frame holds {available}")]
    TotalLength {
        /// The field.
        total: usize,
        /// The IPv4 header's length.
        header: usize,
        /// Bytes after the Ethernet header.
        available: usize,
    },
    /// A fragment (offset 20: More Fragments or a fragment offset): not reassembled here.
    #[error("IPv4 fragment (flags and offset {0:#06x} at offset 20): fragments are refused")]
    Fragment(u16),
    /// IPv4 protocol (offset 23) is not UDP.
    #[error("IPv4 protocol {0} at offset 23 is not UDP (17)")]
    Protocol(u8),
    /// The IPv4 header checksum (offset 24) does not add up.
    #[error("IPv4 header checksum {0:#06x} at offset 24 is wrong")]
    Ipv4Checksum(u16),
    /// The UDP length field differs from the IP payload's length.
    #[error("UDP length {udp} at offset {offset} differs from the IPv4 payload's {ip}")]
    UdpLength {
        /// The field.
        udp: usize,
        /// The IPv4 payload's length.
        ip: usize,
        /// The field's offset in the frame.
        offset: usize,
    },
    /// The UDP checksum is not 0 and does not add up.
    #[error("UDP checksum {found:#06x} at offset {offset} is wrong")]
    UdpChecksum {
        /// The field.
        found: u16,
        /// The field's offset in the frame.
        offset: usize,
    },
}

/// A payload too long for one IPv4 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("UDP payload of {0} bytes is over the IPv4 limit of {MAX_PAYLOAD}")]
pub struct PayloadTooLong(pub usize);

/// Writes the Ethernet, IPv4 and UDP headers of a datagram of `payload_len` bytes from
/// `addresses.src` to `addresses.dst` (UDP checksum 0, see the module doc).
pub fn write_headers(
    out: &mut [u8; HEADERS_LEN],
    addresses: &Addresses,
    payload_len: usize,
) -> Result<(), PayloadTooLong> {
    if payload_len > MAX_PAYLOAD {
        return Err(PayloadTooLong(payload_len));
    }
    // Both fit a u16: payload_len <= MAX_PAYLOAD.
    let udp_len = (UDP_LEN + payload_len) as u16;
    let total = (IPV4_LEN + UDP_LEN + payload_len) as u16;
    let (eth, rest) = out.split_at_mut(ETH_LEN);
    let (ip, udp) = rest.split_at_mut(IPV4_LEN);
    eth[..6].copy_from_slice(&addresses.dst_mac);
    eth[6..12].copy_from_slice(&addresses.src_mac);
    eth[12..].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].fill(0);
    ip[6..8].copy_from_slice(&DONT_FRAGMENT.to_be_bytes());
    ip[8] = TTL;
    ip[9] = PROTO_UDP;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&addresses.src.ip().octets());
    ip[16..20].copy_from_slice(&addresses.dst.ip().octets());
    let checksum = !fold(sum(ip));
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    udp[..2].copy_from_slice(&addresses.src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&addresses.dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    udp[6..8].fill(0);
    Ok(())
}

/// Parses a received Ethernet frame as an IPv4 UDP datagram, checking everything first.
pub fn parse(frame: &[u8]) -> Result<Datagram<'_>, FrameError> {
    let len = frame.len();
    let truncated = |layer, need| FrameError::Truncated { layer, need, len };
    let (eth, ip) = frame
        .split_first_chunk::<ETH_LEN>()
        .ok_or(truncated(Layer::Ethernet, ETH_LEN))?;
    let ethertype = u16::from_be_bytes([eth[12], eth[13]]);
    if ethertype != ETHERTYPE_IPV4 {
        return Err(FrameError::EtherType(ethertype));
    }
    let fixed = ip
        .first_chunk::<IPV4_LEN>()
        .ok_or(truncated(Layer::Ipv4, ETH_LEN + IPV4_LEN))?;
    if fixed[0] >> 4 != 4 {
        return Err(FrameError::Version(fixed[0] >> 4));
    }
    let words = fixed[0] & 0x0f;
    let header = usize::from(words) * 4;
    if header < IPV4_LEN || header > ip.len() {
        return Err(FrameError::HeaderLength { words, len });
    }
    let total = usize::from(u16::from_be_bytes([fixed[2], fixed[3]]));
    if total < header || total > ip.len() {
        return Err(FrameError::TotalLength {
            total,
            header,
            available: ip.len(),
        });
    }
    let fragment = u16::from_be_bytes([fixed[6], fixed[7]]);
    if fragment & FRAGMENT_BITS != 0 {
        return Err(FrameError::Fragment(fragment));
    }
    if fixed[9] != PROTO_UDP {
        return Err(FrameError::Protocol(fixed[9]));
    }
    if fold(sum(&ip[..header])) != 0xffff {
        return Err(FrameError::Ipv4Checksum(u16::from_be_bytes([
            fixed[10], fixed[11],
        ])));
    }
    let src_ip = Ipv4Addr::new(fixed[12], fixed[13], fixed[14], fixed[15]);
    let dst_ip = Ipv4Addr::new(fixed[16], fixed[17], fixed[18], fixed[19]);
    // Ethernet padding after `total` is not ours.
    let segment = &ip[header..total];
    let udp_at = ETH_LEN + header;
    let (udp, payload) = segment
        .split_first_chunk::<UDP_LEN>()
        .ok_or(truncated(Layer::Udp, udp_at + UDP_LEN))?;
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len != segment.len() {
        return Err(FrameError::UdpLength {
            udp: udp_len,
            ip: segment.len(),
            offset: udp_at + 4,
        });
    }
    let found = u16::from_be_bytes([udp[6], udp[7]]);
    if found != 0 {
        // The pseudo-header: addresses, protocol, UDP length; then the whole segment, whose
        // own checksum field makes the sum come out at 0xffff.
        let pseudo = sum(&fixed[12..20]) + u32::from(PROTO_UDP) + udp_len as u32;
        if fold(pseudo + sum(segment)) != 0xffff {
            return Err(FrameError::UdpChecksum {
                found,
                offset: udp_at + 6,
            });
        }
    }
    let mut src_mac = [0; 6];
    let mut dst_mac = [0; 6];
    dst_mac.copy_from_slice(&eth[..6]);
    src_mac.copy_from_slice(&eth[6..12]);
    Ok(Datagram {
        addresses: Addresses {
            src_mac,
            dst_mac,
            src: SocketAddrV4::new(src_ip, u16::from_be_bytes([udp[0], udp[1]])),
            dst: SocketAddrV4::new(dst_ip, u16::from_be_bytes([udp[2], udp[3]])),
        },
        payload,
    })
}

/// The ones' complement sum of `bytes` as big-endian 16-bit words (an odd last byte padded
/// with zero), not yet folded. At most 65535 bytes: no overflow.
fn sum(bytes: &[u8]) -> u32 {
    let mut words = bytes.chunks_exact(2);
    let mut total: u32 = words
        .by_ref()
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    if let [last] = words.remainder() {
        total += u32::from(*last) << 8;
    }
    total
}

/// Folds the carries of a ones' complement sum into 16 bits.
fn fold(mut total: u32) -> u16 {
    while total > 0xffff {
        total = (total & 0xffff) + (total >> 16);
    }
    total as u16
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn addresses() -> Addresses {
        Addresses {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: "192.168.0.1:7000".parse().unwrap(),
            dst: "192.168.0.199:9000".parse().unwrap(),
        }
    }

    fn frame(addresses: &Addresses, payload: &[u8]) -> Vec<u8> {
        let mut headers = [0; HEADERS_LEN];
        write_headers(&mut headers, addresses, payload.len()).unwrap();
        [&headers[..], payload].concat()
    }

    /// The IPv4 header of the usual worked example (total length 0x73, checksum 0xb861),
    /// written here byte for byte.
    #[test]
    fn headers_match_the_worked_example() {
        let payload = vec![0xab; 0x73 - IPV4_LEN - UDP_LEN];
        let bytes = frame(&addresses(), &payload);
        let expected: [u8; HEADERS_LEN] = [
            2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, // Ethernet
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
            0xc0, 0xa8, 0x00, 0xc7, // IPv4
            0x1b, 0x58, 0x23, 0x28, 0x00, 0x5f, 0x00, 0x00, // UDP: 7000 -> 9000, length 95
        ];
        assert_eq!(bytes[..HEADERS_LEN], expected);
        let d = parse(&bytes).unwrap();
        assert_eq!((d.addresses, d.payload), (addresses(), &payload[..]));
    }

    #[test]
    fn a_payload_over_the_ipv4_limit_is_refused() {
        let mut headers = [0; HEADERS_LEN];
        assert_eq!(
            write_headers(&mut headers, &addresses(), MAX_PAYLOAD + 1),
            Err(PayloadTooLong(MAX_PAYLOAD + 1))
        );
        write_headers(&mut headers, &addresses(), MAX_PAYLOAD).unwrap();
    }

    /// A frame from the kernel's stack: UDP checksum computed (the bytes of a datagram
    /// `b"hi"` from 10.0.0.1:1234 to 10.0.0.2:80, checksum worked out by hand below).
    #[test]
    fn a_nonzero_udp_checksum_is_verified() {
        let mut a = addresses();
        a.src = "10.0.0.1:1234".parse().unwrap();
        a.dst = "10.0.0.2:80".parse().unwrap();
        let mut bytes = frame(&a, b"hi");
        // Pseudo-header 0x0a00+0x0001+0x0a00+0x0002+17+10 = 0x141e; header 0x04d2+0x0050+10
        // = 0x052c; payload 0x6869: 0x141e+0x052c+0x6869 = 0x81b3, complement 0x7e4c.
        bytes[HEADERS_LEN - 2..HEADERS_LEN].copy_from_slice(&0x7e4c_u16.to_be_bytes());
        assert_eq!(parse(&bytes).unwrap().payload, b"hi");
        bytes[HEADERS_LEN] ^= 1;
        assert_eq!(
            parse(&bytes),
            Err(FrameError::UdpChecksum {
                found: 0x7e4c,
                offset: 40
            })
        );
    }

    #[test]
    fn ethernet_padding_is_ignored() {
        let mut bytes = frame(&addresses(), b"x");
        bytes.resize(60, 0);
        assert_eq!(parse(&bytes).unwrap().payload, b"x");
    }

    #[test]
    fn ip_options_are_skipped() {
        let mut bytes = frame(&addresses(), b"payload");
        // Four bytes of options (NOPs): header length 6 words, total length + 4, new checksum.
        bytes.splice(34..34, [1, 1, 1, 1]);
        bytes[14] = 0x46;
        let total = u16::from_be_bytes([bytes[16], bytes[17]]) + 4;
        bytes[16..18].copy_from_slice(&total.to_be_bytes());
        bytes[24..26].fill(0);
        let checksum = !fold(sum(&bytes[14..38]));
        bytes[24..26].copy_from_slice(&checksum.to_be_bytes());
        let d = parse(&bytes).unwrap();
        assert_eq!((d.payload, d.addresses), (&b"payload"[..], addresses()));
    }

    /// Every field the parser checks, broken one at a time, named with its offset.
    #[test]
    fn each_bad_field_has_its_error() {
        let good = frame(&addresses(), b"abcd");
        let broken = |at: usize, value: u8| {
            let mut b = good.clone();
            b[at] = value;
            parse(&b).map(|_| ())
        };
        assert_eq!(
            parse(&good[..13]),
            Err(FrameError::Truncated {
                layer: Layer::Ethernet,
                need: 14,
                len: 13
            })
        );
        assert_eq!(
            parse(&good[..33]),
            Err(FrameError::Truncated {
                layer: Layer::Ipv4,
                need: 34,
                len: 33
            })
        );
        assert_eq!(broken(12, 0x81), Err(FrameError::EtherType(0x8100)));
        assert_eq!(broken(14, 0x65), Err(FrameError::Version(6)));
        assert_eq!(
            broken(14, 0x44),
            Err(FrameError::HeaderLength {
                words: 4,
                len: good.len()
            })
        );
        assert_eq!(
            broken(14, 0x4f),
            Err(FrameError::HeaderLength {
                words: 15,
                len: good.len()
            })
        );
        assert_eq!(
            broken(17, 0xff),
            Err(FrameError::TotalLength {
                total: 0xff,
                header: 20,
                available: 32
            })
        );
        assert_eq!(broken(20, 0x20), Err(FrameError::Fragment(0x2000)));
        assert_eq!(broken(21, 0x01), Err(FrameError::Fragment(0x4001)));
        assert_eq!(broken(23, 6), Err(FrameError::Protocol(6)));
        assert!(matches!(broken(22, 1), Err(FrameError::Ipv4Checksum(_))));
        assert_eq!(
            broken(39, 5),
            Err(FrameError::UdpLength {
                udp: 5,
                ip: 12,
                offset: 38
            })
        );
        // An IPv4 packet too short for a UDP header (total length 20 + 4, checksum fixed).
        let mut short = good[..38].to_vec();
        short[16..18].copy_from_slice(&24_u16.to_be_bytes());
        short[24..26].fill(0);
        let checksum = !fold(sum(&short[14..34]));
        short[24..26].copy_from_slice(&checksum.to_be_bytes());
        assert_eq!(
            parse(&short),
            Err(FrameError::Truncated {
                layer: Layer::Udp,
                need: 42,
                len: 38
            })
        );
    }

    fn any_addresses() -> impl Strategy<Value = Addresses> {
        (
            any::<Mac>(),
            any::<Mac>(),
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            any::<[u16; 2]>(),
        )
            .prop_map(|(src_mac, dst_mac, s, d, [sp, dp])| Addresses {
                src_mac,
                dst_mac,
                src: SocketAddrV4::new(s.into(), sp),
                dst: SocketAddrV4::new(d.into(), dp),
            })
    }

    proptest! {
        #[test]
        fn written_headers_parse_back(
            a in any_addresses(),
            payload in proptest::collection::vec(any::<u8>(), 0..3000),
        ) {
            let bytes = frame(&a, &payload);
            let d = parse(&bytes).unwrap();
            prop_assert_eq!(d.addresses, a);
            prop_assert_eq!(d.payload, &payload[..]);
        }

        /// Any byte changed in the headers never panics, and one changed in the IPv4 header
        /// after its first byte is always caught (a single changed byte always changes the
        /// ones' complement sum). MACs, ports and, with checksum 0, the payload are not covered.
        #[test]
        fn a_changed_header_byte_never_panics(
            a in any_addresses(),
            payload in proptest::collection::vec(any::<u8>(), 0..100),
            at in 0..HEADERS_LEN,
            xor in 1..=255u8,
        ) {
            let mut bytes = frame(&a, &payload);
            bytes[at] ^= xor;
            let result = parse(&bytes);
            prop_assert!(!(15..34).contains(&at) || result.is_err(), "byte {} changed and accepted", at);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
        }
    }
}
