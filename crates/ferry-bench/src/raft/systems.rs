//! The five ways `ferry bench raft` carries a put (Table III's rows), each paying its own
//! encoding: the client's [`Encoder`], and the [`PutDecoder`] every node checks and applies the
//! log entry with (`ferry kv serve --encoding`). The messages are `schema/kv.{proto,fbs}`'s
//! `Request` (op `Put`, one key, one value), as `ferry bench kv`'s peers send them.
//!
//! What each one copies of the value in user space, client side (the nodes' side is the
//! replicated path's, the same for all: see `docs/benchmarks/raft.md`):
//!
//! ```text
//!  raw           length prefixes and key copied into the frame's head; the value by reference
//!  prost         into a Bytes (copy 1), encoded into a Vec (copy 2), copied into the frame (3)
//!  flatbuffers   into the builder (copy 1), finished bytes copied into the frame (copy 2)
//!  zflatbuffers  into a pool block of the builder (copy 1); the blocks by reference
//!  ferry         a Ferry Put, the value (a pool buffer) by reference at or above the threshold
//! ```
//!
//! Nodes decode in place where the format allows: raw and FlatBuffers (verified) read slices
//! of the entry, prost decodes from the entry's buffer as `Bytes` (values sliced, the key
//! copied into a `String`), Ferry views the `Put`.

use std::sync::Arc;

use bytes::Bytes;
use ferry_buf::{Pool, SharedBuf};
use ferry_kv::proto::ferry::kv::{Put, kv_service};
use ferry_kv::raft::{ENCODED_PUT, PutDecoder};
use ferry_rpc::Status;
use ferry_rpc::tokio::AsyncChannel;
use ferry_transport::{Payload, method_id};
use prost::Message as _;
use serde::{Deserialize, Serialize};

use crate::generated::kv_generated::ferry_bench::kv::{Request as FbRequest, Value as FbValue};
use crate::generated::kv_prost::{Request, request::Op};

/// A serialization of Table III.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum System {
    /// No serialization: key and value length-prefixed (the paper's baseline).
    Raw,
    /// prost 0.14.
    Prost,
    /// The stock `flatbuffers` builder.
    Flatbuffers,
    /// `ferry-flatbuffers`' copy-free builder.
    Zflatbuffers,
    /// Ferry's hybrid messages: `ferry kv`'s own path.
    Ferry,
}

impl System {
    /// Every system, in the order the table lists them.
    pub const ALL: [System; 5] = [
        System::Raw,
        System::Prost,
        System::Flatbuffers,
        System::Zflatbuffers,
        System::Ferry,
    ];

    /// Its name on the command line (`--encoding`) and in the results.
    pub fn name(self) -> &'static str {
        match self {
            System::Raw => "raw",
            System::Prost => "prost",
            System::Flatbuffers => "flatbuffers",
            System::Zflatbuffers => "zflatbuffers",
            System::Ferry => "ferry",
        }
    }

    /// The `--encoding` the nodes serve it with; `None` for Ferry (the default path).
    pub fn encoding(self) -> Option<&'static str> {
        (self != System::Ferry).then(|| self.name())
    }
}

/// The nodes' decoder of `ferry kv serve --encoding NAME`.
pub fn decoder(name: &str) -> Result<Arc<dyn PutDecoder>, String> {
    System::ALL
        .into_iter()
        .find(|s| s.encoding() == Some(name))
        .map(|s| Arc::new(Decoder(s)) as Arc<dyn PutDecoder>)
        .ok_or_else(|| format!("`{name}`: expected raw, prost, flatbuffers or zflatbuffers"))
}

/// Decodes a put of its system (FlatBuffers' and zFlatBuffers' bytes are the same).
#[derive(Debug)]
struct Decoder(System);

/// The raw put's head: the key's and the value's lengths, u32 little-endian.
const RAW_HEAD: usize = 8;

