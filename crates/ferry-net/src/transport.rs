//! [`Transport`] and [`Received`] for TCP: [`Connection`] and its [`Frame`]s.

use ferry_wire::{DecodeError, Limits, MessageDesc, Outgoing, View};

use crate::reader::Frame;
use crate::{Connection, Meta, Payload, Received, Transport, TransportError};

impl Transport for Connection {
    type Frame = Frame;

    fn send<M: Outgoing + ?Sized>(&mut self, meta: Meta, msg: &M) -> Result<(), TransportError> {
        Connection::send(self, meta, msg)
    }

    fn send_payload(&mut self, meta: Meta, payload: Payload<'_>) -> Result<(), TransportError> {
        Connection::send_payload(self, meta, payload)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Connection::flush(self)
    }

    fn recv(&mut self) -> Result<Frame, TransportError> {
        Connection::recv(self)
    }

    fn try_recv(&mut self) -> Result<Option<Frame>, TransportError> {
        Connection::try_recv(self)
    }

    fn in_flight(&self) -> usize {
        Connection::in_flight(self)
    }
}

impl Received for Frame {
    fn meta(&self) -> Meta {
        Frame::meta(self)
    }

    fn bytes(&self) -> Option<&[u8]> {
        Some(self.payload())
    }

    fn view<'a>(&'a self, desc: &'a MessageDesc<'a>, limits: &Limits) -> Result<View<'a>, DecodeError> {
        View::decode_shared(self.payload(), desc, limits)
    }
}
