//! Ferry's datagram protocol core, modelled on eRPC (NSDI'19): sessions, messages cut into
//! MTU-sized packets and reassembled in place into pool buffers, credits, a request window,
//! loss recovery and congestion control. Sans-IO.

#![forbid(unsafe_code)]

mod config;
mod endpoint;
mod event;
pub mod packet;
mod rtt;
mod session;
mod stats;

pub use config::{Config, ConfigError, MAX_CREDITS};
pub use endpoint::Endpoint;
pub use event::{ConnectError, Event, SendError, SessionError, Transmit};
pub use packet::{Packet, PacketError, SessionId};
pub use stats::{Dropped, Drops, SessionStats, Stats};
