//! The calls of one session in progress, by id, with their deadlines in order: the table both
//! sides keep.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::CallId;
use crate::id::IdMap;

/// A call in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    pub(crate) method: u16,
    pub(crate) deadline: Option<Instant>,
    /// Server: its response metadata went out (a call sends one metadata frame at most).
    pub(crate) sent_metadata: bool,
}

impl Call {
    pub(crate) fn new(method: u16, deadline: Option<Instant>) -> Call {
        Call {
            method,
            deadline,
            sent_metadata: false,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Calls {
    calls: IdMap<CallId, Call>,
    deadlines: BTreeSet<(Instant, CallId)>,
}

impl Calls {
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    pub(crate) fn get(&self, id: CallId) -> Option<&Call> {
        self.calls.get(&id)
    }

    pub(crate) fn get_mut(&mut self, id: CallId) -> Option<&mut Call> {
        self.calls.get_mut(&id)
    }

    /// Adds a call (its id must not be in progress).
    pub(crate) fn insert(&mut self, id: CallId, call: Call) {
        if let Some(at) = call.deadline {
            self.deadlines.insert((at, id));
        }
        let old = self.calls.insert(id, call);
        debug_assert!(old.is_none(), "{id} was in progress");
    }

    /// Ends a call: `None` if it is not in progress.
    pub(crate) fn end(&mut self, id: CallId) -> Option<Call> {
        let call = self.calls.remove(&id)?;
        if let Some(at) = call.deadline {
            self.deadlines.remove(&(at, id));
        }
        Some(call)
    }

    /// The earliest deadline.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// Ends the call with the earliest deadline if that is at or before `now`.
    pub(crate) fn end_due(&mut self, now: Instant) -> Option<(CallId, Call)> {
        let &(at, id) = self.deadlines.first()?;
        if at > now {
            return None;
        }
        let call = self.end(id).expect("a deadline belongs to a call in progress");
        Some((id, call))
    }

    /// Ends every call; returns them in id order.
    pub(crate) fn end_all(&mut self) -> Vec<(CallId, Call)> {
        self.deadlines.clear();
        let mut all: Vec<(CallId, Call)> = self.calls.drain().collect();
        all.sort_unstable_by_key(|&(id, _)| id);
        all
    }
}
