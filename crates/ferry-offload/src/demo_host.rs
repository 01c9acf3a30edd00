//! The demo service's host: the generated `Demo` trait implemented the way any Ferry service
//! is, with nothing specific to the engine. `examples/host.rs` serves it over shared memory
//! for `ferry gateway`; the tests and `ferry bench offload` serve it in-process.
//!
//! Handlers read validated views in place: no protobuf, no copy of the request. `Echo` answers
//! with a message that borrows the request where it arrived (its large values go back by
//! reference); `Echo` and `Fail` copy the request's `x-` metadata into their headers and trailers.

use std::time::{Duration, Instant};

use ferry::rpc::{Call, Code, Metadata, Mode, Service, Services, Status};
use ferry::{DecodeError, MessageView as _};

use crate::demo;

/// The demo service: every method of `ferry.offload.demo.Demo`.
#[derive(Debug, Default, Clone, Copy)]
pub struct DemoHost;

/// The demo's services as a host serves them: `demo` (an implementation of the demo service:
/// `DemoServer::new(DemoHost)`, or another) and the `ferry.offload.Host` service describing it,
/// with one worker thread for `Sleep` (a background handler).
pub fn services(demo: impl Service) -> Result<Services, Box<dyn std::error::Error + Send + Sync>> {
    let described = crate::host::describe(crate::DEMO_DESCRIPTORS, &["ferry.offload.demo.Demo"])?;
    Ok(Services::builder()
        .service(demo)?
        .service(described)?
        .workers(1)
        .build()?)
}

fn invalid(e: DecodeError) -> Status {
    Status::new(Code::InvalidArgument, e.to_string())
}

/// The digest the paper's handlers answer, continuing from `hash`: every byte read, cheaply
/// (a sum of little-endian words, then the tail bytes), so that the handler's own work stays
/// small next to getting the request.
pub fn digest(hash: u64, bytes: &[u8]) -> u64 {
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    let sum = words.fold(hash, |h, w| {
        h.wrapping_add(u64::from_le_bytes(w.try_into().expect("8 bytes")))
    });
    tail.iter().fold(sum, |h, &b| h.rotate_left(8) ^ u64::from(b))
}

/// `SendSmall`'s digest of a `Small`'s fields, in field order.
pub fn small_digest(id: u32, timestamp: i64, flag: bool, score: f32, tag: &[u8]) -> u64 {
    let mut h = digest(DIGEST_SEED, &id.to_le_bytes());
    h = digest(h, &timestamp.to_le_bytes());
    h = digest(h, &[u8::from(flag)]);
    h = digest(h, &score.to_bits().to_le_bytes());
    digest(h, tag)
}

/// The digest's starting value.
pub const DIGEST_SEED: u64 = 0xcbf2_9ce4_8422_2325;

impl demo::Demo for DemoHost {
    const SLEEP_MODE: Mode = Mode::Background;

    fn echo<'a>(&self, call: &Call<'a>, request: demo::KindsView<'a>) -> Result<demo::Kinds<'a>, Status> {
        echo_metadata(call, false)?;
        request.to_message(call.ctx()).map_err(invalid)
    }

    fn fail<'a>(
        &self,
        call: &Call<'a>,
        request: demo::FailRequestView<'a>,
    ) -> Result<demo::Empty<'a>, Status> {
        echo_metadata(call, true)?;
        let code = u8::try_from(request.code())
            .ok()
            .and_then(Code::from_u8)
            .filter(|c| *c != Code::Ok)
            .ok_or_else(|| {
                Status::new(
                    Code::InvalidArgument,
                    format!("no status code {}", request.code()),
                )
            })?;
        Err(Status::new(code, request.message().map_err(invalid)?))
    }

    fn sleep<'a>(
        &self,
        call: &Call<'a>,
        request: demo::SleepRequestView<'a>,
    ) -> Result<demo::SleepReply<'a>, Status> {
        let start = Instant::now();
        let budget = call.deadline().map(|d| d.saturating_duration_since(start));
        let until = start + Duration::from_millis(u64::from(request.millis()));
        while Instant::now() < until {
            if call.is_cancelled() {
                return Err(Status::new(Code::Cancelled, "the caller gave up"));
            }
            std::thread::sleep(Duration::from_millis(1).min(until.saturating_duration_since(Instant::now())));
        }
        let mut reply = demo::SleepReply::new(call.ctx());
        // At least 1 ms when there is a deadline, so that 0 means none.
        reply.set_budget_millis(budget.map_or(0, |b| (b.as_millis() as u64).max(1)));
        Ok(reply)
    }

    fn send_small<'a>(&self, call: &Call<'a>, request: demo::SmallView<'a>) -> Result<demo::Ack<'a>, Status> {
        let tag = request.tag().map_err(invalid)?;
        let h = small_digest(
            request.id(),
            request.timestamp(),
            request.flag(),
            request.score(),
            tag.as_bytes(),
        );
        Ok(ack(call, h, 1))
    }

    fn send_ints<'a>(&self, call: &Call<'a>, request: demo::IntsView<'a>) -> Result<demo::Ack<'a>, Status> {
        let values = request.values();
        let sum = values.iter().fold(0u64, |s, v| s.wrapping_add(u64::from(v)));
        Ok(ack(call, sum, values.len()))
    }

    fn send_chars<'a>(&self, call: &Call<'a>, request: demo::CharsView<'a>) -> Result<demo::Ack<'a>, Status> {
        let text = request.text().map_err(invalid)?;
        Ok(ack(call, digest(DIGEST_SEED, text.as_bytes()), text.len()))
    }
}

/// Copies the request's `x-` metadata into the response: keys with `-trailing` in them into
/// its trailers, the others into its headers; all into the trailers when `failing` (a failed
/// call's status carries its trailers).
fn echo_metadata(call: &Call<'_>, failing: bool) -> Result<(), Status> {
    let (mut headers, mut trailers) = (Metadata::new(), Metadata::new());
    for (key, value) in call.metadata().iter().filter(|(k, _)| k.starts_with("x-")) {
        let to = match failing || key.contains("-trailing") {
            true => &mut trailers,
            false => &mut headers,
        };
        to.append(key, value)
            .map_err(|e| Status::new(Code::Internal, e.to_string()))?;
    }
    call.set_headers(headers);
    call.set_trailers(trailers);
    Ok(())
}

fn ack<'a>(call: &Call<'a>, digest: u64, count: usize) -> demo::Ack<'a> {
    let mut ack = demo::Ack::new(call.ctx());
    ack.set_digest(digest);
    ack.set_count(u32::try_from(count).unwrap_or(u32::MAX));
    ack
}
