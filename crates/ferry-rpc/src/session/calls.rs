//! The calls of one session in progress, by id, with their deadlines in order: the table both
//! sides keep; and a stream's flow control, which both sides keep per streaming call.

use std::collections::BTreeSet;
use std::collections::hash_map::Entry;
use std::time::Instant;

use crate::CallId;
use crate::id::IdMap;
use crate::wire::{STREAM_WINDOW_BYTES, STREAM_WINDOW_MESSAGES};

/// A call in progress, with the value its driver keeps for it (`()` if none: the server's,
/// the blocking and tokio clients'; an event loop's client keeps the call's continuation).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<V = ()> {
    pub(crate) method: u16,
    pub(crate) deadline: Option<Instant>,
    /// The server's headers went out (server) or arrived (client), or can no longer: a message
    /// or an answer came first.
    pub(crate) headers_done: bool,
    /// The server's trailers went out (server) or arrived (client).
    pub(crate) trailers_done: bool,
    /// `Some` for a streaming call.
    pub(crate) stream: Option<Stream>,
    pub(crate) value: V,
}

impl<V> Call<V> {
    pub(crate) fn new(method: u16, deadline: Option<Instant>, streaming: bool, value: V) -> Call<V> {
        Call {
            method,
            deadline,
            headers_done: false,
            trailers_done: false,
            stream: streaming.then(Stream::new),
            value,
        }
    }
}

/// One direction's credit: how many messages and bytes may still be sent. A message may be
/// sent while both are positive; its length may take the bytes below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    messages: u32,
    bytes: i64,
}

impl Window {
    fn initial() -> Window {
        Window {
            messages: STREAM_WINDOW_MESSAGES,
            bytes: i64::from(STREAM_WINDOW_BYTES),
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.messages > 0 && self.bytes > 0
    }

    /// Takes one message of `len` bytes (the window must be open).
    fn take(&mut self, len: usize) {
        self.messages -= 1;
        self.bytes = self.bytes.saturating_sub(i64::try_from(len).unwrap_or(i64::MAX));
    }

    /// Adds a grant (saturating: a peer that grants without end only lets this side send).
    fn grant(&mut self, messages: u32, bytes: u32) {
        self.messages = self.messages.saturating_add(messages);
        self.bytes = self.bytes.saturating_add(i64::from(bytes));
    }
}

/// A streaming call's flow control on one side: what this side may send, what the peer may
/// still send it, and what this side's reader consumed and has not yet granted back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stream {
    /// This side's credit to send.
    send: Window,
    /// The peer's credit to send to this side, as this side granted it.
    recv: Window,
    /// Messages received and not yet consumed by the reader.
    held: u32,
    /// Their bytes.
    held_bytes: u64,
    /// Consumed and not yet granted back.
    consumed: u32,
    consumed_bytes: u64,
    /// The client sent its end frame.
    pub(crate) half_closed: bool,
}

/// Why a message of a stream was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Past the window the receiver granted.
    Window,
    /// After the client's end frame.
    Closed,
}

impl Stream {
    fn new() -> Stream {
        Stream {
            send: Window::initial(),
            recv: Window::initial(),
            held: 0,
            held_bytes: 0,
            consumed: 0,
            consumed_bytes: 0,
            half_closed: false,
        }
    }

    /// Whether this side may send a message now.
    pub(crate) fn can_send(&self) -> bool {
        self.send.is_open()
    }

    /// This side sends a message of `len` bytes (check [`can_send`](Self::can_send) first).
    pub(crate) fn sent(&mut self, len: usize) {
        self.send.take(len);
    }

    /// The peer granted more credit.
    pub(crate) fn granted(&mut self, messages: u32, bytes: u32) {
        self.send.grant(messages, bytes);
    }

    /// A message of `len` bytes from the peer: within its window (and, from the client, before
    /// its end frame), or refused.
    pub(crate) fn received(&mut self, len: usize, from_client: bool) -> Result<(), Refusal> {
        if from_client && self.half_closed {
            return Err(Refusal::Closed);
        }
        if !self.recv.is_open() {
            return Err(Refusal::Window);
        }
        self.recv.take(len);
        self.held += 1;
        self.held_bytes = self.held_bytes.saturating_add(len as u64);
        Ok(())
    }

    /// This side's reader consumed a message of `len` bytes: the grant to send back, once half
    /// a window has been consumed (`None`: nothing to send yet). Consuming more than was
    /// received grants nothing more.
    pub(crate) fn consumed(&mut self, len: usize) -> Option<(u32, u32)> {
        if self.held == 0 {
            return None;
        }
        let len = (len as u64).min(self.held_bytes);
        self.held -= 1;
        self.held_bytes -= len;
        self.consumed += 1;
        self.consumed_bytes += len;
        if self.consumed < STREAM_WINDOW_MESSAGES / 2
            && self.consumed_bytes < u64::from(STREAM_WINDOW_BYTES / 2)
        {
            return None;
        }
        let messages = std::mem::take(&mut self.consumed);
        let bytes = u32::try_from(std::mem::take(&mut self.consumed_bytes)).unwrap_or(u32::MAX);
        self.recv.grant(messages, bytes);
        Some((messages, bytes))
    }
}

/// Why [`Calls::insert_new`] added no call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unadded {
    /// A call with its id is in progress.
    InProgress,
    /// The table holds its maximum.
    Full,
}

#[derive(Debug)]
pub(crate) struct Calls<V = ()> {
    calls: IdMap<CallId, Call<V>>,
    deadlines: BTreeSet<(Instant, CallId)>,
}

impl<V> Default for Calls<V> {
    fn default() -> Calls<V> {
        Calls {
            calls: IdMap::default(),
            deadlines: BTreeSet::new(),
        }
    }
}

