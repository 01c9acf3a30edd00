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

/// A hash map keyed by small integers (call ids, method ids) with a one-multiply hash instead
/// of SipHash: the per-call tables are on the hot path (SipHash cost ~1,000 instructions per
/// call in `docs/benchmarks/rpc.md`'s profile). A peer chooses the call ids, but every table
/// keyed by them is bounded (the session's calls in progress, its request window), so a
/// peer that makes ids collide can slow only its own session's lookups, within that bound.
pub(crate) type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`]: Fibonacci hashing of an integer key.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
