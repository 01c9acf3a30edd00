//! The one encoding of openraft's values that ferry-kv writes: log entries and the vote in the
//! redb log, snapshots, and the bodies of peer messages. Little-endian integers, lengths as
//! `u32`; [`Reader`] is the only door for stored or peer bytes: every read is bounds-checked and
//! every count is checked against the bytes left before anything is allocated for it.
//!
//! A normal entry's command (the client's Ferry `kv` message) is not in the body of an
//! AppendEntries: it travels beside it, as one `bytes` field of the `RaftFrame` per entry
//! ([`encode_entries`] returns the commands, [`decode_entries`] takes them back).

use std::collections::{BTreeMap, BTreeSet};

use ferry_buf::SharedBuf;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{
    BasicNode, CommittedLeaderId, Entry, EntryPayload, LogId, Membership, SnapshotMeta, StoredMembership,
    Vote,
};

use super::{Command, NodeId, Op, TypeConfig};

/// Why stored or peer bytes do not decode: what was being read and at which offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at offset {offset}: {why}")]
pub struct CodecError {
    /// The value being read (`"entry"`, `"vote"`, ...).
    pub what: &'static str,
    /// Where in the bytes.
    pub offset: usize,
    /// What was wrong.
    pub why: String,
}

/// Appends values to a byte vector.
#[derive(Debug, Default)]
pub struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// The bytes written.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    fn len(&mut self, n: usize) {
        // Every length written is of something this process holds in memory and sends in one
        // frame, far below 4 GiB.
        self.out.extend_from_slice(&(n as u32).to_le_bytes());
    }

    fn bytes(&mut self, v: &[u8]) {
        self.len(v.len());
        self.out.extend_from_slice(v);
    }

    fn log_id(&mut self, id: &Option<LogId<NodeId>>) {
        match id {
            None => self.u8(0),
            Some(id) => {
                self.u8(1);
                self.u64(id.leader_id.term);
                self.u64(id.leader_id.node_id);
                self.u64(id.index);
            }
        }
    }

    fn vote(&mut self, v: &Vote<NodeId>) {
        self.u64(v.leader_id.term);
        self.u64(v.leader_id.node_id);
        self.u8(u8::from(v.committed));
    }

    fn membership(&mut self, m: &Membership<NodeId, BasicNode>) {
        let configs = m.get_joint_config();
        self.len(configs.len());
        for c in configs {
            self.len(c.len());
            c.iter().for_each(|id| self.u64(*id));
        }
        let nodes: Vec<_> = m.nodes().collect();
        self.len(nodes.len());
        for (id, node) in nodes {
            self.u64(*id);
            self.bytes(node.addr.as_bytes());
        }
    }

    fn stored_membership(&mut self, m: &StoredMembership<NodeId, BasicNode>) {
        self.log_id(m.log_id());
        self.membership(m.membership());
    }

    /// Writes a snapshot's metadata.
    pub fn snapshot_meta(&mut self, meta: &SnapshotMeta<NodeId, BasicNode>) {
        self.log_id(&meta.last_log_id);
        self.stored_membership(&meta.last_membership);
        self.bytes(meta.snapshot_id.as_bytes());
    }

    /// Writes an entry; its command, if `with_command`, inline (the log), else not at all (a
    /// peer message, which carries it beside the body).
    fn entry(&mut self, e: &Entry<TypeConfig>, with_command: bool) {
        self.log_id(&Some(e.log_id));
        match &e.payload {
            EntryPayload::Blank => self.u8(0),
            EntryPayload::Normal(c) => {
                self.u8(1);
                self.u8(c.op as u8);
                if with_command {
                    self.bytes(&c.msg);
                }
            }
            EntryPayload::Membership(m) => {
                self.u8(2);
                self.membership(m);
            }
        }
    }
}

/// Reads values written by [`Writer`], checked.
#[derive(Debug)]
pub struct Reader<'b> {
    buf: &'b [u8],
    at: usize,
    what: &'static str,
}

