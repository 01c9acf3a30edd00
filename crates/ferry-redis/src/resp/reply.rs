//! The reply encoder. STUB signatures: the real encoder replaces the bodies.

use ferry_buf::SharedBuf;

/// The protocol version a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Proto {
    /// RESP2 (the default).
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// Replies being built for one batch: framing and small values as bytes, large values as
/// `(offset, buffer)` references to be posted as gather entries at that offset of the bytes.
#[derive(Debug, Default)]
pub struct ReplyBuf {
    bytes: Vec<u8>,
    refs: Vec<(usize, SharedBuf)>,
    threshold: usize,
    proto: Proto,
    copied: u64,
    referenced: u64,
}

#[allow(missing_docs, unused_variables)]
impl ReplyBuf {
    pub fn new(threshold: usize) -> ReplyBuf { ReplyBuf { threshold, ..ReplyBuf::default() } }
    pub fn set_proto(&mut self, proto: Proto) { self.proto = proto }
    pub fn proto(&self) -> Proto { self.proto }
    pub fn ok(&mut self) { todo!() }
    pub fn simple(&mut self, s: &str) { todo!() }
    pub fn error(&mut self, msg: &str) { todo!() }
    pub fn integer(&mut self, n: i64) { todo!() }
    pub fn bulk(&mut self, b: &[u8]) { todo!() }
    pub fn bulk_buf(&mut self, b: &SharedBuf) { todo!() }
    pub fn null(&mut self) { todo!() }
    pub fn null_array(&mut self) { todo!() }
    pub fn array(&mut self, n: usize) { todo!() }
    pub fn map(&mut self, n: usize) { todo!() }
    pub fn set(&mut self, n: usize) { todo!() }
    pub fn double(&mut self, d: f64) { todo!() }
    pub fn boolean(&mut self, b: bool) { todo!() }
    pub fn verbatim(&mut self, format: &str, text: &[u8]) { todo!() }
    pub fn is_empty(&self) -> bool { todo!() }
    pub fn len(&self) -> usize { todo!() }
    pub fn parts(&self) -> (&[u8], &[(usize, SharedBuf)]) { (&self.bytes, &self.refs) }
    pub fn clear(&mut self) { todo!() }
    pub fn copied_value_bytes(&self) -> u64 { self.copied }
    pub fn referenced_value_bytes(&self) -> u64 { self.referenced }
}
