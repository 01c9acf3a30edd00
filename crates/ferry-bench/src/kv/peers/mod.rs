//! The key-value store served with the peers' serializations: prost, FlatBuffers and Cap'n
//! Proto, over the same server loop, transport and store as Ferry's own `Kv` service, each with
//! its best API (Cornflakes section 6.1.3).
//!
//! A peer is a [`KvCodec`]: the client encodes a [`KvRequest`] and reads the values of the
//! response; the server ([`service::PeerKvService`], one raw method per library) decodes the
//! request, runs it on the [`Store`], and serializes the response into one buffer of the
//! session's pool, which the transport sends by reference (a gather entry). The schemas are
//! `schema/kv.{proto,fbs,capnp}`: one request with an operation kind, the keys (strings, as in
//! the store's own schema) and the values; one response with the values in order.
//!
//! Per response, in user space (what `ferry bench kv` reports as bytes copied):
//!
//! ```text
//!  store value (SharedBuf) ──refcount──► found: Vec<SharedBuf>   (all three: the lookup)
//!  prost    ──into_bytes (no copy)──► Response{values: Bytes} ──encode: copy 1──► pool buffer
//!  flatbuf  ──create_vector: copy 1──► FlatBufferBuilder ──finished_data: copy 2──► pool buffer
//!  capnp    ──set: copy 1──► scratch segment ──write_message: copy 2──► pool buffer
//!  pool buffer ──Payload::Gather──► TCP: sendmsg entry (the kernel's copy only)
//!                                   shared memory: copied into a block (raw payloads are
//!                                   read contiguously by the receiver)
//! ```
//!
//! The client reads in place where the library can: prost slices a counted input
//! ([`Input::shared`], TCP) with `Bytes`, FlatBuffers reads the verified buffer, Cap'n Proto
//! reads the segments (after one copy if the input is not word-aligned).
//!
//! Operations: `Get`, `GetList`, `GetM`, `Put` (what the load generator sends); the peers do not
//! serve `Append`, `Delete` or `GetFromList`. Failures are RPC statuses: the store's
//! ([`ferry_kv::StoreError::status`]: `NOT_FOUND` naming the key, ...), `INVALID_ARGUMENT`
//! naming the library for a request that does not decode, `RESOURCE_EXHAUSTED` for a response
//! larger than a pool buffer.

use ferry_buf::{BufMut, Pool, SharedBuf};
use ferry_kv::{Store, StoreError};
use ferry_rpc::{Code, Status};

use crate::BenchError;
use crate::systems::Input;

pub mod capnp;
pub mod flatbuf;
pub mod prost;
pub mod service;

pub use service::PeerKvService;

/// A request of the load generator, borrowing its keys and values.
#[derive(Debug, Clone, Copy)]
pub enum KvRequest<'a> {
    /// The single-buffer value of a key.
    Get(&'a [u8]),
    /// Every buffer of a key's value.
    GetList(&'a [u8]),
    /// The single-buffer value of each key, in order.
    GetM(&'a [&'a [u8]]),
    /// Stores `values` (one buffer, or a vector of several) under `key`.
    Put {
        /// The key.
        key: &'a [u8],
        /// The value's buffers.
        values: &'a [&'a [u8]],
    },
}

impl<'a> KvRequest<'a> {
    /// Its operation.
    pub fn op(&self) -> Op {
        match self {
            KvRequest::Get(_) => Op::Get,
            KvRequest::GetList(_) => Op::GetList,
            KvRequest::GetM(_) => Op::GetM,
            KvRequest::Put { .. } => Op::Put,
        }
    }

    /// Its keys, in order (one, except for `GetM`).
    pub fn keys(&self) -> &[&'a [u8]] {
        match self {
            KvRequest::Get(key) | KvRequest::GetList(key) | KvRequest::Put { key, .. } => {
                std::slice::from_ref(key)
            }
            KvRequest::GetM(keys) => keys,
        }
    }

    /// Its values (none, except for `Put`).
    pub fn values(&self) -> &[&'a [u8]] {
        match self {
            KvRequest::Put { values, .. } => values,
            _ => &[],
        }
    }
}

/// The operations, numbered as every schema numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `Get`.
    Get = 0,
    /// `GetList`.
    GetList = 1,
    /// `GetM`.
    GetM = 2,
    /// `Put`.
    Put = 3,
}

