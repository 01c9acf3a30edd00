//! gRPC's interop test service (`grpc.testing.TestService`, from the vendored, unchanged
//! `proto/grpc/testing/test.proto`) as a Ferry host: what grpc-go's interop client calls
//! through `ferry gateway`, as the interop spec
//! (<https://github.com/grpc/grpc/blob/master/doc/interop-test-descriptions.md>) asks of a
//! server:
//! - payloads of the sizes a request asks for (zeros, `COMPRESSABLE`);
//! - `response_status`: the call fails with that code and message;
//! - metadata: `x-grpc-test-echo-initial` comes back as a header, `x-grpc-test-echo-trailing-bin`
//!   as a trailer;
//! - `interval_us`: a streamed response waits that long first (a sleeping server: the
//!   client's deadline covers the whole stream);
//! - `UnimplementedCall` is `UNIMPLEMENTED`.
//!
//! Served by the tokio driver: `examples/interop_host.rs`, with [`describe`].

use std::time::Duration;

use ferry::Context;
use ferry::rpc::tokio::{AsyncCall, AsyncRequest, RequestStream, ResponseSink};
use ferry::rpc::{Code, Encoded, Metadata, Status};

use crate::grpc_testing::grpc::testing as t;
use crate::host::{AsyncHostService, describe_async};
use crate::table::TableError;

/// The request header echoed as a response header.
const ECHO_INITIAL: &str = "x-grpc-test-echo-initial";
/// The request header echoed as a trailer.
const ECHO_TRAILING: &str = "x-grpc-test-echo-trailing-bin";
/// The largest payload a request may ask for (the engine's message limit bounds it anyway).
const MAX_PAYLOAD: usize = 4 << 20;
/// The most responses a half-duplex call may ask for before its answers start (they wait in
/// memory until the client's end).
const MAX_HALF_DUPLEX: usize = 1024;

/// `grpc.testing.TestService`.
#[derive(Debug, Default, Clone, Copy)]
pub struct InteropHost;

/// The `ferry.offload.Host` service describing `grpc.testing.TestService` (and the other
/// services of the interop schema, which this host does not serve: the engine answers them
/// `UNIMPLEMENTED`, as the interop client's `unimplemented_service` case expects).
pub fn describe() -> Result<AsyncHostService, TableError> {
    describe_async(crate::INTEROP_DESCRIPTORS, &["grpc.testing.TestService"])
}

fn invalid(e: ferry::DecodeError) -> Status {
    Status::new(Code::InvalidArgument, e.to_string())
}

/// Echoes the interop metadata: the initial value as a header, the trailing one as a trailer.
fn echo_metadata(call: &AsyncCall) -> Result<(), Status> {
    let pick = |key: &str| -> Result<Metadata, Status> {
        let mut md = Metadata::new();
        for value in call.metadata().get_all(key) {
            md.append(key, value)
                .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
        }
        Ok(md)
    };
    call.set_headers(pick(ECHO_INITIAL)?);
    call.set_trailers(pick(ECHO_TRAILING)?);
    Ok(())
}

/// A status the request asked for (`response_status` with a non-zero code).
fn asked_status(status: Option<t::EchoStatusView<'_>>) -> Result<(), Status> {
    let Some(status) = status else { return Ok(()) };
    if status.code() == 0 {
        return Ok(());
    }
    let code = u8::try_from(status.code())
        .ok()
        .and_then(Code::from_u8)
        .unwrap_or(Code::Unknown);
    Err(Status::new(code, status.message().map_err(invalid)?))
}

/// A payload of `size` zero bytes.
fn payload(ctx: &Context, size: i32) -> Result<t::Payload<'_>, Status> {
    let size = usize::try_from(size).map_err(|_| Status::new(Code::InvalidArgument, "a negative size"))?;
    if size > MAX_PAYLOAD {
        return Err(Status::new(
            Code::InvalidArgument,
            format!("a payload of {size} bytes (at most {MAX_PAYLOAD})"),
        ));
    }
    let mut p = t::Payload::new(ctx);
    p.set_type(t::PayloadType::Compressable);
    p.set_body(vec![0u8; size]);
    Ok(p)
}

