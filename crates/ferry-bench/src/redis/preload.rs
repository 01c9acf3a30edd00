//! The data the tests read, written into a server before they run, and checked.
//!
//! redis-benchmark's `-r N` replaces every `__rand_int__` in a command with its own random
//! number in `0..N`, written as 12 zero-padded digits (7.0 `randomizeClientKey`: each
//! occurrence is drawn separately, so `mget m:__rand_int__ m:__rand_int__` reads two
//! different keys but for one chance in N). Its `-t get` reads `key:__rand_int__`. So:
//!
//! | family | keys | value | read by |
//! |---|---|---|---|
//! | [`Family::Key`] | `key:000000000000`.. | one string of 4096 (or 64) bytes | `-t get` |
//! | [`Family::Mget`] | `m:000000000000`.. | one string of 2048 bytes | `mget m:__rand_int__ m:__rand_int__` |
//! | [`Family::List`] | `l:000000000000`.. | a list of two 2048-byte strings | `lrange l:__rand_int__ 0 1` |
//! | [`Family::Hash`] | `h:000000000000`.. | a hash of 8 fields `f0`..`f7` of 1024 bytes | `hgetall h:__rand_int__` |
//! | [`Family::Set`] | `s:000000000000`.. | a set of 16 members of 512 bytes | `smembers s:__rand_int__` |
//! | [`Family::Zset`] | `z:000000000000`.. | a sorted set of 10 members of 1024 bytes, scores 0..9 | `zrange z:__rand_int__ 0 9 withscores` |
//!
//! Values are letters in a pattern that depends on the key's number, so that a spot check
//! after the load catches a server that answers with the wrong key's value.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ferry_redis::resp::client::{Reply, ReplyReader, encode_command};

use crate::BoxError;

/// A connection to the server under test: replies read from it, commands written to its
/// stream ([`ReplyReader::get_mut`]).
pub type Conn = ReplyReader<TcpStream>;

/// Bytes of commands sent before their replies are read.
const BATCH_BYTES: usize = 4 << 20;
/// Bound on each read and write while loading.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// A family of keys the tests read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `key:N`, strings of a given length (what `-t get` reads).
    Key(usize),
    /// `m:N`, 2048-byte strings (MGET of two).
    Mget,
    /// `l:N`, lists of two 2048-byte strings (LRANGE 0 1).
    List,
    /// `h:N`, hashes of [`HASH_FIELDS`] 1024-byte fields (HGETALL).
    Hash,
    /// `s:N`, sets of [`SET_MEMBERS`] 512-byte members (SMEMBERS).
    Set,
    /// `z:N`, sorted sets of [`ZSET_MEMBERS`] 1024-byte members (ZRANGE 0 9 WITHSCORES).
    Zset,
}

/// Fields of each `h:` hash, members of each `s:` set and of each `z:` sorted set (issue 29:
/// HGETALL of 8 x 1 KiB, SMEMBERS of 16 x 512 B, ZRANGE 0 9 WITHSCORES over 1 KiB members).
pub const HASH_FIELDS: u64 = 8;
pub const SET_MEMBERS: u64 = 16;
pub const ZSET_MEMBERS: u64 = 10;

/// Length of each MGET value and list element (Cornflakes Table 3: 2 x 2048 B).
pub const HALF: usize = 2048;

const LETTERS: &[u8; 52] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The values of one length: windows of a repeating alphabet, at an offset that depends on
/// the key's number and on a salt (so a family's values and the two elements of a list
/// differ).
pub struct Pattern {
    bytes: Vec<u8>,
    len: usize,
}

impl Pattern {
    /// Values of `len` bytes.
    pub fn new(len: usize) -> Pattern {
        let bytes = (0..len + LETTERS.len())
            .map(|i| LETTERS[i % LETTERS.len()])
            .collect();
        Pattern { bytes, len }
    }

    /// The value of key number `i` with `salt`.
    pub fn value(&self, i: u64, salt: u64) -> &[u8] {
        let off = ((i.wrapping_mul(7).wrapping_add(salt)) % LETTERS.len() as u64) as usize;
        &self.bytes[off..off + self.len]
    }
}