impl Op {
    /// The operation a request of `system` numbers `n`, or `INVALID_ARGUMENT`.
    fn numbered(system: &str, n: impl Into<i64> + Copy + std::fmt::Display) -> Result<Op, Status> {
        [Op::Get, Op::GetList, Op::GetM, Op::Put]
            .into_iter()
            .find(|&op| op as i64 == n.into())
            .ok_or_else(|| invalid(system, format_args!("unknown op {n}")))
    }
}

/// A peer library on both sides of the key-value store.
///
/// Every buffer (output vector, builder, scratch segment, the response message) is reused
/// across calls, as a server reuses them across requests. `Send`, so a client thread can own
/// one; the server keeps one set per loop thread.
pub trait KvCodec: Send {
    /// Client: encodes a request; the bytes stay valid until the next call.
    fn encode_request(&mut self, req: &KvRequest<'_>) -> Result<&[u8], BenchError>;

    /// Client: decodes a response and hands every value, in order, to `value` (in place where
    /// the library can; FlatBuffers with its verifier on).
    fn read_response(&mut self, input: Input<'_>, value: &mut dyn FnMut(&[u8])) -> Result<(), BenchError>;

    /// Server: decodes a request, runs it on `store`, and serializes the response into one
    /// buffer of `pool` (the session's pool, which is the store's when served with
    /// [`Store::serving_config`]) with the library's best API (see the module docs).
    fn serve(&mut self, input: Input<'_>, store: &Store, pool: &Pool) -> Result<SharedBuf, Status>;
}

/// A peer in the registry.
#[derive(Debug, Clone, Copy)]
pub struct KvCodecEntry {
    /// The library's name (as in [`crate::systems::CODECS`]).
    pub name: &'static str,
    /// Its method on [`PeerKvService`]: `/ferry_bench.kv.Peers/<Library>`.
    pub path: &'static str,
    /// Makes a fresh instance with empty reusable buffers.
    pub new: fn() -> Box<dyn KvCodec>,
}

/// Every peer, in the order reports list them.
pub static CODECS: &[KvCodecEntry] = &[
    KvCodecEntry {
        name: "prost",
        path: "/ferry_bench.kv.Peers/Prost",
        new: new_peer::<prost::ProstKv>,
    },
    KvCodecEntry {
        name: "flatbuf",
        path: "/ferry_bench.kv.Peers/Flatbuf",
        new: new_peer::<flatbuf::FlatbufKv>,
    },
    KvCodecEntry {
        name: "capnp",
        path: "/ferry_bench.kv.Peers/Capnp",
        new: new_peer::<capnp::CapnpKv>,
    },
];

impl KvCodecEntry {
    /// The method's id ([`ferry_transport::method_id`] of `path`), for `call_payload`.
    pub fn method(&self) -> u16 {
        ferry_transport::method_id(self.path)
    }
}

/// A fresh `T` (reusable buffers empty), boxed: what a registry entry makes.
fn new_peer<T: KvCodec + Default + 'static>() -> Box<dyn KvCodec> {
    Box::<T>::default()
}

/// Looks a peer up by name.
pub fn codec(name: &str) -> Result<&'static KvCodecEntry, BenchError> {
    CODECS
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| BenchError::Unknown {
            what: "key-value peer",
            name: name.to_owned(),
            expected: CODECS.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
        })
}

/// `INVALID_ARGUMENT`: a request of `system` that does not decode, or asks for something
/// malformed.
fn invalid(system: &str, what: impl std::fmt::Display) -> Status {
    Status::new(Code::InvalidArgument, format!("{system} request: {what}"))
}

/// A key of a request as the store takes it: a string. The schemas' keys are strings, so a
/// client key that is not UTF-8 cannot be sent.
fn key_str<'k>(system: &'static str, key: &'k [u8]) -> Result<&'k str, BenchError> {
    std::str::from_utf8(key).map_err(|_| BenchError::KeyNotUtf8 {
        system,
        key: String::from_utf8_lossy(key).into_owned(),
    })
}

