//! Decoding: validate once, then read in place.

mod error;
mod view;

pub use error::{DecodeError, DecodeErrorKind};
pub use view::{BytesList, Limits, MessageList, ScalarList, View};
