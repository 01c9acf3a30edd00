//! The server side of the ping-pong (Figures 11-13): one raw method that verifies the Record
//! with the stock verifier (`flatbuffers::root`: a peer's bytes) and answers an 8-byte ACK
//! (the numbers of ids and strings it found), inline on the server's loop thread. Both
//! clients' requests arrive as one contiguous frame (over TCP in the receive buffer, over
//! shared memory in the client's block), so the server cannot tell which builder made them.

use ferry_rpc::{Call, Code, MethodInfo, Mode, Reply, Request, Service, Shape, Status};
use ferry_transport::{Payload, method_id};

use super::record;

/// `/ferry_bench.flatbuffers.Bench/Record`.
const PATH: &str = "/ferry_bench.flatbuffers.Bench/Record";

/// The method's id.
pub(super) const RECORD: u16 = method_id(PATH);

/// The ping-pong's service.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct AckService;

impl Service for AckService {
    fn methods(&self) -> Vec<MethodInfo> {
        vec![MethodInfo {
            path: PATH,
            id: RECORD,
            request: None,
            mode: Mode::Foreground,
            shape: Shape::Unary,
        }]
    }

    fn call<'a>(&self, call: &Call<'a>, request: Request<'a>, reply: &mut Reply<'_>) -> Result<(), Status> {
        if call.method() != RECORD {
            return Err(Status::new(
                Code::Unimplemented,
                format!("method {}", call.method()),
            ));
        }
        let bytes = request
            .incoming()
            .bytes()
            .ok_or_else(|| Status::new(Code::InvalidArgument, "a Record call without bytes"))?;
        let ack = record::verify(bytes)
            .map_err(|e| Status::new(Code::InvalidArgument, format!("the Record does not verify: {e}")))?;
        reply.send_payload(Payload::Bytes(&ack))
    }
}
