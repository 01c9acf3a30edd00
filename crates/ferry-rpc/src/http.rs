//! The sans-IO half of the metrics endpoint: where a request head ends, what its request line
//! asks for, and the bytes of the answer. Peer bytes meet only this file (fuzzed by the
//! `metrics_http` target); `metrics_http.rs` does the socket I/O.

use crate::Metrics;

/// The content type of the metrics text.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Where the head in `buf` ends (just past its blank line: `\r\n\r\n`, or `\n\n` as RFC 9112
/// lets a recipient accept), looking at line ends from `from` on.
pub fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let tail = buf.get(from..)?;
    tail.iter().enumerate().find_map(|(i, &b)| {
        let after = tail.get(i + 1..)?;
        if b != b'\n' {
            None
        } else if after.starts_with(b"\n") {
            Some(from + i + 2)
        } else if after.starts_with(b"\r\n") {
            Some(from + i + 3)
        } else {
            None
        }
    })
}

/// What to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200 with the metrics.
    Metrics,
    /// 400: not a request line.
    BadRequest,
    /// 405: not `GET`.
    MethodNotAllowed,
    /// 408: the head did not arrive in time.
    Timeout,
    /// 431: the head is longer than the endpoint reads.
    HeadTooLarge,
    /// 505: an HTTP version other than 1.0 and 1.1.
    VersionNotSupported,
}

/// The answer to a complete request head, from its request line
/// (`method SP request-target SP HTTP-version`, RFC 9112 section 3).
pub fn route(head: &[u8]) -> Answer {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Answer::BadRequest;
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Answer::BadRequest;
    }
    if target.is_empty() || !target.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Answer::BadRequest;
    }
    match version {
        b"HTTP/1.0" | b"HTTP/1.1" => {}
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Answer::VersionNotSupported;
        }
        _ => return Answer::BadRequest,
    }
    if method == b"GET" {
        Answer::Metrics
    } else {
        Answer::MethodNotAllowed
    }
}

/// A character of a token (a method name), RFC 9110 section 5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl Answer {
    /// The whole response: status line, headers, body.
    pub fn response(self, metrics: &Metrics) -> Vec<u8> {
        let (status, extra, content_type, body) = match self {
            Answer::Metrics => ("200 OK", "", CONTENT_TYPE, metrics.encode()),
            Answer::BadRequest => ("400 Bad Request", "", "", String::new()),
            Answer::MethodNotAllowed => ("405 Method Not Allowed", "Allow: GET\r\n", "", String::new()),
            Answer::Timeout => ("408 Request Timeout", "", "", String::new()),
            Answer::HeadTooLarge => ("431 Request Header Fields Too Large", "", "", String::new()),
            Answer::VersionNotSupported => ("505 HTTP Version Not Supported", "", "", String::new()),
        };
        let (content_type, body) = if content_type.is_empty() {
            ("text/plain; charset=utf-8", format!("{status}\n"))
        } else {
            (content_type, body)
        };
        let mut response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
            body.len()
        )
        .into_bytes();
        response.extend_from_slice(body.as_bytes());
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_ends_at_the_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\n", 0), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody", 0), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n", 0), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n", 0), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r", 0), None);
        assert_eq!(head_end(b"", 0), None);
        assert_eq!(head_end(b"abc", 10), None);
        // Found again when looking from 3 bytes before the end of an earlier read.
        let head = b"GET / HTTP/1.1\r\n\r\n";
        assert_eq!(head_end(head, 17 - 3), Some(18));
    }

    #[test]
    fn routes_by_request_line() {
        let cases: &[(&[u8], Answer)] = &[
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Answer::Metrics),
            (b"GET / HTTP/1.0\r\n\r\n", Answer::Metrics),
            (b"GET /anything?x=1 HTTP/1.1\n\n", Answer::Metrics),
            (b"POST /metrics HTTP/1.1\r\n\r\n", Answer::MethodNotAllowed),
            (b"HEAD /metrics HTTP/1.1\r\n\r\n", Answer::MethodNotAllowed),
            (b"get /metrics HTTP/1.1\r\n\r\n", Answer::MethodNotAllowed),
            (b"GET /metrics HTTP/2.0\r\n\r\n", Answer::VersionNotSupported),
            (b"GET /metrics HTTP/1.1 extra\r\n\r\n", Answer::BadRequest),
            (b"GET  /metrics HTTP/1.1\r\n\r\n", Answer::BadRequest),
            (b"GET /metrics\r\n\r\n", Answer::BadRequest),
            (b"GET /metrics http/1.1\r\n\r\n", Answer::BadRequest),
            (b"GET /metrics HTTP/1.12\r\n\r\n", Answer::BadRequest),
            (b"GET /m\xe9trics HTTP/1.1\r\n\r\n", Answer::BadRequest),
            (b"G(T / HTTP/1.1\r\n\r\n", Answer::BadRequest),
            (b"garbage\r\n\r\n", Answer::BadRequest),
            (b"\r\n\r\n", Answer::BadRequest),
            (b"\x00\xff\x16\x03\x01\n\n", Answer::BadRequest),
            (b"", Answer::BadRequest),
        ];
        for &(head, answer) in cases {
            assert_eq!(route(head), answer, "{:?}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn responses_are_framed() {
        let metrics = Metrics::new(&[]);
        let ok = String::from_utf8(Answer::Metrics.response(&metrics)).expect("utf-8");
        let (head, body) = ok.split_once("\r\n\r\n").expect("a head");
        assert_eq!(
            head,
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close",
                body.len()
            )
        );
        assert!(body.ends_with("# EOF\n"));

        let refused = String::from_utf8(Answer::MethodNotAllowed.response(&metrics)).expect("utf-8");
        assert_eq!(
            refused,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 23\r\nConnection: close\r\nAllow: GET\r\n\r\n405 Method Not Allowed\n"
        );
    }
}
