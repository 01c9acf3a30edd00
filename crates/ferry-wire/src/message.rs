//! The traits every generated message type implements: [`Message`] for the type, and
//! [`MessageView`] for its validated, zero-copy view.
//!
//! They tie a type to its descriptor and its view type, so that code can be generic over
//! message types (an RPC codec, a store, a gateway) instead of generated per method:
//!
//! ```
//! use ferry_wire::{Context, Message, MessageView, Outgoing};
//!
//! /// Decodes `bytes` as an `M` and encodes it again (the echo path of a server).
//! fn reencode<'a, 'b, M: Message<'a>>(
//!     bytes: &'b [u8],
//!     ctx: &'b Context,
//! ) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
//!     let view = M::decode(bytes)?;
//!     Ok(view.to_message(ctx)?.to_vec()?)
//! }
//! ```
//!
//! `DynamicMessage` is not a `Message`: its descriptor is chosen at run time, per value.

use ferry_buf::SharedBuf;

use crate::{Context, DecodeError, Encode, Limits, MessageDesc, View};

/// A message type of a schema: what `ferry-build` generates for each `message` (and what the
/// hand-written samples implement). `'a` is the lifetime of the values the message borrows.
///
/// The decode functions validate the whole message once against [`Message::desc`] and return
/// the typed view, which then reads fields in place.
pub trait Message<'a>: Encode<'a> + Sized {
    /// The validated view of an encoded message of this type, reading a buffer of lifetime `'b`.
    type View<'b>: MessageView<'b>;

    /// The message's descriptor (the schema the decoder validates against).
    fn desc() -> &'static MessageDesc<'static>;

    /// Wraps a view validated against [`desc`](Self::desc); `None` for a view of another type
    /// (what a transport's `Received::view(M::desc(), ..)` returns is accepted). An
    /// implementation must return `Some` for every view validated against `desc()`: the
    /// decode functions rely on it.
    fn view_of(view: View<'_>) -> Option<Self::View<'_>>;

    /// Validates `buf` with the default [`Limits`] and returns a view that reads it in place.
    fn decode(buf: &[u8]) -> Result<Self::View<'_>, DecodeError> {
        Self::decode_with(buf, &Limits::default())
    }

    /// Like [`decode`](Self::decode), with explicit limits.
    fn decode_with<'b>(buf: &'b [u8], limits: &Limits) -> Result<Self::View<'b>, DecodeError> {
        View::decode(buf, Self::desc(), limits).map(|v| Self::view_of(v).expect("validated against desc()"))
    }

    /// Like [`decode`](Self::decode); `bytes` fields can then be taken as shared sub-buffers of
    /// `buf` (zero-copy forwarding).
    fn decode_shared(buf: &SharedBuf) -> Result<Self::View<'_>, DecodeError> {
        View::decode_shared(buf, Self::desc(), &Limits::default())
            .map(|v| Self::view_of(v).expect("validated against desc()"))
    }

    /// Validates the message whose root header is at `at` of a region both peers map (a
    /// shared-memory transport; offsets are region-relative) and reads it in place.
    /// `limits.max_message_len` bounds the bytes the message references, not the region.
    fn decode_at<'b>(region: &'b [u8], at: usize, limits: &Limits) -> Result<Self::View<'b>, DecodeError> {
        View::decode_at(region, at, Self::desc(), limits)
            .map(|v| Self::view_of(v).expect("validated against desc()"))
    }
}

/// The validated, zero-copy view of one message type (generated as `FooView<'b>`).
pub trait MessageView<'b>: Copy {
    /// The message type this view reads, borrowing from the same buffer.
    type Message: Encode<'b>;

    /// The untyped view underneath (field access by number, `DynamicMessage::from_view`).
    fn view(&self) -> &View<'b>;

    /// An outgoing message with this view's contents, whose large `bytes` fields reference
    /// the received buffer (decode, change a field, send back without copying untouched large
    /// fields). Fails if a string is not UTF-8.
    fn to_message(&self, ctx: &'b Context) -> Result<Self::Message, DecodeError>;
}
