//! FlatBuffers 25.12 (`schema/kv.fbs`), with a reused builder and the verifier always on.
//!
//! Server: `root_as_request` verifies the request (it is a peer's input; that includes the
//! UTF-8 of every key) and reads it in place. The response is built in the reused builder
//! (`reset()` zeroes only what the last message used): each value read from the store is
//! copied into a `[ubyte]` vector wrapped in a `Value` table (FlatBuffers has no vector of
//! vectors), then the finished bytes are copied once into a pool buffer, FlatBuffers' contiguous
//! output handed to the transport (Cornflakes section 6.1.3): two copies of each value.
//!
//! Client: the request is built in its own reused builder (its output is `finished_data()`),
//! and the response is verified, then read in place.

use ferry_buf::{Pool, SharedBuf};
use ferry_kv::Store;
use ferry_rpc::Status;
use flatbuffers::{FlatBufferBuilder, WIPOffset};

use super::{KvCodec, KvRequest, Op, copy_into_pool, execute, invalid, key_str};
use crate::BenchError;
use crate::generated::kv_generated::ferry_bench::kv::{
    Op as FbOp, Request, RequestArgs, Response, ResponseArgs, Value, ValueArgs, root_as_request,
};
use crate::systems::Input;

const SYSTEM: &str = "flatbuf";

/// Both sides of the store with FlatBuffers (see the module docs).
#[derive(Default)]
pub struct FlatbufKv {
    /// Client: builds requests.
    client: FlatBufferBuilder<'static>,
    /// Server: builds responses.
    server: FlatBufferBuilder<'static>,
    /// The offsets of the values (and keys) of the message being built.
    values: Vec<WIPOffset<Value<'static>>>,
    keys: Vec<WIPOffset<&'static str>>,
    /// Server: the values found, as counted references.
    found: Vec<SharedBuf>,
}

/// `data` as a `Value` table in `builder`.
fn value(builder: &mut FlatBufferBuilder<'static>, data: &[u8]) -> WIPOffset<Value<'static>> {
    let data = builder.create_vector(data);
    Value::create(builder, &ValueArgs { data: Some(data) })
}

/// The bytes of a `Value` (empty if it has none).
fn data<'a>(v: Value<'a>) -> &'a [u8] {
    v.data().map_or(&[][..], |d| d.bytes())
}

impl KvCodec for FlatbufKv {
    fn encode_request(&mut self, req: &KvRequest<'_>) -> Result<&[u8], BenchError> {
        let builder = &mut self.client;
        builder.reset();
        self.keys.clear();
        for key in req.keys() {
            let key = key_str(SYSTEM, key)?;
            self.keys.push(builder.create_string(key));
        }
        self.values.clear();
        for v in req.values() {
            self.values.push(value(builder, v));
        }
        let keys = builder.create_vector(&self.keys);
        let values = (!self.values.is_empty()).then(|| builder.create_vector(&self.values));
        let root = Request::create(
            builder,
            &RequestArgs {
                op: FbOp(req.op() as u8),
                keys: Some(keys),
                values,
            },
        );
        builder.finish(root, None);
        Ok(builder.finished_data())
    }

    fn read_response(&mut self, input: Input<'_>, value: &mut dyn FnMut(&[u8])) -> Result<(), BenchError> {
        let response = flatbuffers::root::<Response<'_>>(input.bytes)?;
        for v in response.values().iter().flatten() {
            value(data(v));
        }
        Ok(())
    }

    fn serve(&mut self, input: Input<'_>, store: &Store, pool: &Pool) -> Result<SharedBuf, Status> {
        let request = root_as_request(input.bytes).map_err(|e| invalid(SYSTEM, e))?;
        let keys = request.keys().unwrap_or_default();
        let values = request.values().unwrap_or_default();
        execute(
            SYSTEM,
            store,
            Op::numbered(SYSTEM, request.op().0)?,
            keys.iter().map(Ok),
            values.iter().map(|v| Ok(data(v))),
            &mut self.found,
        )?;
        let builder = &mut self.server;
        builder.reset();
        self.values.clear();
        for buf in self.found.drain(..) {
            self.values.push(value(builder, &buf));
        }
        let values = builder.create_vector(&self.values);
        let root = Response::create(builder, &ResponseArgs { values: Some(values) });
        builder.finish(root, None);
        copy_into_pool(SYSTEM, pool, builder.finished_data())
    }
}
