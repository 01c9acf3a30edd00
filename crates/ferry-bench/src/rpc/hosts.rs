//! Where a run's client and server live: one host (loopback), or two network namespaces made
//! for the run and joined by a veth pair (`--net veth`), through a bridge that drops packets
//! at random with `--loss` (nftables: this kernel has no netem qdisc).
//!
//! On veth the server is started from a thread that entered the server's namespace, so its
//! loop threads (spawned by that thread) and its sockets live there; the client thread enters
//! the client's namespace before it connects. Loopback and veth both copy on delivery: neither
//! is zero-copy, and veth adds the cost of a second network stack pass (and, with loss, of the
//! bridge).

use std::net::{IpAddr, Ipv4Addr};

use ferry_testkit::netns::VethPair;

use super::plan::Net;
use crate::BoxError;

/// The hosts of one run.
pub(super) enum Hosts {
    /// Client and server on this host, over 127.0.0.1.
    Loopback,
    /// The client in namespace `a`, the server in `b`.
    Veth(VethPair),
}

impl Hosts {
    /// Makes them: nothing for loopback; the namespaces (deleted when dropped) for veth.
    pub(super) fn new(net: Net, loss: Option<u8>) -> Result<Hosts, BoxError> {
        match net {
            Net::Loopback => Ok(Hosts::Loopback),
            Net::Veth => VethPair::new("rpc", loss, 1500).map(Hosts::Veth).map_err(|e| {
                format!("--net veth: making two namespaces joined by veth (root needed): {e}").into()
            }),
        }
    }

    /// The address the server listens on.
    pub(super) fn server_ip(&self) -> IpAddr {
        match self {
            Hosts::Loopback => Ipv4Addr::LOCALHOST.into(),
            Hosts::Veth(_) => VethPair::B_IP.into(),
        }
    }

    /// Runs `start` where the server lives: on the calling thread for loopback, on a thread in
    /// the server's namespace for veth (threads it spawns stay there).
    pub(super) fn in_server<T: Send>(
        &self,
        start: impl FnOnce() -> Result<T, BoxError> + Send,
    ) -> Result<T, BoxError> {
        match self {
            Hosts::Loopback => start(),
            Hosts::Veth(pair) => std::thread::scope(|s| {
                let thread = s.spawn(|| {
                    pair.b.enter()?;
                    start()
                });
                crate::harness::joined("the server's namespace", thread.join())
            }),
        }
    }

    /// Moves the calling thread (the client's) where the client lives.
    pub(super) fn enter_client(&self) -> Result<(), BoxError> {
        match self {
            Hosts::Loopback => Ok(()),
            Hosts::Veth(pair) => Ok(pair.a.enter()?),
        }
    }

    /// Packets the lossy bridge dropped so far (0 without one).
    pub(super) fn dropped(&self) -> Result<u64, BoxError> {
        match self {
            Hosts::Loopback => Ok(0),
            Hosts::Veth(pair) => Ok(pair.dropped()?),
        }
    }
}