impl<'b> Reader<'b> {
    /// Reads `buf`, a `what` (named in errors).
    pub fn new(buf: &'b [u8], what: &'static str) -> Reader<'b> {
        Reader { buf, at: 0, what }
    }

    fn err(&self, why: impl Into<String>) -> CodecError {
        CodecError {
            what: self.what,
            offset: self.at,
            why: why.into(),
        }
    }

    /// Fails unless every byte was read.
    pub fn end(&self) -> Result<(), CodecError> {
        if self.at == self.buf.len() {
            Ok(())
        } else {
            Err(self.err(format!("{} bytes left over", self.buf.len() - self.at)))
        }
    }

    fn take(&mut self, n: usize) -> Result<&'b [u8], CodecError> {
        let left = self.buf.len() - self.at;
        if n > left {
            return Err(self.err(format!("{n} bytes needed, {left} left")));
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn flag(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.err(format!("flag {v}, expected 0 or 1"))),
        }
    }

    /// A count of items of at least `item` bytes each: at most what the bytes left can hold.
    fn count(&mut self, item: usize) -> Result<usize, CodecError> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        let n = u32::from_le_bytes(b) as usize;
        let left = self.buf.len() - self.at;
        if n.saturating_mul(item.max(1)) > left {
            return Err(self.err(format!("count {n} of {item}-byte items, only {left} bytes left")));
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<&'b [u8], CodecError> {
        let n = self.count(1)?;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, CodecError> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|e| self.err(format!("not UTF-8: {e}")))
    }

    fn log_id(&mut self) -> Result<Option<LogId<NodeId>>, CodecError> {
        if !self.flag()? {
            return Ok(None);
        }
        let term = self.u64()?;
        let node = self.u64()?;
        let index = self.u64()?;
        Ok(Some(LogId::new(CommittedLeaderId::new(term, node), index)))
    }

    fn some_log_id(&mut self) -> Result<LogId<NodeId>, CodecError> {
        self.log_id()?
            .ok_or_else(|| self.err("an entry without a log id"))
    }

    fn vote(&mut self) -> Result<Vote<NodeId>, CodecError> {
        let term = self.u64()?;
        let node = self.u64()?;
        Ok(if self.flag()? {
            Vote::new_committed(term, node)
        } else {
            Vote::new(term, node)
        })
    }

    fn membership(&mut self) -> Result<Membership<NodeId, BasicNode>, CodecError> {
        let mut configs = Vec::new();
        for _ in 0..self.count(4)? {
            let mut set = BTreeSet::new();
            for _ in 0..self.count(8)? {
                set.insert(self.u64()?);
            }
            configs.push(set);
        }
        let mut nodes = BTreeMap::new();
        for _ in 0..self.count(12)? {
            let id = self.u64()?;
            nodes.insert(id, BasicNode { addr: self.string()? });
        }
        // openraft's own check: every voter must have a node.
        for c in &configs {
            if let Some(id) = c.iter().find(|id| !nodes.contains_key(id)) {
                return Err(self.err(format!("voter {id} has no address")));
            }
        }
        Ok(Membership::new(configs, nodes))
    }

    fn stored_membership(&mut self) -> Result<StoredMembership<NodeId, BasicNode>, CodecError> {
        let id = self.log_id()?;
        Ok(StoredMembership::new(id, self.membership()?))
    }

    /// Reads a snapshot's metadata.
    pub fn snapshot_meta(&mut self) -> Result<SnapshotMeta<NodeId, BasicNode>, CodecError> {
        Ok(SnapshotMeta {
            last_log_id: self.log_id()?,
            last_membership: self.stored_membership()?,
            snapshot_id: self.string()?,
        })
    }

    /// Reads an entry; `command` gives a normal entry's command (read inline, or taken from
    /// beside the body).
    fn entry(
        &mut self,
        mut command: impl FnMut(&mut Self) -> Result<SharedBuf, CodecError>,
    ) -> Result<Entry<TypeConfig>, CodecError> {
        let log_id = self.some_log_id()?;
        let payload = match self.u8()? {
            0 => EntryPayload::Blank,
            1 => {
                let op = Op::from_u8(self.u8()?).ok_or_else(|| self.err("unknown command kind"))?;
                EntryPayload::Normal(Command {
                    op,
                    msg: command(self)?,
                })
            }
            2 => EntryPayload::Membership(self.membership()?),
            k => return Err(self.err(format!("entry kind {k}, expected 0, 1 or 2"))),
        };
        Ok(Entry { log_id, payload })
    }
}

