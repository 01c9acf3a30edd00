//! One session of an event loop: its connection, its side of the protocol, and the answers
//! waiting for the transport.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ferry_transport::{Interest, Meta, Payload, Transport, TransportError};
use ferry_wire::Context;

use crate::conn::TransportKind;
use crate::conn::frame_alone;
use crate::dispatch::{end_call, end_stream};
use crate::id::IdMap;
use crate::service::{Encoded, Outbox, ResponseMetadata, ResponseSlot};
use crate::session::{Client, Server};
use crate::status::{Status, unsent_response};
use crate::{CallId, Conn};

use super::Continuation;
use super::streams::Served;

/// The server side of a session.
pub(crate) struct ServerSide {
    pub(crate) core: Server,
    /// Background calls in progress: the flag their handler polls.
    pub(crate) background: IdMap<CallId, Arc<AtomicBool>>,
    /// Streams in progress: their handlers.
    pub(crate) streams: IdMap<CallId, Served>,
}

impl ServerSide {
    /// A new session's server side, with the loop's settings.
    pub(crate) fn new(config: &super::LoopConfig) -> ServerSide {
        ServerSide {
            core: Server::new(config.server.clone()),
            background: Default::default(),
            streams: Default::default(),
        }
    }
}

/// The client side of a session: its calls, each with its continuation.
pub(crate) struct ClientSide {
    pub(crate) core: Client<Continuation>,
    pub(crate) timeout: Option<std::time::Duration>,
}

pub(crate) enum Role {
    Server(ServerSide),
    Client(ClientSide),
}

pub(crate) struct Session {
    pub(crate) conn: Conn,
    /// What handlers build responses with (shared memory: the session's own pool).
    pub(crate) ctx: Context,
    pub(crate) role: Role,
    /// Frames the transport would not take yet (non-blocking sends), oldest first. While any
    /// wait, the session's requests are not read: the backlog is bounded by the calls in
    /// progress.
    pub(crate) backlog: VecDeque<(Meta, Encoded)>,
    /// The last poll found the descriptor ready.
    pub(crate) readable: bool,
    /// Frames remain buffered in user space (the last drain stopped at its budget).
    pub(crate) more: bool,
    /// Something was queued since the last flush.
    pub(crate) dirty: bool,
    /// A TCP socket refused the last write (its send buffer full: a peer that does not
    /// read): the backlog and queue are not tried again until the descriptor reports ready,
    /// so that such a peer costs no system call per turn.
    pub(crate) blocked: bool,
    /// What the descriptor is watched for (TCP): writability while something waits to go,
    /// readability unless answers wait in the backlog (its requests are not read then, and a
    /// level-triggered readable socket would end every wait at once: the loop would spin).
    pub(crate) watching: Interest,
    /// On the loop's hot list: looked at on every turn (see [`quiet`](Self::quiet)).
    pub(crate) hot: bool,
    /// The connection failed or the peer left: removed at the end of the turn.
    pub(crate) dead: Option<TransportError>,
    /// When the last frame came (or the session began): what its idle time counts from.
    pub(crate) last_frame: std::time::Instant,
    /// A served session's place under the connection limit, given back with the session.
    pub(crate) _admitted: Option<crate::metrics::Admitted>,
}

