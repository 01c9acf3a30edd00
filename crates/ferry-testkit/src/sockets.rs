//! The kernel's view of this machine's IPv4 TCP sockets (`/proc/net/tcp`): what a test waits
//! on when the condition it needs is in a socket (a connection accepted, bytes arrived unread)
//! and the code under test has no hook to say so.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// One row of `/proc/net/tcp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSocket {
    /// This end's address.
    pub local: SocketAddr,
    /// The peer's address (`0.0.0.0:0` for a listener).
    pub remote: SocketAddr,
    /// The state's number (`include/net/tcp_states.h`): [`ESTABLISHED`], [`LISTEN`], ...
    pub state: u8,
    /// Bytes received and not yet read; for a listener, connections not yet accepted.
    pub rx_queue: u64,
}

/// [`TcpSocket::state`] of a connection.
pub const ESTABLISHED: u8 = 0x01;
/// [`TcpSocket::state`] of a listener.
pub const LISTEN: u8 = 0x0A;

/// Every IPv4 TCP socket of this network namespace. Panics if `/proc/net/tcp` cannot be read.
pub fn tcp_sockets() -> Vec<TcpSocket> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("reading /proc/net/tcp");
    table.lines().skip(1).filter_map(parse_row).collect()
}

/// `"  0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 ..."`: the slot, the local and the
/// remote address (the address as a native-endian hex word, the port in hex), the state and
/// the transmit and receive queues.
fn parse_row(line: &str) -> Option<TcpSocket> {
    let mut fields = line.split_whitespace().skip(1);
    let addr = |f: &str| -> Option<SocketAddr> {
        let (ip, port) = f.split_once(':')?;
        let ip = u32::from_str_radix(ip, 16).ok()?;
        let ip = Ipv4Addr::from(ip.to_ne_bytes());
        Some(SocketAddr::V4(SocketAddrV4::new(
            ip,
            u16::from_str_radix(port, 16).ok()?,
        )))
    };
    let local = addr(fields.next()?)?;
    let remote = addr(fields.next()?)?;
    let state = u8::from_str_radix(fields.next()?, 16).ok()?;
    let (_, rx) = fields.next()?.split_once(':')?;
    let rx_queue = u64::from_str_radix(rx, 16).ok()?;
    Some(TcpSocket {
        local,
        remote,
        state,
        rx_queue,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_parses() {
        let row = "   3: 0100007F:1F90 0100007F:D431 01 00000000:0000002A 00:00000000 00000000  0 0 1 1";
        let s = parse_row(row).expect("a row");
        assert_eq!(s.local, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(s.remote, "127.0.0.1:54321".parse().unwrap());
        assert_eq!((s.state, s.rx_queue), (ESTABLISHED, 42));
    }

    #[test]
    fn a_listener_and_its_accepted_connection_are_seen() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        std::io::Write::write_all(&mut server, b"hello").unwrap();
        let me = client.local_addr().unwrap();
        crate::wait_until("the bytes in the client's queue", crate::DEADLINE, || {
            tcp_sockets()
                .iter()
                .any(|s| s.local == me && s.remote == addr && s.rx_queue == 5)
        });
        let sockets = tcp_sockets();
        assert!(
            sockets
                .iter()
                .any(|s| s.local == addr && s.state == LISTEN && s.rx_queue == 0)
        );
    }
}
