//! prost 0.14 (`schema/kv.proto`, every `bytes` field a `bytes::Bytes`).
//!
//! Server: the request is decoded from a `Bytes` (the received pool buffer itself over TCP,
//! [`Input::shared`]; a copy of borrowed bytes over shared memory), so `values` are slices of
//! it and each key is copied into a `String` (prost checks its UTF-8 there). The response
//! message is reused: each value read from the store goes in as a `Bytes` that owns a counted
//! reference to the stored buffer (`SharedBuf::into_bytes`: one small allocation, no copy),
//! then the message is encoded once, straight into a pool buffer of exactly `encoded_len`
//! bytes: one copy of each value, the encode.
//!
//! Client: the request message is reused (its key strings keep their capacity); `Put` values
//! are copied into `Bytes`. The response is decoded like the server's requests.

use bytes::Bytes;
use ferry_buf::{Pool, SharedBuf};
use ferry_kv::Store;
use ferry_rpc::{Code, Status};
use prost::Message;

use super::{KvCodec, KvRequest, Op, execute, invalid, key_str, response_buf};
use crate::BenchError;
use crate::generated::kv_prost::{Request, Response};
use crate::systems::Input;

const SYSTEM: &str = "prost";

/// Both sides of the store with prost (see the module docs).
#[derive(Debug, Default)]
pub struct ProstKv {
    /// Client: the request, reused.
    request: Request,
    /// Client: the encoded request.
    out: Vec<u8>,
    /// Server: the values found, as counted references.
    found: Vec<SharedBuf>,
    /// Server: the response, reused.
    response: Response,
}

/// `input` decoded as `M`: from the counted buffer without a copy when there is one.
fn decode<M: Message + Default>(input: Input<'_>) -> Result<M, prost::DecodeError> {
    match input.shared {
        Some(buf) => M::decode(buf.clone().into_bytes()),
        None => M::decode(input.bytes),
    }
}

impl KvCodec for ProstKv {
    fn encode_request(&mut self, req: &KvRequest<'_>) -> Result<&[u8], BenchError> {
        let message = &mut self.request;
        message.op = req.op() as i32;
        let keys = req.keys();
        message.keys.truncate(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let key = key_str(SYSTEM, key)?;
            match message.keys.get_mut(i) {
                Some(kept) => {
                    kept.clear();
                    kept.push_str(key);
                }
                None => message.keys.push(key.to_owned()),
            }
        }
        message.values.clear();
        message
            .values
            .extend(req.values().iter().map(|v| Bytes::copy_from_slice(v)));
        self.out.clear();
        let encoded = message.encode(&mut self.out);
        message.values.clear();
        encoded?;
        Ok(&self.out)
    }

    fn read_response(&mut self, input: Input<'_>, value: &mut dyn FnMut(&[u8])) -> Result<(), BenchError> {
        let response: Response = decode(input)?;
        for v in &response.values {
            value(v);
        }
        Ok(())
    }

    fn serve(&mut self, input: Input<'_>, store: &Store, pool: &Pool) -> Result<SharedBuf, Status> {
        let request: Request = decode(input).map_err(|e| invalid(SYSTEM, e))?;
        execute(
            SYSTEM,
            store,
            Op::numbered(SYSTEM, request.op)?,
            request.keys.iter().map(|k| Ok(k.as_str())),
            request.values.iter().map(|v| Ok(&v[..])),
            &mut self.found,
        )?;
        let response = &mut self.response;
        response.values.clear();
        response
            .values
            .extend(self.found.drain(..).map(SharedBuf::into_bytes));
        let len = response.encoded_len();
        let built = response_buf(SYSTEM, pool, len).and_then(|mut buf| {
            let mut out = &mut buf.capacity_mut()[..len];
            response
                .encode(&mut out)
                .map_err(|e| Status::new(Code::Internal, format!("{SYSTEM}: encoding the response: {e}")))?;
            buf.set_len(len);
            Ok(buf.freeze())
        });
        // The message lets go of the stored buffers now, not at the next call.
        response.values.clear();
        built
    }
}
