//! The engine's protocol logic, without I/O: protobuf to Ferry and back, gRPC's timeout and
//! metadata rules, and what each failure answers the gRPC client.
//!
//! - [`decode_request`]: a request body (protobuf) into a Ferry [`DynamicMessage`] under the
//!   host session's [`Context`]; its bytes and strings are referenced, not copied, until the
//!   message is written into the session's shared pool (once). UTF-8 is checked here, so the
//!   host never checks it again for a message that came through the engine.
//! - [`encode_response`]: the host's response, validated in place as the method's output type,
//!   into protobuf. A response that does not validate is the host's fault: `INTERNAL`.
//! - [`parse_timeout`], [`forwarded`]: `grpc-timeout` and which headers pass to the host.

use std::time::Duration;

use ferry::rpc::{Code, Status};
use ferry::wire::DynamicMessage;
use ferry::{Context, Limits, View};
use ferry_reflect::protobuf::{self, ProtobufError, ProtobufErrorKind, ProtobufLimits};

use crate::table::{Route, Table};

/// Decodes `body` as the request of `route`. Errors are the gRPC statuses the client gets:
/// `INVALID_ARGUMENT` naming the message, field (number and name) and byte, or
/// `RESOURCE_EXHAUSTED` for a body over `limits.max_len`.
pub fn decode_request<'a>(
    table: &'a Table,
    route: &Route,
    body: &'a [u8],
    ctx: &'a Context,
    limits: &ProtobufLimits,
) -> Result<DynamicMessage<'a>, Status> {
    let name = route.input.full_name();
    let desc = table
        .schema()
        .message(name)
        .ok_or_else(|| Status::new(Code::Internal, format!("no Ferry descriptor for {name}")))?;
    protobuf::decode(&route.input, desc, body, ctx, limits).map_err(|e| invalid_request(table, &e))
}

/// The status for a request that does not decode.
fn invalid_request(table: &Table, e: &ProtobufError) -> Status {
    let code = match e.kind {
        ProtobufErrorKind::TooLarge { .. } => Code::ResourceExhausted,
        ProtobufErrorKind::Schema(_) => Code::Internal,
        _ => Code::InvalidArgument,
    };
    let field = e.field.map(|n| {
        let name = table
            .schema()
            .descriptor(&e.message)
            .and_then(|m| m.get_field(n))
            .map(|f| f.name().to_string())
            .unwrap_or_else(|| "unknown".into());
        format!(" field {n} ({name})")
    });
    Status::new(
        code,
        format!(
            "request {}{}: byte {}: {}",
            e.message,
            field.unwrap_or_default(),
            e.offset,
            e.kind
        ),
    )
}

/// Encodes the host's response (`frame`, a Ferry message) as the output of `route`, validating
/// it first with `limits`. `ctx` is only used to hold the values read (nothing is copied into
/// it).
pub fn encode_response(
    table: &Table,
    route: &Route,
    frame: &dyn ferry::transport::Received,
    limits: &Limits,
) -> Result<Vec<u8>, Status> {
    let name = route.output.full_name();
    let desc = table
        .schema()
        .message(name)
        .ok_or_else(|| Status::new(Code::Internal, format!("no Ferry descriptor for {name}")))?;
    let wrong = |e: &dyn std::fmt::Display| {
        Status::new(
            Code::Internal,
            format!("the host's response is not a valid {name}: {e}"),
        )
    };
    let view: View<'_> = frame.view(desc, limits).map_err(|e| wrong(&e))?;
    let ctx = Context::copy_only();
    let message = DynamicMessage::from_view(&view, ctx).map_err(|e| wrong(&e))?;
    Ok(protobuf::encode(&route.output, &message))
}

/// Parses a `grpc-timeout` value: 1 to 8 ASCII digits and a unit (`H`, `M`, `S`, `m`, `u`,
/// `n`). `None` for anything else (the engine answers such a call `INVALID_ARGUMENT`).
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Whether a request header is metadata the host sees: everything but HTTP/2's and gRPC's own
/// headers (pseudo-headers, `content-type`, `te`, `grpc-*` but `grpc-trace-bin`, which
/// tracing passes on, and the connection headers).
pub fn forwarded(name: &str) -> bool {
    !(name.starts_with(':')
        || (name.starts_with("grpc-") && name != "grpc-trace-bin")
        || matches!(
            name,
            "content-type"
                | "te"
                | "content-length"
                | "connection"
                | "keep-alive"
                | "host"
                | "transfer-encoding"
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_in_every_unit() {
        assert_eq!(parse_timeout(b"5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout(b"2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_timeout(b"3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_timeout(b"250m"), Some(Duration::from_millis(250)));
        assert_eq!(
            parse_timeout(b"99999999u"),
            Some(Duration::from_micros(99_999_999))
        );
        assert_eq!(parse_timeout(b"10n"), Some(Duration::from_nanos(10)));
    }

    #[test]
    fn malformed_timeouts_are_refused() {
        for bad in [
            &b""[..],
            b"S",
            b"5",
            b"5s",
            b"123456789S",
            b"-5S",
            b"5 S",
            b"\xff5S",
            b"1.5S",
        ] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn grpc_and_http_headers_stay_with_the_engine() {
        for h in [
            ":path",
            "content-type",
            "te",
            "grpc-timeout",
            "grpc-encoding",
            "grpc-accept-encoding",
        ] {
            assert!(!forwarded(h), "{h}");
        }
        for h in [
            "authorization",
            "x-request-id",
            "user-agent",
            "grpc-trace-bin",
            "tenant-bin",
        ] {
            assert!(forwarded(h), "{h}");
        }
    }
}