/// Runs a decoded request on `store`: the values to answer with go into `found` as counted
/// references (no copy yet: FlatBuffers and Cap'n Proto then copy them into their message,
/// prost references them). `keys` and `values` are the request's, each item already checked
/// by the library (or the reason it is bad).
///
/// Checks what each operation needs: one key (`Get`, `GetList`, `Put`), no values except for
/// `Put`, and the store's limits (keys per request, buffers per value) before anything is
/// collected, so a peer's count never sizes an allocation.
fn execute<'k, 'v>(
    system: &'static str,
    store: &Store,
    op: Op,
    keys: impl ExactSizeIterator<Item = Result<&'k str, Status>>,
    values: impl ExactSizeIterator<Item = Result<&'v [u8], Status>>,
    found: &mut Vec<SharedBuf>,
) -> Result<(), Status> {
    found.clear();
    let done = lookup(system, store, op, keys, values, found).and_then(|()| {
        // Before any library copies them: the values must fit one response.
        let total = found.iter().map(|b| b.len()).sum();
        store.check_response(total).map_err(Status::from)
    });
    if done.is_err() {
        // Let go of what a failed GetM found before its missing key.
        found.clear();
    }
    done
}

fn lookup<'k, 'v>(
    system: &'static str,
    store: &Store,
    op: Op,
    mut keys: impl ExactSizeIterator<Item = Result<&'k str, Status>>,
    values: impl ExactSizeIterator<Item = Result<&'v [u8], Status>>,
    found: &mut Vec<SharedBuf>,
) -> Result<(), Status> {
    if op != Op::Put && values.len() != 0 {
        return Err(invalid(
            system,
            format_args!("{op:?} takes no values, not {}", values.len()),
        ));
    }
    match op {
        Op::Get => found.push(store.get(one_key(system, op, &mut keys)?)?),
        Op::GetList => store.get_list(one_key(system, op, &mut keys)?, |b| found.push(b.clone()))?,
        Op::GetM => {
            store.check_keys(keys.len())?;
            found.reserve(keys.len());
            for key in keys {
                found.push(store.get(key?)?);
            }
        }
        Op::Put => {
            let key = one_key(system, op, &mut keys)?;
            let limit = store.config().max_parts;
            if values.len() > limit {
                return Err(StoreError::TooLarge {
                    what: "buffers in a value",
                    len: values.len(),
                    limit,
                }
                .into());
            }
            let parts = values.collect::<Result<Vec<&[u8]>, Status>>()?;
            store.put(key.as_bytes(), &parts)?;
        }
    }
    Ok(())
}

/// The one key of a `Get`, `GetList` or `Put`.
fn one_key<'k>(
    system: &'static str,
    op: Op,
    keys: &mut impl ExactSizeIterator<Item = Result<&'k str, Status>>,
) -> Result<&'k str, Status> {
    match (keys.len(), keys.next()) {
        (1, Some(key)) => key,
        (n, _) => Err(invalid(system, format_args!("{op:?} takes one key, not {n}"))),
    }
}

/// A pool buffer for a response of `len` bytes, or `RESOURCE_EXHAUSTED` naming the library.
fn response_buf(system: &str, pool: &Pool, len: usize) -> Result<BufMut, Status> {
    pool.alloc(len).map_err(|e| {
        Status::new(
            Code::ResourceExhausted,
            format!("{system}: no pool buffer for a response of {len} bytes: {e}"),
        )
    })
}

/// The response bytes `out` copied into one pool buffer (FlatBuffers' finished buffer).
fn copy_into_pool(system: &str, pool: &Pool, out: &[u8]) -> Result<SharedBuf, Status> {
    let mut buf = response_buf(system, pool, out.len())?;
    buf.capacity_mut()[..out.len()].copy_from_slice(out);
    buf.set_len(out.len());
    Ok(buf.freeze())
}

#[cfg(test)]
pub(crate) mod tests {
    //! Every peer against a small store: the values come back byte for byte, the store's
    //! errors keep their codes, hostile bytes are refused.

    use std::sync::Arc;

    use ferry_buf::PoolConfig;
    use ferry_kv::StoreConfig;

    use super::*;

    /// A store with `big` (3 parts, one past the default threshold), `one`, `two` and `small`
    /// loaded with verifiable bytes. Private with 2 MiB regions, or `shared` (to be served with
    /// [`Store::serving_config`]) with 8 MiB regions: TCP refuses a connection whose pool's
    /// largest buffer cannot hold its largest frame (8 MiB by default).
    pub(crate) fn store(shared: bool) -> Arc<Store> {
        let pool = Pool::new(PoolConfig {
            shared,
            region_size: if shared { 8 << 20 } else { 2 << 20 },
            max_bytes: 64 << 20,
            ..Default::default()
        })
        .expect("pool");
        let store = Arc::new(Store::new(pool, StoreConfig::default()));
        let objects: [(&[u8], &[u32]); 4] = [
            (b"big", &[100, 4096, 7]),
            (b"one", &[2048]),
            (b"two", &[3]),
            (b"small", &[0]),
        ];
        ferry_kv::load::load(&store, objects).expect("load");
        store
    }