impl<V> Calls<V> {
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    pub(crate) fn get(&self, id: CallId) -> Option<&Call<V>> {
        self.calls.get(&id)
    }

    pub(crate) fn get_mut(&mut self, id: CallId) -> Option<&mut Call<V>> {
        self.calls.get_mut(&id)
    }

    /// Adds a call (its id must not be in progress).
    pub(crate) fn insert(&mut self, id: CallId, call: Call<V>) {
        if let Some(at) = call.deadline {
            self.deadlines.insert((at, id));
        }
        let old = self.calls.insert(id, call);
        debug_assert!(old.is_none(), "{id} was in progress");
    }

    /// Adds a call unless its id is in progress or `max` calls are, with one look-up.
    pub(crate) fn insert_new(&mut self, id: CallId, call: Call<V>, max: usize) -> Result<(), Unadded> {
        let len = self.calls.len();
        let Entry::Vacant(slot) = self.calls.entry(id) else {
            return Err(Unadded::InProgress);
        };
        if len >= max {
            return Err(Unadded::Full);
        }
        if let Some(at) = call.deadline {
            self.deadlines.insert((at, id));
        }
        slot.insert(call);
        Ok(())
    }

    /// Ends a call: `None` if it is not in progress.
    pub(crate) fn end(&mut self, id: CallId) -> Option<Call<V>> {
        let call = self.calls.remove(&id)?;
        if let Some(at) = call.deadline {
            self.deadlines.remove(&(at, id));
        }
        Some(call)
    }

    /// Ends a unary call (one look-up): `None` if it is not in progress or is a stream.
    pub(crate) fn end_unary(&mut self, id: CallId) -> Option<Call<V>> {
        self.end_unary_of(id, None).ok().flatten()
    }

    /// Ends a unary call of `method` (any method if `None`) with one look-up: `Ok(None)` if it
    /// is not in progress or is a stream, `Err` with its method if that is another (either
    /// way it stays as it was).
    pub(crate) fn end_unary_of(&mut self, id: CallId, method: Option<u16>) -> Result<Option<Call<V>>, u16> {
        let Entry::Occupied(entry) = self.calls.entry(id) else {
            return Ok(None);
        };
        let call = entry.get();
        if method.is_some_and(|m| m != call.method) {
            return Err(call.method);
        }
        if call.stream.is_some() {
            return Ok(None);
        }
        let call = entry.remove();
        if let Some(at) = call.deadline {
            self.deadlines.remove(&(at, id));
        }
        Ok(Some(call))
    }

    /// Ends unary call `id` once `f`, given the call, succeeds, with one look-up: `None` (`f`
    /// not called) if it is not in progress or is a stream; an error from `f` leaves it in
    /// progress.
    pub(crate) fn end_unary_with<R, E>(
        &mut self,
        id: CallId,
        f: impl FnOnce(&Call<V>) -> Result<R, E>,
    ) -> Option<Result<R, E>> {
        let Entry::Occupied(entry) = self.calls.entry(id) else {
            return None;
        };
        if entry.get().stream.is_some() {
            return None;
        }
        let r = match f(entry.get()) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        if let Some(at) = entry.remove().deadline {
            self.deadlines.remove(&(at, id));
        }
        Some(Ok(r))
    }

    /// The earliest deadline.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// Ends the call with the earliest deadline if that is at or before `now`.
    pub(crate) fn end_due(&mut self, now: Instant) -> Option<(CallId, Call<V>)> {
        let &(at, id) = self.deadlines.first()?;
        if at > now {
            return None;
        }
        let call = self.end(id).expect("a deadline belongs to a call in progress");
        Some((id, call))
    }

    /// Ends every call; returns them in id order.
    pub(crate) fn end_all(&mut self) -> Vec<(CallId, Call<V>)> {
        self.deadlines.clear();
        let mut all: Vec<(CallId, Call<V>)> = self.calls.drain().collect();
        all.sort_unstable_by_key(|&(id, _)| id);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_lets_one_message_overdraw_its_bytes_then_closes() {
        let mut s = Stream::new();
        s.received(STREAM_WINDOW_BYTES as usize - 1, true).unwrap();
        s.received(10 << 20, true).unwrap();
        assert_eq!(s.received(1, true), Err(Refusal::Window));
    }

    #[test]
    fn consuming_half_a_window_grants_it_back_and_no_more_than_was_received() {
        let mut s = Stream::new();
        for _ in 0..STREAM_WINDOW_MESSAGES {
            s.received(10, false).unwrap();
        }
        assert_eq!(s.received(10, false), Err(Refusal::Window));
        let grants: Vec<_> = (0..STREAM_WINDOW_MESSAGES)
            .filter_map(|_| s.consumed(10))
            .collect();
        assert_eq!(grants, [(16, 160), (16, 160)]);
        assert_eq!(s.consumed(10), None, "nothing held");
        assert!(s.recv.is_open());
        assert_eq!(s.recv, Window::initial());
    }

    #[test]
    fn the_client_may_not_send_after_its_end() {
        let mut s = Stream::new();
        s.half_closed = true;
        assert_eq!(s.received(1, true), Err(Refusal::Closed));
        assert_eq!(s.received(1, false), Ok(()), "the server still may");
    }

    #[test]
    fn grants_saturate() {
        let mut s = Stream::new();
        s.granted(u32::MAX, u32::MAX);
        s.granted(u32::MAX, u32::MAX);
        assert!(s.can_send());
        assert_eq!(s.send.messages, u32::MAX);
        s.sent(usize::MAX);
        assert_eq!(s.send.messages, u32::MAX - 1);
        assert!(!s.can_send(), "a message of usize::MAX bytes overdraws any grant");
    }
}