/// What copies a command out of stored or received bytes into the store's pool.
pub type CopyIn<'p> = &'p dyn Fn(&[u8]) -> Result<SharedBuf, String>;

/// A log entry as the log keeps it (command inline).
pub fn encode_entry(e: &Entry<TypeConfig>) -> Vec<u8> {
    let mut w = Writer::new();
    w.entry(e, true);
    w.finish()
}

/// A log entry from the log.
pub fn decode_entry(bytes: &[u8], copy_in: CopyIn<'_>) -> Result<Entry<TypeConfig>, CodecError> {
    let mut r = Reader::new(bytes, "log entry");
    let e = r.entry(|r| {
        let b = r.bytes()?;
        copy_in(b).map_err(|e| r.err(e))
    })?;
    r.end()?;
    Ok(e)
}

/// The log id of a log entry, read without its command.
pub fn entry_log_id(bytes: &[u8]) -> Result<LogId<NodeId>, CodecError> {
    Reader::new(bytes, "log entry").some_log_id()
}

/// A vote.
pub fn encode_vote(v: &Vote<NodeId>) -> Vec<u8> {
    let mut w = Writer::new();
    w.vote(v);
    w.finish()
}

/// A vote from the log.
pub fn decode_vote(bytes: &[u8]) -> Result<Vote<NodeId>, CodecError> {
    let mut r = Reader::new(bytes, "vote");
    let v = r.vote()?;
    r.end()?;
    Ok(v)
}

/// A log id (possibly none).
pub fn encode_log_id(id: &Option<LogId<NodeId>>) -> Vec<u8> {
    let mut w = Writer::new();
    w.log_id(id);
    w.finish()
}

/// A log id from the log.
pub fn decode_log_id(bytes: &[u8]) -> Result<Option<LogId<NodeId>>, CodecError> {
    let mut r = Reader::new(bytes, "log id");
    let v = r.log_id()?;
    r.end()?;
    Ok(v)
}

/// An AppendEntries request: the body, and the commands of its normal entries in order (by
/// reference: each a counted clone of the entry's buffer).
pub fn encode_append(rpc: &AppendEntriesRequest<TypeConfig>) -> (Vec<u8>, Vec<SharedBuf>) {
    let mut w = Writer::new();
    w.vote(&rpc.vote);
    w.log_id(&rpc.prev_log_id);
    w.log_id(&rpc.leader_commit);
    w.len(rpc.entries.len());
    let mut commands = Vec::new();
    for e in &rpc.entries {
        w.entry(e, false);
        if let EntryPayload::Normal(c) = &e.payload {
            commands.push(c.msg.clone());
        }
    }
    (w.finish(), commands)
}

/// An AppendEntries request from its body and its commands, each copied into the pool by
/// `copy_in`.
pub fn decode_append<'c>(
    body: &[u8],
    mut commands: impl Iterator<Item = &'c [u8]>,
    copy_in: CopyIn<'_>,
) -> Result<AppendEntriesRequest<TypeConfig>, CodecError> {
    let mut r = Reader::new(body, "AppendEntries");
    let vote = r.vote()?;
    let prev_log_id = r.log_id()?;
    let leader_commit = r.log_id()?;
    let n = r.count(26)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        entries.push(r.entry(|r| {
            let c = commands
                .next()
                .ok_or_else(|| r.err("more normal entries than commands"))?;
            copy_in(c).map_err(|e| r.err(e))
        })?);
    }
    r.end()?;
    if commands.next().is_some() {
        return Err(r.err("more commands than normal entries"));
    }
    Ok(AppendEntriesRequest {
        vote,
        prev_log_id,
        leader_commit,
        entries,
    })
}

/// An AppendEntries response.
pub fn encode_append_response(resp: &AppendEntriesResponse<NodeId>) -> Vec<u8> {
    let mut w = Writer::new();
    match resp {
        AppendEntriesResponse::Success => w.u8(0),
        AppendEntriesResponse::PartialSuccess(id) => {
            w.u8(1);
            w.log_id(id);
        }
        AppendEntriesResponse::Conflict => w.u8(2),
        AppendEntriesResponse::HigherVote(v) => {
            w.u8(3);
            w.vote(v);
        }
    }
    w.finish()
}