    /// The stored bytes of part `p` of `key` (`len` long).
    pub(crate) fn value(key: &str, p: u32, len: usize) -> Vec<u8> {
        ferry_kv::fill::value(key.as_bytes(), p, len)
    }

    /// Client encodes, server serves, client reads: the values, or the server's status.
    fn round_trip(
        client: &mut dyn KvCodec,
        server: &mut dyn KvCodec,
        store: &Store,
        req: &KvRequest<'_>,
        counted: bool,
    ) -> Result<Vec<Vec<u8>>, Status> {
        let request = client.encode_request(req).expect("encode").to_vec();
        // As TCP hands requests over (a pool buffer), or as shared memory does (borrowed).
        let shared = store.pool().copy_from(&request).expect("pool");
        let input = if counted {
            Input {
                bytes: &shared,
                shared: Some(&shared),
            }
        } else {
            Input::bytes(&request)
        };
        let response = server.serve(input, store, store.pool())?;
        assert!(store.pool().is_shared(&response) || response.is_empty());
        let mut got = Vec::new();
        let input = Input {
            bytes: &response,
            shared: Some(&response),
        };
        client
            .read_response(input, &mut |v| got.push(v.to_vec()))
            .expect("read");
        Ok(got)
    }

    #[test]
    fn every_peer_serves_every_operation() {
        for entry in CODECS {
            let store = store(false);
            let (mut client, mut server) = ((entry.new)(), (entry.new)());
            let (client, server) = (client.as_mut(), server.as_mut());
            // Twice each, the second time with counted input: reused buffers must not carry
            // state between calls, and both inputs must decode.
            for counted in [false, true] {
                let name = entry.name;
                let got = round_trip(client, server, &store, &KvRequest::Get(b"one"), counted).unwrap();
                assert_eq!(got, [value("one", 0, 2048)], "{name}");
                let got = round_trip(client, server, &store, &KvRequest::Get(b"small"), counted).unwrap();
                assert_eq!(got, [Vec::<u8>::new()], "{name}: an empty value");
                let got = round_trip(client, server, &store, &KvRequest::GetList(b"big"), counted).unwrap();
                let want = [value("big", 0, 100), value("big", 1, 4096), value("big", 2, 7)];
                assert_eq!(got, want, "{name}");
                let got = round_trip(client, server, &store, &KvRequest::GetList(b"two"), counted).unwrap();
                assert_eq!(
                    got,
                    [value("two", 0, 3)],
                    "{name}: a single buffer is a list of one"
                );
                let keys: [&[u8]; 3] = [b"two", b"one", b"two"];
                let got = round_trip(client, server, &store, &KvRequest::GetM(&keys), counted).unwrap();
                let want = [value("two", 0, 3), value("one", 0, 2048), value("two", 0, 3)];
                assert_eq!(got, want, "{name}");
                let got = round_trip(client, server, &store, &KvRequest::GetM(&[]), counted).unwrap();
                assert!(got.is_empty(), "{name}");

                // Put then read back: one buffer, then a vector of several.
                let big = vec![0xa5; 70_000];
                let put = KvRequest::Put {
                    key: b"new",
                    values: &[&big],
                };
                assert!(
                    round_trip(client, server, &store, &put, counted)
                        .unwrap()
                        .is_empty()
                );
                let got = round_trip(client, server, &store, &KvRequest::Get(b"new"), counted).unwrap();
                assert_eq!(got, std::slice::from_ref(&big), "{name}");
                let put = KvRequest::Put {
                    key: b"new",
                    values: &[b"a", b"", b"ccc"],
                };
                assert!(
                    round_trip(client, server, &store, &put, counted)
                        .unwrap()
                        .is_empty()
                );
                let got = round_trip(client, server, &store, &KvRequest::GetList(b"new"), counted).unwrap();
                assert_eq!(got, [&b"a"[..], b"", b"ccc"], "{name}");
            }
            assert_eq!(codec(entry.name).unwrap().method(), entry.method());
        }
        assert!(codec("memcpy").is_err());
    }

