//! The id of a call within its session.

/// A call's id within its session: the frames' `request_id`. Ids of different sessions are
/// unrelated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

impl std::fmt::Display for CallId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "call {}", self.0)
    }
}