impl Session {
    /// Sends a frame, or keeps it in the backlog when the transport will not take it now.
    pub(crate) fn transmit(&mut self, meta: Meta, encoded: Encoded) {
        if self.backlog.is_empty() {
            match self.conn.send_payload(meta, encoded.payload()) {
                Ok(()) => {
                    self.dirty = true;
                    return;
                }
                Err(TransportError::WouldBlock) => {}
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        self.backlog.push_back((meta, encoded));
    }

    /// Sends what the backlog holds, as far as the transport takes it.
    pub(crate) fn drain_backlog(&mut self) {
        while let Some((meta, encoded)) = self.backlog.front() {
            match self.conn.send_payload(*meta, encoded.payload()) {
                Ok(()) => {
                    self.dirty = true;
                    self.backlog.pop_front();
                }
                Err(TransportError::WouldBlock) => return,
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
    }

    /// Writes what is queued, without waiting.
    pub(crate) fn flush(&mut self) {
        if !self.dirty {
            return;
        }
        match self.conn.flush() {
            Ok(()) => self.dirty = false,
            Err(TransportError::WouldBlock) => self.block(),
            Err(e) => self.fail(e),
        }
    }

    /// The transport took no more: a TCP session waits for its descriptor to report ready
    /// (watched for writability, and not for reading while answers wait in the backlog)
    /// before it tries again.
    pub(crate) fn block(&mut self) {
        self.blocked = self.conn.kind() == TransportKind::Tcp;
    }

    /// Ends server call `id` with `result` (see [`end_call`]): sends its frames, or nothing
    /// if the call is no longer in progress.
    pub(crate) fn end_call(&mut self, id: CallId, result: Result<Encoded, Status>, set: ResponseMetadata) {
        let Role::Server(server) = &mut self.role else {
            return;
        };
        for (meta, encoded) in end_call(&mut server.core, id, result, set) {
            self.transmit(meta, encoded);
        }
    }

    /// Ends served stream `id` with `result` (see [`end_stream`]).
    pub(crate) fn end_stream(&mut self, id: CallId, result: Result<(), Status>, set: ResponseMetadata) {
        let Role::Server(server) = &mut self.role else {
            return;
        };
        for (meta, encoded) in end_stream(&mut server.core, id, result, set) {
            self.transmit(meta, encoded);
        }
    }

    /// Nothing for the loop to do until the descriptor reports readiness: a TCP or UDP session
    /// with nothing to read, write or time (no call or stream in progress; a UDP descriptor
    /// also reports the transport's own timers). A TLS handshake waiting for its peer is quiet
    /// too: the loop keeps its deadline (`handshake_scan`). A quiet session leaves the loop's
    /// hot list, so that idle sessions and stalled handshakes cost a turn nothing.
    pub(crate) fn quiet(&mut self) -> bool {
        self.conn.kind() != TransportKind::Shm
            && self.dead.is_none()
            && !(self.more || self.readable)
            // Calls first: a client waiting for its answer is not quiet, whatever its
            // connection holds.
            && match &self.role {
                Role::Server(s) => {
                    s.core.in_flight() == 0
                        && s.core.next_deadline().is_none()
                        && s.background.is_empty()
                        && s.streams.is_empty()
                }
                Role::Client(c) => c.core.in_flight() == 0 && c.core.next_deadline().is_none(),
            }
            // Output a full socket refused waits off the list for the descriptor's report,
            // once it is watched as it should be (for writing; for reading only while no
            // answer waits in the backlog, lest unread requests report it on every wait).
            && if self.blocked {
                self.watching == (Interest { read: self.backlog.is_empty(), write: true })
            } else {
                !self.watching.write && !self.dirty && self.backlog.is_empty() && !self.conn.has_unsent()
            }
    }

    pub(crate) fn fail(&mut self, e: TransportError) {
        if self.dead.is_none() {
            self.dead = Some(e);
        }
    }

    /// Calls in progress on the server side, and answers not yet handed to the transport.
    pub(crate) fn busy(&self) -> usize {
        let calls = match &self.role {
            Role::Server(s) => s.core.in_flight(),
            Role::Client(_) => 0,
        };
        calls + self.backlog.len()
    }
}

/// The foreground answer path: ends the call in the core, then serializes and sends straight
/// into the transport (after the handler's response metadata, if it set some); if the
/// transport will not take it now, the answer is serialized into the backlog instead.
pub(crate) struct SessionOutbox<'s> {
    pub(crate) conn: &'s mut Conn,
    pub(crate) core: &'s mut Server,
    pub(crate) backlog: &'s mut VecDeque<(Meta, Encoded)>,
    pub(crate) dirty: &'s mut bool,
    pub(crate) dead: &'s mut Option<TransportError>,
    pub(crate) id: CallId,
    /// The call's response metadata, as the handler set it.
    pub(crate) metadata: &'s ResponseSlot,
}

impl Outbox for SessionOutbox<'_> {
    fn respond(
        &mut self,
        send: &mut dyn FnMut(&mut Conn, Meta) -> Result<(), TransportError>,
        encode: &mut dyn FnMut() -> Result<Encoded, Status>,
    ) -> Result<bool, Status> {
        // Metadata the handler set goes first (none set, the common case: nothing to build).
        if self.metadata.is_set() {
            if self.core.response_meta(self.id).is_none() {
                return Ok(false);
            }
            let set = self.metadata.take();
            let headers = self.core.headers(self.id, &set.headers);
            let trailers = self.core.trailers(self.id, &set.trailers);
            for (md_meta, payload) in headers.into_iter().chain(trailers) {
                // Whatever happens to the response, the metadata goes first (a failure status
                // follows it in the same order).
                let queued = self.backlog.is_empty()
                    && match self.conn.send_payload(md_meta, Payload::Bytes(&payload)) {
                        Ok(()) => true,
                        Err(TransportError::WouldBlock) => false,
                        Err(e) => {
                            return Err(Status::new(
                                crate::Code::Internal,
                                format!("sending the response metadata: {e}"),
                            ));
                        }
                    };
                if queued {
                    *self.dirty = true;
                } else {
                    self.backlog.push_back((md_meta, Encoded::from_vec(payload)));
                }
            }
        }
        let SessionOutbox {
            conn,
            core,
            backlog,
            dirty,
            dead,
            id,
            ..
        } = self;
        // The call ends once its response is sent or queued (one look-up in its table).
        let sent = core.respond_with(*id, |meta| {
            if !backlog.is_empty() {
                backlog.push_back((meta, encode()?));
                return Ok(());
            }
            match send(conn, meta) {
                Ok(()) => **dirty = true,
                Err(TransportError::WouldBlock) => backlog.push_back((meta, encode()?)),
                // Errors about this one frame leave the connection usable with nothing
                // queued: the call is still in progress and fails with the status.
                Err(e) if frame_alone(&e) => return Err(unsent_response(&e)),
                Err(e) => {
                    if dead.is_none() {
                        **dead = Some(e);
                    }
                }
            }
            Ok(())
        });
        sent.map_or(Ok(false), |r| r.map(|()| true))
    }
}
