//! Ferry's datagram protocol core, modelled on eRPC (NSDI'19): sessions, messages cut into
//! MTU-sized packets and reassembled in place into pool buffers, credits, a request window,
//! loss recovery and congestion control. Sans-IO.

#![forbid(unsafe_code)]

pub mod packet;

pub use packet::{Body, DataHeader, Header, Limits, Packet, PacketError, PacketType, SessionId};
