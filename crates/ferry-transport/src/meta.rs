//! What a frame carries besides its payload.

/// What the application says about a frame it sends, and reads back on the frame received:
/// everything in a frame's header but the length, which the transport fills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Meta {
    /// Application-defined message type, passed through untouched.
    pub kind: u16,
    /// Application-defined flags, passed through untouched.
    pub flags: u8,
    /// The RPC layer's request id (0 when unused).
    pub request_id: u64,
}

impl Meta {
    /// A frame of `kind` for request `request_id`, no flags.
    pub const fn new(kind: u16, request_id: u64) -> Meta {
        Meta {
            kind,
            flags: 0,
            request_id,
        }
    }
}