/// An AppendEntries response from a peer.
pub fn decode_append_response(bytes: &[u8]) -> Result<AppendEntriesResponse<NodeId>, CodecError> {
    let mut r = Reader::new(bytes, "AppendEntries response");
    let resp = match r.u8()? {
        0 => AppendEntriesResponse::Success,
        1 => AppendEntriesResponse::PartialSuccess(r.log_id()?),
        2 => AppendEntriesResponse::Conflict,
        3 => AppendEntriesResponse::HigherVote(r.vote()?),
        k => return Err(r.err(format!("response kind {k}"))),
    };
    r.end()?;
    Ok(resp)
}

/// A Vote request.
pub fn encode_vote_request(rpc: &VoteRequest<NodeId>) -> Vec<u8> {
    let mut w = Writer::new();
    w.vote(&rpc.vote);
    w.log_id(&rpc.last_log_id);
    w.finish()
}

/// A Vote request from a peer.
pub fn decode_vote_request(bytes: &[u8]) -> Result<VoteRequest<NodeId>, CodecError> {
    let mut r = Reader::new(bytes, "Vote");
    let v = VoteRequest {
        vote: r.vote()?,
        last_log_id: r.log_id()?,
    };
    r.end()?;
    Ok(v)
}

/// A Vote response.
pub fn encode_vote_response(resp: &VoteResponse<NodeId>) -> Vec<u8> {
    let mut w = Writer::new();
    w.vote(&resp.vote);
    w.u8(u8::from(resp.vote_granted));
    w.log_id(&resp.last_log_id);
    w.finish()
}

/// A Vote response from a peer.
pub fn decode_vote_response(bytes: &[u8]) -> Result<VoteResponse<NodeId>, CodecError> {
    let mut r = Reader::new(bytes, "Vote response");
    let v = VoteResponse {
        vote: r.vote()?,
        vote_granted: r.flag()?,
        last_log_id: r.log_id()?,
    };
    r.end()?;
    Ok(v)
}

/// The first frame of a streamed snapshot: the leader's vote, the snapshot's metadata and the
/// length of its data, which the frames after it carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The leader's vote: the follower installs the snapshot only under it.
    pub vote: Vote<NodeId>,
    /// The snapshot's metadata.
    pub meta: SnapshotMeta<NodeId, BasicNode>,
    /// Bytes of data that follow.
    pub len: u64,
}

/// A streamed snapshot's first frame.
pub fn encode_snapshot_header(h: &SnapshotHeader) -> Vec<u8> {
    let mut w = Writer::new();
    w.vote(&h.vote);
    w.snapshot_meta(&h.meta);
    w.u64(h.len);
    w.finish()
}

/// A streamed snapshot's first frame, from a peer.
pub fn decode_snapshot_header(bytes: &[u8]) -> Result<SnapshotHeader, CodecError> {
    let mut r = Reader::new(bytes, "InstallSnapshot header");
    let h = SnapshotHeader {
        vote: r.vote()?,
        meta: r.snapshot_meta()?,
        len: r.u64()?,
    };
    r.end()?;
    Ok(h)
}

/// An InstallSnapshot answer: the follower's vote.
pub fn encode_snapshot_response(resp: &SnapshotResponse<NodeId>) -> Vec<u8> {
    let mut w = Writer::new();
    w.vote(&resp.vote);
    w.finish()
}

/// An InstallSnapshot answer from a peer.
pub fn decode_snapshot_response(bytes: &[u8]) -> Result<SnapshotResponse<NodeId>, CodecError> {
    let mut r = Reader::new(bytes, "InstallSnapshot response");
    let v = SnapshotResponse { vote: r.vote()? };
    r.end()?;
    Ok(v)
}

/// The store's contents as a snapshot writes them: `(key, kind, parts)` records.
#[derive(Debug, Default)]
pub struct SnapshotWriter {
    w: Writer,
}

impl SnapshotWriter {
    /// Adds a key: its value's kind (0 single, 1 vector, 2 list) and buffers.
    pub fn add(&mut self, key: &[u8], kind: u8, parts: &[&[u8]]) {
        self.w.bytes(key);
        self.w.u8(kind);
        self.w.len(parts.len());
        parts.iter().for_each(|p| self.w.bytes(p));
    }

    /// The snapshot's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.w.finish()
    }
}