/// What one streaming request asks for: a `(size, interval_us)` per response to send, or the
/// status it asks to fail with. Read out of the request, which is then dropped (over shared
/// memory a kept request would hold back the client's acknowledgements).
fn plan(request: &AsyncRequest<t::StreamingOutputCallRequest<'static>>) -> Result<Vec<(i32, i32)>, Status> {
    let r = request.view()?;
    asked_status(r.response_status())?;
    Ok(r.response_parameters()
        .map(|p| (p.size(), p.interval_us()))
        .collect())
}

/// Sends the responses of `plan`, each after its interval.
async fn send_plan(ctx: &Context, plan: &[(i32, i32)], responses: &mut ResponseSink) -> Result<(), Status> {
    for &(size, interval_us) in plan {
        if let Ok(us) = u64::try_from(interval_us) {
            if us > 0 {
                tokio::time::sleep(Duration::from_micros(us)).await;
            }
        }
        let mut response = t::StreamingOutputCallResponse::new(ctx);
        response.set_payload(payload(ctx, size)?);
        responses.send(&response).await?;
    }
    Ok(())
}

impl t::AsyncTestService for InteropHost {
    async fn empty_call(
        &self,
        call: AsyncCall,
        _: AsyncRequest<t::Empty<'static>>,
    ) -> Result<Encoded, Status> {
        echo_metadata(&call)?;
        Encoded::message(&t::Empty::new(call.ctx()))
    }

    async fn unary_call(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SimpleRequest<'static>>,
    ) -> Result<Encoded, Status> {
        echo_metadata(&call)?;
        let r = request.view()?;
        asked_status(r.response_status())?;
        let mut response = t::SimpleResponse::new(call.ctx());
        response.set_payload(payload(call.ctx(), r.response_size())?);
        Encoded::message(&response)
    }

    async fn cacheable_unary_call(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::SimpleRequest<'static>>,
    ) -> Result<Encoded, Status> {
        self.unary_call(call, request).await
    }

    async fn streaming_output_call(
        &self,
        call: AsyncCall,
        request: AsyncRequest<t::StreamingOutputCallRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        echo_metadata(&call)?;
        let plan = plan(&request)?;
        drop(request);
        send_plan(call.ctx(), &plan, &mut responses).await
    }

    async fn streaming_input_call(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<t::StreamingInputCallRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        echo_metadata(&call)?;
        let mut total = 0usize;
        while let Some(request) = requests.message().await? {
            total += request.view()?.payload().map_or(0, |p| p.body().len());
        }
        let mut response = t::StreamingInputCallResponse::new(call.ctx());
        response.set_aggregated_payload_size(
            i32::try_from(total).map_err(|_| Status::new(Code::OutOfRange, "over 2 GiB aggregated"))?,
        );
        responses.send(&response).await
    }

    async fn full_duplex_call(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<t::StreamingOutputCallRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        echo_metadata(&call)?;
        while let Some(request) = requests.message().await? {
            let plan = plan(&request)?;
            drop(request);
            send_plan(call.ctx(), &plan, &mut responses).await?;
        }
        Ok(())
    }

    async fn half_duplex_call(
        &self,
        call: AsyncCall,
        mut requests: RequestStream<t::StreamingOutputCallRequest<'static>>,
        mut responses: ResponseSink,
    ) -> Result<(), Status> {
        echo_metadata(&call)?;
        // Every request first, then every answer: what the requests ask for is kept (not the
        // requests), and no more of it than MAX_HALF_DUPLEX responses.
        let mut all = Vec::new();
        while let Some(request) = requests.message().await? {
            all.extend(plan(&request)?);
            if all.len() > MAX_HALF_DUPLEX {
                return Err(Status::new(
                    Code::ResourceExhausted,
                    format!("a half-duplex call asked for more than {MAX_HALF_DUPLEX} responses"),
                ));
            }
        }
        send_plan(call.ctx(), &all, &mut responses).await
    }

    async fn unimplemented_call(
        &self,
        _: AsyncCall,
        _: AsyncRequest<t::Empty<'static>>,
    ) -> Result<Encoded, Status> {
        Err(Status::new(
            Code::Unimplemented,
            "grpc.testing.TestService/UnimplementedCall is not implemented, as the interop spec asks",
        ))
    }
}