impl PutDecoder for Decoder {
    fn decode(&self, msg: &SharedBuf, put: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), String> {
        match self.0 {
            System::Raw => {
                let len = |at: usize| {
                    msg.get(at..at + 4)
                        .map(|b| u32::from_le_bytes(b.try_into().expect("4")))
                };
                let (k, v) = (len(0), len(4));
                let (Some(k), Some(v)) = (k, v) else {
                    return Err(format!("{} bytes: shorter than the lengths", msg.len()));
                };
                let key_end = RAW_HEAD + k as usize;
                match (msg.get(RAW_HEAD..key_end), msg.get(key_end..)) {
                    (Some(key), Some(value)) if value.len() == v as usize => put(key, value),
                    _ => return Err(format!("lengths {k} and {v} do not fit {} bytes", msg.len())),
                }
                Ok(())
            }
            System::Prost => {
                let r = Request::decode(msg.clone().into_bytes()).map_err(|e| e.to_string())?;
                match (r.op(), &r.keys[..], &r.values[..]) {
                    (Op::Put, [key], [value]) => put(key.as_bytes(), value),
                    (op, k, v) => return Err(format!("{op:?} of {} keys and {} values", k.len(), v.len())),
                }
                Ok(())
            }
            System::Flatbuffers | System::Zflatbuffers => {
                let r = flatbuffers::root::<FbRequest<'_>>(msg).map_err(|e| e.to_string())?;
                let (keys, values) = (r.keys().unwrap_or_default(), r.values().unwrap_or_default());
                if r.op().0 != Op::Put as u8 || keys.len() != 1 || values.len() != 1 {
                    return Err(format!(
                        "op {} of {} keys and {} values",
                        r.op().0,
                        keys.len(),
                        values.len()
                    ));
                }
                let value = values.get(0).data().map_or(&[][..], |d| d.bytes());
                put(keys.get(0).as_bytes(), value);
                Ok(())
            }
            System::Ferry => Err("Ferry's puts take the `Kv` service's path".into()),
        }
    }
}

/// Builds the FlatBuffers `Request` of a put with either builder (the same calls, so the same
/// bytes).
macro_rules! build_put {
    ($fbb:expr, $key:expr, $value:expr) => {{
        let fbb = $fbb;
        fbb.reset();
        let key = fbb.create_string($key);
        let keys = fbb.create_vector(&[key]);
        let data = fbb.create_vector($value);
        let start = fbb.start_table();
        fbb.push_slot_always(FbValue::VT_DATA, data);
        let value = fbb.end_table(start);
        let values = fbb.create_vector(&[value]);
        let start = fbb.start_table();
        fbb.push_slot_always(FbRequest::VT_VALUES, values);
        fbb.push_slot_always(FbRequest::VT_KEYS, keys);
        fbb.push_slot_always(FbRequest::VT_OP, Op::Put as u8);
        let root = fbb.end_table(start);
        fbb.finish(root, None);
    }};
}

/// A client's side of one system: encodes a put and calls the leader with it. Its buffers
/// (prost's message and output, the builders) are reused from put to put.
pub struct Encoder {
    system: System,
    head: Vec<u8>,
    prost: Request,
    out: Vec<u8>,
    stock: flatbuffers::FlatBufferBuilder<'static>,
    ours: ferry_flatbuffers::FlatBufferBuilder<'static>,
}

impl Encoder {
    /// An encoder of `system`, zFlatBuffers' blocks from `pool`.
    pub fn new(system: System, pool: &Pool) -> Encoder {
        Encoder {
            system,
            head: Vec::new(),
            prost: Request::default(),
            out: Vec::new(),
            stock: flatbuffers::FlatBufferBuilder::new(),
            ours: ferry_flatbuffers::FlatBufferBuilder::with_pool(pool),
        }
    }