    #[test]
    fn store_errors_keep_their_codes() {
        let store = store(false);
        for entry in CODECS {
            let (mut client, mut server) = ((entry.new)(), (entry.new)());
            let (client, server) = (client.as_mut(), server.as_mut());
            let name = entry.name;
            let err = round_trip(client, server, &store, &KvRequest::Get(b"nope"), false).unwrap_err();
            assert_eq!(err.code, Code::NotFound, "{name}: {err}");
            assert!(err.message.contains("nope"), "{name}: {err}");
            let err = round_trip(client, server, &store, &KvRequest::GetList(b"nope"), true).unwrap_err();
            assert_eq!(err.code, Code::NotFound, "{name}: {err}");
            let keys: [&[u8]; 2] = [b"one", b"nope"];
            let err = round_trip(client, server, &store, &KvRequest::GetM(&keys), false).unwrap_err();
            assert_eq!(err.code, Code::NotFound, "{name}: {err}");
            // A multi-buffer value read as one.
            let err = round_trip(client, server, &store, &KvRequest::Get(b"big"), false).unwrap_err();
            assert_eq!(err.code, Code::FailedPrecondition, "{name}: {err}");
            // Past the store's limits.
            let many = vec![&b"one"[..]; store.config().max_keys + 1];
            let err = round_trip(client, server, &store, &KvRequest::GetM(&many), false).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{name}: {err}");
            let put = KvRequest::Put {
                key: b"k",
                values: &[],
            };
            let err = round_trip(client, server, &store, &put, false).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{name}: {err}");
            // A key the schemas cannot carry is refused by the client.
            let err = client.encode_request(&KvRequest::Get(b"\xff\xfe")).unwrap_err();
            assert!(matches!(err, BenchError::KeyNotUtf8 { .. }), "{name}: {err}");
            // The server still works.
            let got = round_trip(client, server, &store, &KvRequest::Get(b"two"), true).unwrap();
            assert_eq!(got, [value("two", 0, 3)], "{name}");
        }
    }

    #[test]
    fn a_response_larger_than_a_pool_buffer_is_resource_exhausted() {
        // 600 KiB values: four of them do not fit the 2 MiB region's largest buffer.
        let store = store(false);
        let big = vec![7u8; 600 << 10];
        store.put(b"wide", &[&big, &big, &big, &big]).expect("put");
        for entry in CODECS {
            let (mut client, mut server) = ((entry.new)(), (entry.new)());
            let err = round_trip(
                client.as_mut(),
                server.as_mut(),
                &store,
                &KvRequest::GetList(b"wide"),
                true,
            )
            .unwrap_err();
            assert_eq!(err.code, Code::ResourceExhausted, "{}: {err}", entry.name);
            let got = round_trip(
                client.as_mut(),
                server.as_mut(),
                &store,
                &KvRequest::Get(b"one"),
                true,
            )
            .unwrap();
            assert_eq!(got, [value("one", 0, 2048)], "{}", entry.name);
        }
    }

    #[test]
    fn garbage_requests_are_refused_not_panicked_on() {
        let store = store(false);
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for entry in CODECS {
            let mut client = (entry.new)();
            let mut server = (entry.new)();
            let keys: [&[u8]; 2] = [b"one", b"two"];
            let good = client.encode_request(&KvRequest::GetM(&keys)).unwrap().to_vec();
            let mut inputs: Vec<Vec<u8>> = vec![
                Vec::new(),
                vec![0xff; 24],
                vec![0; 3],
                good[..good.len() / 2].to_vec(),
            ];
            // The valid request with bytes flipped: may decode to something else, never panic.
            for _ in 0..500 {
                let mut bad = good.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % bad.len();
                    bad[at] = next() as u8;
                }
                inputs.push(bad);
            }
            let mut refused = 0;
            for input in &inputs {
                if let Err(e) = server.serve(Input::bytes(input), &store, store.pool()) {
                    refused += 1;
                    assert_ne!(e.code, Code::Internal, "{}: {e}", entry.name);
                }
                // Responses too: garbage is an error, not a panic.
                let _ = client.read_response(Input::bytes(input), &mut |_| {});
            }
            assert!(refused >= 3, "{}: {refused} refused", entry.name);
            let err = server
                .serve(Input::bytes(&[0xff; 24]), &store, store.pool())
                .unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{}: {err}", entry.name);
            assert!(err.message.contains(entry.name), "{}: {err}", entry.name);
        }
    }
}
