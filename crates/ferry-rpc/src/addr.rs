//! Addresses: `tcp://host:port`, `tls://host:port`, `udp://host:port`,
//! `xdp://IFNAME/QUEUE@IP:PORT` or `shm:///path/of/the/rendezvous.sock`.

use std::fmt;
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::str::FromStr;

/// Where a server listens or a client connects; the scheme picks the transport.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Addr {
    /// TCP (`ferry-net`): `tcp://127.0.0.1:7000`, `tcp://localhost:7000`.
    Tcp(String),
    /// TLS over TCP (`ferry-net`'s rustls): `tls://localhost:7000`. The client checks the
    /// server's certificate against the host (or [`TlsClient::server_name`](ferry_net::TlsClient)),
    /// with the settings in [`ConnConfig::tls_client`](crate::ConnConfig::tls_client); a server
    /// needs [`ConnConfig::tls_server`](crate::ConnConfig::tls_server).
    Tls(String),
    /// Shared memory (`ferry-shm`) through a Unix-socket rendezvous: `shm:///run/kv.sock`.
    Shm(PathBuf),
    /// Datagrams (`ferry-dgram`'s sessions over UDP): `udp://127.0.0.1:7000`.
    Udp(String),
    /// Datagrams (`ferry-dgram`'s sessions) over an AF_XDP socket on one interface queue:
    /// `xdp://veth0/0@10.0.0.2:7000`. A server serves on `addr` (its own address on that
    /// interface; port 0 picks one); a client connects to the server at `addr`, from the
    /// interface's own address.
    Xdp {
        /// The interface.
        ifname: String,
        /// Its queue.
        queue: u32,
        /// The server's IPv4 address and port.
        addr: SocketAddrV4,
    },
}

/// An address that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "address `{addr}`: {reason} (expected tcp://host:port, tls://host:port, udp://host:port, xdp://IFNAME/QUEUE@IP:PORT or shm:///path)"
)]
pub struct AddrError {
    addr: String,
    reason: &'static str,
}

impl FromStr for Addr {
    type Err = AddrError;

    fn from_str(s: &str) -> Result<Addr, AddrError> {
        let bad = |reason| AddrError {
            addr: s.to_string(),
            reason,
        };
        let host_port = |rest: &str| {
            let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
            if host.is_empty() {
                return Err(bad("no host"));
            }
            port.parse::<u16>()
                .map_err(|_| bad("port is not a number in 0..=65535"))?;
            Ok(rest.to_string())
        };
        if let Some(rest) = s.strip_prefix("tcp://") {
            host_port(rest).map(Addr::Tcp)
        } else if let Some(rest) = s.strip_prefix("tls://") {
            host_port(rest).map(Addr::Tls)
        } else if let Some(rest) = s.strip_prefix("udp://") {
            host_port(rest).map(Addr::Udp)
        } else if let Some(rest) = s.strip_prefix("xdp://") {
            let (iface, addr) = rest.split_once('@').ok_or_else(|| bad("no @IP:PORT"))?;
            let (ifname, queue) = iface.rsplit_once('/').ok_or_else(|| bad("no /QUEUE"))?;
            if ifname.is_empty() || ifname.contains('/') {
                return Err(bad("no interface name"));
            }
            Ok(Addr::Xdp {
                ifname: ifname.to_string(),
                queue: queue.parse().map_err(|_| bad("queue is not a number"))?,
                addr: addr.parse().map_err(|_| bad("not an IPv4 address and port"))?,
            })
        } else if let Some(rest) = s.strip_prefix("shm://") {
            if !rest.starts_with('/') {
                return Err(bad("the path must be absolute (shm:///path)"));
            }
            Ok(Addr::Shm(PathBuf::from(rest)))
        } else {
            Err(bad("unknown scheme"))
        }
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Tcp(a) => write!(f, "tcp://{a}"),
            Addr::Tls(a) => write!(f, "tls://{a}"),
            Addr::Shm(p) => write!(f, "shm://{}", p.display()),
            Addr::Udp(a) => write!(f, "udp://{a}"),
            Addr::Xdp { ifname, queue, addr } => write!(f, "xdp://{ifname}/{queue}@{addr}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Addr;

    #[test]
    fn parses_every_scheme() {
        assert_eq!(
            "tcp://127.0.0.1:7000".parse(),
            Ok(Addr::Tcp("127.0.0.1:7000".into()))
        );
        assert_eq!("tcp://[::1]:0".parse(), Ok(Addr::Tcp("[::1]:0".into())));
        assert_eq!("shm:///run/kv.sock".parse(), Ok(Addr::Shm("/run/kv.sock".into())));
        assert_eq!(Addr::Shm("/a/b".into()).to_string(), "shm:///a/b");
        assert_eq!(
            "tls://localhost:7443".parse(),
            Ok(Addr::Tls("localhost:7443".into()))
        );
        assert_eq!(Addr::Tls("[::1]:1".into()).to_string(), "tls://[::1]:1");
        assert_eq!(
            "udp://127.0.0.1:7000".parse(),
            Ok(Addr::Udp("127.0.0.1:7000".into()))
        );
        assert_eq!(Addr::Udp("[::1]:1".into()).to_string(), "udp://[::1]:1");
        let xdp = Addr::Xdp {
            ifname: "veth0".into(),
            queue: 3,
            addr: "10.0.0.2:7000".parse().unwrap(),
        };
        assert_eq!("xdp://veth0/3@10.0.0.2:7000".parse(), Ok(xdp.clone()));
        assert_eq!(xdp.to_string(), "xdp://veth0/3@10.0.0.2:7000");
    }

    #[test]
    fn rejects_what_it_cannot_use() {
        for bad in [
            "udp://x",
            "udp://:1",
            "xdp://veth0@10.0.0.2:1",
            "xdp://veth0/0",
            "xdp:///0@10.0.0.2:1",
            "xdp://veth0/q@10.0.0.2:1",
            "xdp://veth0/0@host:1",
            "xdp://veth0/0@[::1]:1",
            "xdp://veth0/0@10.0.0.2",
            "quic://x:1",
            "tcp://host",
            "tcp://:80",
            "tcp://h:99999",
            "tls://host",
            "tls://:443",
            "shm://rel/path",
            "127.0.0.1:7",
        ] {
            let e = bad.parse::<Addr>().expect_err(bad);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
