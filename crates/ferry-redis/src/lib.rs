//! A Redis-protocol server whose large values leave by scatter-gather from Ferry's pool.
//!
//! Unchanged Redis clients (`redis-cli`, `redis-benchmark`, redis-py, hiredis) speak RESP2, or
//! RESP3 after `HELLO 3`, to it. Values live in Ferry's registered pool as counted
//! [`SharedBuf`](ferry_buf::SharedBuf)s. A reply is its RESP framing (`$4096\r\n`, array
//! headers, separators), copied into a staging buffer, with every value at or above the
//! zero-copy threshold posted as a gather entry that points at the stored bytes: Cornflakes'
//! hybrid serialization, as a real server. One `sendmsg` carries the replies to a batch of
//! pipelined requests (`ferry-net`'s datapath, any of its send modes).
//!
//! ```text
//!  read(2) into a pool buffer ──► resp::parse (in place, ranges) ──► cmd::execute
//!        │ frozen: a large SET value            │                        │ ReplyBuf: framing bytes
//!        ▼ stays in the buffer it arrived in    ▼                        ▼ + (offset, SharedBuf) refs
//!      Db (keyspace of SharedBufs) ◄──────────── Ctx ──────► ferry_net::Sender::send_stream
//!                                                                        │ one sendmsg per batch
//!                                                                        ▼ refs dropped when written
//! ```
//!
//! Who owns each buffer: a read buffer is the connection's until a command keeps part of it (a
//! large `SET` value), then it is shared by the stored values that point into it and freed with
//! the last of them. A stored value is the keyspace's; a reply that references it holds its own
//! count, so an overwrite or `DEL` in the same pipeline leaves the bytes being sent intact.
//!
//! Persistence is Redis's RDB file ([`rdb`]: the format, without I/O; [`cmd::persist`]:
//! `SAVE`, `BGSAVE`, save points, loading at start) and Redis 7.0's multi-part AOF ([`aof`]:
//! every write as the feed propagates it, `appendfsync always|everysec|no`, rewrites on a
//! thread), and `SYNC` streams the dataset and then every write ([`feed`],
//! [`cmd::replication`]); `REPLICAOF` makes it a replica of another server ([`replica`]: a
//! thread that loads the master's RDB and applies its stream).
//!
//! What it is not: a reader of Redis's pre-7.0 single-file AOF, a master a replica can follow
//! (no backlog, `PSYNC` is always a full resynchronization), clustered, or a full Redis (see
//! [`cmd`] for the commands it has: 16 databases, transactions, pub/sub and the blocking list
//! and sorted-set commands, geo commands ([`cmd::geo`]), keyspace notifications ([`cmd::notify`]);
//! no scripting or streams; no eviction: writes beyond `maxmemory` get Redis's OOM error).
//!
//! Layout: [`resp`] is the protocol without I/O (request parser, reply encoder); [`rdb`] the
//! snapshot format without I/O; [`aof`] the append-only file (its manifest and command reader
//! are decoders of untrusted bytes, its writer a thread); [`feed`] the propagation stream's framing and fan-out; [`db`] a
//! database, the keyspace ([`fields`]: the table inside a hash or a set; [`zset`]: a sorted
//! set); [`cmd`] the commands, and a connection's protocol state (selected database, open
//! transaction, watched keys, subscriptions, the blocking command it waits in) in
//! [`cmd::Client`]; [`server`] the event loop that owns sockets
//! (plain, and TLS through ferry-net's rustls sessions: [`Config::tls`])
//! and clocks.

#![deny(unsafe_code)]

pub mod aof;
pub mod cmd;
pub mod config;
pub mod db;
pub mod feed;
pub mod fields;
pub mod geohash;
pub mod input;
pub mod rdb;
pub mod replica;
pub mod resp;
pub mod server;
pub mod zset;

pub use config::{Config, Tls};
pub use server::{Server, ServerHandle};