    /// Puts `value` (a pool buffer) under `key` through `leader`, waiting for the answer.
    pub async fn put(&mut self, leader: &AsyncChannel, key: &str, value: &SharedBuf) -> Result<(), Status> {
        const ENCODED: u16 = method_id(ENCODED_PUT);
        let parts = std::slice::from_ref(value);
        match self.system {
            System::Raw => {
                self.head.clear();
                self.head.extend_from_slice(&(key.len() as u32).to_le_bytes());
                self.head.extend_from_slice(&(value.len() as u32).to_le_bytes());
                self.head.extend_from_slice(key.as_bytes());
                let payload = Payload::Gather {
                    head: &self.head,
                    parts,
                };
                leader.call_payload(ENCODED, payload).await?;
            }
            System::Prost => {
                let r = &mut self.prost;
                r.set_op(Op::Put);
                r.keys.resize(1, String::new());
                r.keys[0].clear();
                r.keys[0].push_str(key);
                r.values = vec![Bytes::copy_from_slice(value)];
                self.out.clear();
                r.encode(&mut self.out)
                    .map_err(|e| Status::new(ferry_rpc::Code::Internal, e.to_string()))?;
                leader.call_payload(ENCODED, Payload::Bytes(&self.out)).await?;
            }
            System::Flatbuffers => {
                build_put!(&mut self.stock, key, &value[..]);
                let payload = Payload::Bytes(self.stock.finished_data());
                leader.call_payload(ENCODED, payload).await?;
            }
            System::Zflatbuffers => {
                build_put!(&mut self.ours, key, &value[..]);
                let message = self.ours.finished_message();
                leader.call_payload(ENCODED, message.payload()).await?;
            }
            System::Ferry => {
                let mut put = Put::new(leader.context());
                put.set_key(key);
                put.append_values(value.clone());
                leader.call::<()>(kv_service::PUT, &put).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ferry_buf::PoolConfig;
    use ferry_kv::raft::{Client, NodeConfig, Sync, serve};

    use super::*;

    /// A put of each system goes through a single node's log and is applied: the value read
    /// back through the `Kv` service is the one the client encoded (below and above the
    /// 16 KiB at which the store references the log entry instead of copying it).
    #[test]
    fn a_put_of_each_system_round_trips_through_the_log() {
        for system in System::ALL {
            let dir = tempfile::tempdir().expect("scratch directory");
            let mut config = NodeConfig::new(1, "tcp://127.0.0.1:0", dir.path());
            config.sync = Sync::Always;
            config.encoding = system.encoding().map(|n| decoder(n).expect("a decoder"));
            let (addr_tx, addr_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let node = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                tokio::task::LocalSet::new().block_on(&rt, async move {
                    let ready = |a: &str| addr_tx.send(a.to_owned()).unwrap();
                    serve(config, ready, async move { drop(stop_rx.await) })
                        .await
                        .map_err(|e| e.to_string())
                })
            });
            let addr = addr_rx
                .recv_timeout(Duration::from_secs(30))
                .expect("the node serves");
            let pool = Pool::new(PoolConfig::default()).unwrap();
            let values: Vec<Vec<u8>> = [1024, 64 << 10]
                .map(|n| (0..n).map(|i| (i * 7 % 251) as u8).collect())
                .into();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let leader = AsyncChannel::connect(&addr).await.expect("connect");
                let mut encoder = Encoder::new(system, &pool);
                for (i, v) in values.iter().enumerate() {
                    let value = pool.copy_from(v).unwrap();
                    encoder
                        .put(&leader, &format!("key{i}"), &value)
                        .await
                        .expect("put");
                }
            });
            let mut client = Client::connect(&addr).expect("client");
            for (i, v) in values.iter().enumerate() {
                let got = client.get(&format!("key{i}")).expect("get");
                assert_eq!(got.as_ref(), Some(v), "{system:?}, {} bytes", v.len());
            }
            stop_tx.send(()).unwrap();
            node.join().unwrap().expect("the node ran");
        }
    }

    /// Bytes that are not a put of the system are refused with a reason, not applied.
    #[test]
    fn garbage_is_refused_by_every_decoder() {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        for name in ["raw", "prost", "flatbuffers", "zflatbuffers"] {
            let d = decoder(name).unwrap();
            for bytes in [&b""[..], b"\xff\xff\xff\xff\x01\x00\x00\x00xyz", b"\x0a\x05hello"] {
                let msg = pool.copy_from(bytes).unwrap();
                let r = d.decode(&msg, &mut |_, _| panic!("{name} applied garbage"));
                assert!(r.is_err(), "{name} took {bytes:?}");
            }
        }
        assert!(decoder("ferry").is_err() && decoder("json").is_err());
    }
}
