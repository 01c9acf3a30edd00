//! RESP without I/O: the request parser ([`parse`]) and the reply encoder ([`reply`]); and
//! the client's side, which reads replies ([`client`]).

pub mod client;
pub mod parse;
pub mod reply;

pub use parse::{
    ParseLimits, Parsed, ProtocolError, Resume, parse_command, parse_command_unauthenticated, resume_command,
};
pub use reply::{Proto, ReplyBuf};