impl Family {
    /// The key prefix.
    fn prefix(self) -> &'static str {
        match self {
            Family::Key(_) => "key:",
            Family::Mget => "m:",
            Family::List => "l:",
            Family::Hash => "h:",
            Family::Set => "s:",
            Family::Zset => "z:",
        }
    }

    /// Key number `i`, as redis-benchmark writes it.
    pub fn key(self, i: u64) -> String {
        format!("{}{i:012}", self.prefix())
    }

    fn pattern(self) -> Pattern {
        Pattern::new(match self {
            Family::Key(len) => len,
            Family::Mget | Family::List => HALF,
            Family::Hash | Family::Zset => 1024,
            Family::Set => 512,
        })
    }

    fn salt(self) -> u64 {
        match self {
            Family::Key(_) => 0,
            Family::Mget => 11,
            Family::List => 23,
            Family::Hash => 5,
            Family::Set => 3,
            Family::Zset => 7,
        }
    }

    /// The `(field or score, value)` pairs of key `i`'s collection (hash fields `f0`..,
    /// set members with no name, sorted-set scores `0`..); distinct values: each is a window
    /// of the alphabet at its own offset.
    fn elements(self, pattern: &Pattern, i: u64) -> Vec<(Vec<u8>, &[u8])> {
        let (n, name): (u64, fn(u64) -> Vec<u8>) = match self {
            Family::Hash => (HASH_FIELDS, |j| format!("f{j}").into_bytes()),
            Family::Set => (SET_MEMBERS, |_| Vec::new()),
            Family::Zset => (ZSET_MEMBERS, |j| j.to_string().into_bytes()),
            Family::Key(_) | Family::Mget | Family::List => (0, |_| Vec::new()),
        };
        (0..n)
            .map(|j| (name(j), pattern.value(i, self.salt() + j)))
            .collect()
    }

    /// Appends the command that writes key `i` to `out`.
    fn encode(self, out: &mut Vec<u8>, pattern: &Pattern, i: u64) {
        let key = self.key(i);
        let salt = self.salt();
        match self {
            Family::Key(_) | Family::Mget => {
                encode_command(out, &[b"SET", key.as_bytes(), pattern.value(i, salt)])
            }
            Family::List => encode_command(
                out,
                &[
                    b"RPUSH",
                    key.as_bytes(),
                    pattern.value(i, salt),
                    pattern.value(i, salt + 1),
                ],
            ),
            Family::Hash | Family::Set | Family::Zset => {
                let elements = self.elements(pattern, i);
                let mut args: Vec<&[u8]> = vec![self.write_command(), key.as_bytes()];
                for (name, value) in &elements {
                    // HSET field value, ZADD score member, SADD member.
                    match self {
                        Family::Set => args.push(value),
                        _ => args.extend([name.as_slice(), value]),
                    }
                }
                encode_command(out, &args);
            }
        }
    }

    fn write_command(self) -> &'static [u8] {
        match self {
            Family::Hash => b"HSET",
            Family::Set => b"SADD",
            Family::Zset => b"ZADD",
            Family::Key(_) | Family::Mget => b"SET",
            Family::List => b"RPUSH",
        }
    }

    /// Whether `reply` is the success reply of the command that wrote a key.
    fn write_ok(self, reply: &Reply) -> bool {
        match self {
            Family::Key(_) | Family::Mget => *reply == Reply::simple("OK"),
            Family::List => *reply == Reply::Int(2),
            Family::Hash => *reply == Reply::Int(HASH_FIELDS as i64),
            Family::Set => *reply == Reply::Int(SET_MEMBERS as i64),
            Family::Zset => *reply == Reply::Int(ZSET_MEMBERS as i64),
        }
    }
}

/// Writes keys `0..keys` of `family` on `conn`, pipelined in batches of about 4 MiB (each
/// batch's replies read before the next is sent). Lists are appended to: the server must not
/// hold them already (the caller checks that the database starts empty).
pub fn load(conn: &mut Conn, family: Family, keys: u64) -> Result<(), BoxError> {
    let pattern = family.pattern();
    let mut out = Vec::with_capacity(BATCH_BYTES + 8192);
    let mut first = 0;
    for i in 0..keys {
        family.encode(&mut out, &pattern, i);
        if out.len() >= BATCH_BYTES || i + 1 == keys {
            conn.get_mut().write_all(&out)?;
            out.clear();
            for k in first..=i {
                let reply = conn.reply()?;
                if !family.write_ok(&reply) {
                    return Err(format!("writing {}: the server answered {reply}", family.key(k)).into());
                }
            }
            first = i + 1;
        }
    }
    Ok(())
}

