//! [`ZSet`]: the collection inside a sorted set: members (pool buffers) with a score each,
//! ordered by (score, member bytes) as Redis orders them.
//!
//! Two structures: a [`FieldTable`] from member to score (lookup by member) and a `BTreeSet`
//! of (score, member) (order). Costs: a score lookup O(1); an insertion, update or removal
//! O(log n); a rank (`ZRANK`) O(rank), since a B-tree does not count its subtrees; a range
//! by rank O(start + count) and by score or lexicographic bounds O(n) in the worst case. Both
//! structures share each member's buffer (a counted reference, no copy).

use std::cmp::Ordering;
use std::collections::BTreeSet;

use ferry_buf::SharedBuf;

use crate::fields::{FieldTable, Payload};

/// What the order index costs per member in [`Db::used_memory`](crate::db::Db::used_memory),
/// besides the member table's share.
pub const ORDER_OVERHEAD: usize = 32;

impl Payload for f64 {
    fn bytes(&self) -> usize {
        0
    }
}

/// One member in score order. Scores are never NaN (commands refuse them), so the order is
/// total; `-0` and `0` compare equal, as in C.
#[derive(Debug, Clone)]
struct Ranked {
    score: f64,
    member: SharedBuf,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| self.member[..].cmp(&other.member[..]))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

/// Redis keeps a sorted set as a listpack up to this many members (`zset-max-listpack-entries`).
const LISTPACK_ENTRIES: usize = 128;
/// ... and members up to this long (`zset-max-listpack-value`).
const LISTPACK_VALUE: usize = 64;

/// A sorted set.
#[derive(Debug, Clone, Default)]
pub struct ZSet {
    scores: FieldTable<f64>,
    order: BTreeSet<Ranked>,
    /// Whether Redis would have converted this set from a listpack to a skiplist by now (it
    /// never converts back). One behaviour depends on it: a listpack stores a score as text,
    /// and `-0` reads back as `0`; a skiplist keeps `-0`.
    skiplist: bool,
}

impl ZSet {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The memory estimate: the member table's plus [`ORDER_OVERHEAD`] per member. O(1).
    pub fn memory(&self) -> usize {
        self.scores.memory() + self.len() * ORDER_OVERHEAD
    }

    /// The member table (random picks).
    pub fn members(&self) -> &FieldTable<f64> {
        &self.scores
    }

    /// `member`'s score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).map(|(_, s)| *s)
    }

    /// Records that Redis would now hold this set as a skiplist whatever its size (`SORT`
    /// converts the sets it sorts).
    pub fn convert_to_skiplist(&mut self) {
        self.skiplist = true;
    }

    /// Sets `member`'s score (`score` is not NaN); an existing member keeps its buffer.
    pub fn insert(&mut self, member: SharedBuf, score: f64) {
        debug_assert!(!score.is_nan());
        let new = !self.scores.contains(&member);
        if (new && self.len() + 1 > LISTPACK_ENTRIES) || member.len() > LISTPACK_VALUE {
            self.skiplist = true;
        }
        // `-0` as a listpack stores it: the text "-0", read back as 0.
        let score = if score == 0.0 && !self.skiplist {
            0.0
        } else {
            score
        };
        let member = match self.scores.get(&member) {
            Some((m, old)) => {
                let m = m.clone();
                self.order.remove(&Ranked {
                    score: *old,
                    member: m.clone(),
                });
                m
            }
            None => member,
        };
        self.scores.insert(member.clone(), score);
        self.order.insert(Ranked { score, member });
    }

    /// A sorted set of distinct members made at once, as Redis converts one it computed
    /// (`ZUNIONSTORE`, ...): kept as a listpack only if it is small enough for one as a whole.
    pub fn collect(members: Vec<(SharedBuf, f64)>) -> ZSet {
        let skiplist =
            members.len() > LISTPACK_ENTRIES || members.iter().any(|(m, _)| m.len() > LISTPACK_VALUE);
        let mut z = ZSet {
            skiplist,
            ..ZSet::default()
        };
        for (m, s) in members {
            z.insert(m, s);
        }
        z
    }

    /// Removes `member`; its buffer and score if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<(SharedBuf, f64)> {
        let (m, score) = self.scores.remove(member)?;
        self.order.remove(&Ranked {
            score,
            member: m.clone(),
        });
        Some((m, score))
    }

    /// Members and scores, lowest first (`.rev()` for highest first).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&SharedBuf, f64)> + '_ {
        self.order.iter().map(|r| (&r.member, r.score))
    }

    /// Members with a score in `min..max`, lowest first, for scores that are integers around
    /// `min` (a geo set's cells): O(log n) to the first, then one step each.
    pub fn score_range(&self, min: f64, max: f64) -> impl Iterator<Item = (&SharedBuf, f64)> + '_ {
        // A bound needs a member: any will do below `min - 1`, and no integer lies between.
        let from = self.order.first().map(|r| Ranked {
            score: min - 1.0,
            member: r.member.clone(),
        });
        from.into_iter()
            .flat_map(move |from| self.order.range(from..))
            .skip_while(move |r| r.score < min)
            .take_while(move |r| r.score < max)
            .map(|r| (&r.member, r.score))
    }

    /// `member`'s position from the lowest (0-based).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let (m, score) = self.scores.get(member)?;
        let at = Ranked {
            score: *score,
            member: m.clone(),
        };
        Some(self.order.range(..at).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_ranks_and_memory() {
        let pool = ferry_testkit::pool();
        let b = |s: &[u8]| pool.copy_from(s).unwrap();
        let mut z = ZSet::default();
        z.insert(b(b"b"), 1.0);
        z.insert(b(b"a"), 1.0);
        z.insert(b(b"c"), -2.5);
        let order: Vec<&[u8]> = z.iter().map(|(m, _)| &m[..]).collect();
        assert_eq!(order, [b"c", b"a", b"b"]);
        assert_eq!(z.rank(b"b"), Some(2));
        z.insert(b(b"b"), -3.0);
        assert_eq!(z.rank(b"b"), Some(0));
        assert_eq!(z.len(), 3);
        assert_eq!(
            z.memory(),
            3 + 3 * (crate::fields::ENTRY_OVERHEAD + ORDER_OVERHEAD)
        );
        assert_eq!(z.remove(b"a").map(|(_, s)| s), Some(1.0));
        assert_eq!(z.rank(b"a"), None);
        assert_eq!(z.iter().next_back().map(|(m, _)| m.to_vec()), Some(b"c".to_vec()));
    }
}