/// Reads a snapshot's records: calls `f(key, kind, parts)` for each.
pub fn read_snapshot(
    bytes: &[u8],
    mut f: impl FnMut(&[u8], u8, &[&[u8]]) -> Result<(), String>,
) -> Result<(), CodecError> {
    let mut r = Reader::new(bytes, "snapshot");
    let mut parts = Vec::new();
    while r.at < bytes.len() {
        let key = r.bytes()?;
        let kind = r.u8()?;
        parts.clear();
        for _ in 0..r.count(4)? {
            parts.push(r.bytes()?);
        }
        f(key, kind, &parts).map_err(|e| r.err(e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(b: &[u8]) -> Result<SharedBuf, String> {
        super::super::test_pool().copy_from(b).map_err(|e| e.to_string())
    }

    fn membership() -> Membership<NodeId, BasicNode> {
        let nodes: BTreeMap<_, _> = (1..=3)
            .map(|i| {
                (
                    i,
                    BasicNode {
                        addr: format!("tcp://127.0.0.1:{i}"),
                    },
                )
            })
            .collect();
        Membership::new(vec![[1, 2, 3].into()], nodes)
    }

    #[test]
    fn append_round_trip_carries_commands_beside_the_body() {
        let cmd = copy(b"a ferry message").unwrap();
        let id = |i| LogId::new(CommittedLeaderId::new(3, 1), i);
        let rpc = AppendEntriesRequest::<TypeConfig> {
            vote: Vote::new_committed(3, 1),
            prev_log_id: Some(id(4)),
            leader_commit: None,
            entries: vec![
                Entry {
                    log_id: id(5),
                    payload: EntryPayload::Blank,
                },
                Entry {
                    log_id: id(6),
                    payload: EntryPayload::Normal(Command {
                        op: Op::Put,
                        msg: cmd,
                    }),
                },
                Entry {
                    log_id: id(7),
                    payload: EntryPayload::Membership(membership()),
                },
            ],
        };
        let (body, commands) = encode_append(&rpc);
        assert_eq!(commands.len(), 1);
        let back = decode_append(&body, commands.iter().map(|c| &c[..]), &copy).unwrap();
        assert_eq!(format!("{back:?}"), format!("{rpc:?}"));
        // A command missing, or one too many, is refused.
        assert!(decode_append(&body, std::iter::empty(), &copy).is_err());
        let two = [&b"x"[..], &b"y"[..]];
        assert!(decode_append(&body, two.into_iter(), &copy).is_err());
    }

    #[test]
    fn every_truncation_of_an_entry_is_an_error_not_a_panic() {
        let e = Entry::<TypeConfig> {
            log_id: LogId::new(CommittedLeaderId::new(1, 2), 3),
            payload: EntryPayload::Membership(membership()),
        };
        let bytes = encode_entry(&e);
        assert_eq!(
            format!("{:?}", decode_entry(&bytes, &copy).unwrap()),
            format!("{e:?}")
        );
        for n in 0..bytes.len() {
            let err = decode_entry(&bytes[..n], &copy).unwrap_err();
            assert_eq!(err.what, "log entry");
        }
    }

    #[test]
    fn a_snapshot_header_round_trips_and_every_truncation_is_an_error() {
        let h = SnapshotHeader {
            vote: Vote::new_committed(4, 2),
            meta: SnapshotMeta {
                last_log_id: Some(LogId::new(CommittedLeaderId::new(4, 2), 900)),
                last_membership: StoredMembership::new(
                    Some(LogId::new(CommittedLeaderId::new(1, 1), 1)),
                    membership(),
                ),
                snapshot_id: "4-2-900-1".into(),
            },
            len: 3 << 20,
        };
        let bytes = encode_snapshot_header(&h);
        assert_eq!(decode_snapshot_header(&bytes).unwrap(), h);
        for n in 0..bytes.len() {
            let err = decode_snapshot_header(&bytes[..n]).unwrap_err();
            assert_eq!(err.what, "InstallSnapshot header");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode_snapshot_header(&long).is_err(), "a byte past the end");
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let mut b = encode_vote(&Vote::new(1, 1));
        b.extend_from_slice(&[0]); // no prev log id
        b.extend_from_slice(&[0]); // no commit
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let err = decode_append(&b, std::iter::empty(), &copy).unwrap_err();
        assert!(err.why.contains("count 4294967295"), "{err}");
    }
}