/// Checks a few keys of `family` (the first, the last and some between) with the command
/// the test sends, against the values [`load`] wrote.
pub fn check(conn: &mut Conn, family: Family, keys: u64) -> Result<(), BoxError> {
    let pattern = family.pattern();
    let salt = family.salt();
    let bulk = |v: &[u8]| Reply::Bulk(v.to_vec());
    let samples = [0, 1, keys / 3, keys / 2 + 7, keys.saturating_sub(1)];
    for &i in samples.iter().filter(|&&i| i < keys) {
        let key = family.key(i);
        let (command, reply, expected) = match family {
            Family::Key(_) => (
                format!("GET {key}"),
                call(conn, &[b"GET", key.as_bytes()])?,
                bulk(pattern.value(i, salt)),
            ),
            Family::Mget => {
                let j = (i + keys / 2) % keys;
                let other = family.key(j);
                (
                    format!("MGET {key} {other}"),
                    call(conn, &[b"MGET", key.as_bytes(), other.as_bytes()])?,
                    Reply::Array(vec![bulk(pattern.value(i, salt)), bulk(pattern.value(j, salt))]),
                )
            }
            Family::List => (
                format!("LRANGE {key} 0 1"),
                call(conn, &[b"LRANGE", key.as_bytes(), b"0", b"1"])?,
                Reply::Array(vec![
                    bulk(pattern.value(i, salt)),
                    bulk(pattern.value(i, salt + 1)),
                ]),
            ),
            // A hash's and a set's order is the server's own: compared as sets.
            Family::Hash => (
                format!("HGETALL {key}"),
                sorted_pairs(call(conn, &[b"HGETALL", key.as_bytes()])?),
                sorted_pairs(Reply::Array(
                    family
                        .elements(&pattern, i)
                        .into_iter()
                        .flat_map(|(f, v)| [Reply::Bulk(f), bulk(v)])
                        .collect(),
                )),
            ),
            Family::Set => (
                format!("SMEMBERS {key}"),
                sorted(call(conn, &[b"SMEMBERS", key.as_bytes()])?),
                sorted(Reply::Array(
                    family
                        .elements(&pattern, i)
                        .into_iter()
                        .map(|(_, v)| bulk(v))
                        .collect(),
                )),
            ),
            Family::Zset => (
                format!("ZRANGE {key} 0 9 WITHSCORES"),
                call(conn, &[b"ZRANGE", key.as_bytes(), b"0", b"9", b"WITHSCORES"])?,
                Reply::Array(
                    family
                        .elements(&pattern, i)
                        .into_iter()
                        .flat_map(|(score, v)| [bulk(v), Reply::Bulk(score)])
                        .collect(),
                ),
            ),
        };
        if reply != expected {
            return Err(format!("{command}: the server answered {reply}, expected {expected}").into());
        }
    }
    Ok(())
}

/// An array reply's elements in sorted order (other replies as they are).
fn sorted(reply: Reply) -> Reply {
    match reply {
        Reply::Array(mut v) => {
            v.sort_by_key(|r| r.to_string());
            Reply::Array(v)
        }
        other => other,
    }
}

/// An array reply of (field, value) pairs in sorted order of the pairs.
fn sorted_pairs(reply: Reply) -> Reply {
    match reply {
        Reply::Array(v) => {
            let mut pairs: Vec<Vec<Reply>> = v.chunks(2).map(<[Reply]>::to_vec).collect();
            pairs.sort_by_key(|p| p.iter().map(ToString::to_string).collect::<Vec<_>>());
            Reply::Array(pairs.concat())
        }
        other => other,
    }
}

/// Sends one command and reads its reply.
fn call(conn: &mut Conn, args: &[&[u8]]) -> Result<Reply, BoxError> {
    let mut out = Vec::new();
    encode_command(&mut out, args);
    conn.get_mut().write_all(&out)?;
    Ok(conn.reply()?)
}

/// `DBSIZE`.
pub fn dbsize(conn: &mut Conn) -> Result<u64, BoxError> {
    match call(conn, &[b"DBSIZE"])? {
        Reply::Int(n) if n >= 0 => Ok(n as u64),
        other => Err(format!("DBSIZE answered {other}").into()),
    }
}

/// Connects for loading, every read and write bounded.
pub fn connect(addr: SocketAddr) -> Result<Conn, BoxError> {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.set_nodelay(true)?;
    Ok(ReplyReader::new(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_as_redis_benchmark_writes_them() {
        assert_eq!(Family::Key(4096).key(42), "key:000000000042");
        assert_eq!(Family::Mget.key(99_999), "m:000000099999");
        assert_eq!(Family::List.key(0), "l:000000000000");
    }

    #[test]
    fn values_differ_by_key_and_salt() {
        let p = Pattern::new(HALF);
        assert_eq!(p.value(3, 0).len(), HALF);
        assert_ne!(p.value(3, 0), p.value(4, 0));
        assert_ne!(p.value(3, 23), p.value(3, 24));
        assert!(p.value(u64::MAX, 23).iter().all(u8::is_ascii_alphabetic));
    }

    #[test]
    fn commands() {
        let p = Pattern::new(4);
        let mut out = Vec::new();
        Family::Key(4).encode(&mut out, &p, 1);
        assert_eq!(
            out,
            b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000001\r\n$4\r\nhijk\r\n"
        );
        let p = Family::List.pattern();
        out.clear();
        Family::List.encode(&mut out, &p, 0);
        assert!(out.starts_with(b"*4\r\n$5\r\nRPUSH\r\n$14\r\nl:000000000000\r\n$2048\r\nxyzABC"));
        assert!(Family::List.write_ok(&Reply::Int(2)));
        assert!(!Family::Mget.write_ok(&Reply::error("ERR")));
    }
}
