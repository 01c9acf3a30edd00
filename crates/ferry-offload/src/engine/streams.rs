//! A gRPC stream's two bodies as the engine's tasks hold them (the I/O half; the framing is
//! [`crate::framing`]'s, the statuses and trailers [`super::grpc`]'s):
//!
//! - [`Requests`]: the request body as messages, read only as fast as they are taken: the
//!   body is polled for more only when no whole message is buffered, so a taker that waits
//!   (for room in the host stream's window) stops the reading, and HTTP/2's receive window,
//!   no longer released, stops the client.
//! - [`Answers`] → [`AnswerBody`]: the response body, fed by the host side through a channel
//!   of [`QUEUED`] messages. HTTP/2 polls the body only while the client's window has room;
//!   the channel then fills, [`Answers::room`] waits, and the host side takes no more from the
//!   host stream (whose window is then granted no more). A client that stops reading stops
//!   the host's sends, with at most the client's window, one message in HTTP/2's send buffer,
//!   the channel and one message in hand between them.
//!
//! ```text
//!  host side (sessions.rs)                          gRPC side (grpc.rs, hyper)
//!  Answers::headers ──head (oneshot)──────────────► response headers (or trailers-only status)
//!  Answers::room + send ──messages (QUEUED)───────► AnswerBody: framed, compressed ─► DATA
//!  Answers::end ──end (oneshot)───────────────────► AnswerBody: trailers, grpc-status
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use bytes::Bytes;
use ferry::rpc::{Code, Metadata, Status};
use http_body_util::BodyExt as _;
use tokio::sync::{mpsc, oneshot};
use tonic::body::Body;

use super::grpc::trailers;
use crate::framing::{self, Deframer, Encoding};

/// Answer messages waiting for HTTP/2 to take them, at most.
pub(crate) const QUEUED: usize = 2;

/// A stream's request messages, as the client sends them.
pub(crate) struct Requests {
    body: Body,
    deframer: Deframer,
    encoding: Encoding,
    limit: usize,
}

impl Requests {
    /// The messages of `body`, sent with `encoding`, each at most `limit` bytes as sent and
    /// once inflated.
    pub(crate) fn new(body: Body, encoding: Encoding, limit: usize) -> Requests {
        Requests {
            body,
            deframer: Deframer::new(limit),
            encoding,
            limit,
        }
    }

    /// The next message, inflated; `None` once the client has half-closed. Reads the body no
    /// further than this message (and the rest of the chunk that completes it). A malformed
    /// message or a message over the limit is the status the client gets; a client that
    /// resets the stream is `CANCELLED`.
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, Status> {
        loop {
            if let Some(frame) = self.deframer.next_frame()? {
                return Ok(Some(frame.decompress(self.encoding, self.limit)?));
            }
            match self.body.frame().await {
                None => {
                    self.deframer.finish()?;
                    return Ok(None);
                }
                Some(Err(e)) => {
                    return Err(Status::new(
                        Code::Cancelled,
                        format!("reading the request stream: {e}"),
                    ));
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.deframer.push(data);
                    }
                }
            }
        }
    }
}

/// How a stream ends: OK with the host's trailers, or a status (its metadata the trailers).
pub(crate) type End = Result<Metadata, Status>;

/// The host side's end of a stream's answer: headers once, messages as there is room, and
/// the end. Dropped without [`end`](Self::end), the client gets `INTERNAL`.
pub(crate) struct Answers {
    head: Option<oneshot::Sender<Result<Metadata, Status>>>,
    messages: mpsc::Sender<Vec<u8>>,
    end: oneshot::Sender<End>,
}

/// Room for one answer message (see [`Answers::room`]).
pub(crate) struct Room(mpsc::OwnedPermit<Vec<u8>>);

/// The gRPC side's end of a stream's answer: the head, then the body.
pub(crate) struct Answered {
    head: oneshot::Receiver<Result<Metadata, Status>>,
    body: AnswerBody,
}

/// The channels between the two sides of one stream; answers compressed with `encoding`.
pub(crate) fn answer(encoding: Encoding) -> (Answers, Answered) {
    let (head, head_rx) = oneshot::channel();
    let (messages, messages_rx) = mpsc::channel(QUEUED);
    let (end, end_rx) = oneshot::channel();
    let answers = Answers {
        head: Some(head),
        messages,
        end,
    };
    let answered = Answered {
        head: head_rx,
        body: AnswerBody {
            messages: messages_rx,
            end: Some(end_rx),
            encoding,
        },
    };
    (answers, answered)
}

impl Answers {
    /// Sends the response headers, if nothing has been sent yet (they go before the first
    /// message; without a call here, a message or an OK end sends none).
    pub(crate) fn headers(&mut self, headers: Metadata) {
        if let Some(head) = self.head.take() {
            let _ = head.send(Ok(headers));
        }
    }

    /// Waits for room for one more message: until the client has read enough. `None` if the
    /// client has gone (it reset the stream, or the call ended on the gRPC side).
    pub(crate) async fn room(&self) -> Option<Room> {
        self.messages.clone().reserve_owned().await.ok().map(Room)
    }

    /// Sends a response message (protobuf) in the room taken for it.
    pub(crate) fn send(&mut self, room: Room, message: Vec<u8>) {
        self.headers(Metadata::new());
        room.0.send(message);
    }

    /// Resolves when the client has gone (see [`room`](Self::room)). The future borrows
    /// nothing (so the answers can be sent meanwhile); drop it before [`end`](Self::end), or
    /// the body waits for it.
    pub(crate) fn gone(&self) -> impl Future<Output = ()> + 'static {
        let messages = self.messages.clone();
        async move { messages.closed().await }
    }

    /// Ends the stream: trailers and `grpc-status` after the messages sent, or, when nothing
    /// was sent yet, a failure alone (a trailers-only answer, as a unary failure is).
    pub(crate) fn end(mut self, end: End) {
        match (self.head.take(), end) {
            (Some(head), Err(status)) => {
                let _ = head.send(Err(status));
            }
            (head, end) => {
                if let Some(head) = head {
                    let _ = head.send(Ok(Metadata::new()));
                }
                let _ = self.end.send(end);
            }
        }
    }
}

impl Answered {
    /// The response headers and the body, once the host side sends them; or the status of a
    /// stream that failed before (`UNAVAILABLE` if the host side dropped it).
    pub(crate) async fn head(self) -> Result<(Metadata, AnswerBody), Status> {
        match self.head.await {
            Ok(Ok(headers)) => Ok((headers, self.body)),
            Ok(Err(status)) => Err(status),
            Err(_) => Err(Status::new(Code::Unavailable, "the engine dropped the call")),
        }
    }
}

/// The response body of a stream: each message framed (compressed with the answer's
/// encoding, as [`framing::frame`] decides) as HTTP/2 asks for it, then the trailers.
pub(crate) struct AnswerBody {
    messages: mpsc::Receiver<Vec<u8>>,
    /// `None` once the trailers are out.
    end: Option<oneshot::Receiver<End>>,
    encoding: Encoding,
}

impl http_body::Body for AnswerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let Some(end) = this.end.as_mut() else {
            return Poll::Ready(None);
        };
        // `None` once the host side has ended (or dropped) its `Answers` and every message is out.
        if let Some(message) = ready!(this.messages.poll_recv(cx)) {
            let data = framing::frame(&message, this.encoding);
            return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
        }
        let end = ready!(Pin::new(end).poll(cx)).unwrap_or_else(|_| {
            Err(Status::new(
                Code::Internal,
                "the engine dropped the stream before its end",
            ))
        });
        this.end = None;
        Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers(end)))))
    }

    fn is_end_stream(&self) -> bool {
        self.end.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::FramingError;
    use http_body::Body as _;
    use std::future::poll_fn;

    type Chunks = mpsc::Sender<Result<http_body::Frame<Bytes>, Infallible>>;

    /// A request body whose chunks the test hands in (at most `queued` waiting to be read).
    fn body(queued: usize) -> (Chunks, Body) {
        let (tx, rx) = mpsc::channel(queued);
        let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
        (tx, Body::new(http_body_util::StreamBody::new(stream)))
    }

    async fn chunk(tx: &Chunks, bytes: Vec<u8>) {
        tx.send(Ok(http_body::Frame::data(Bytes::from(bytes))))
            .await
            .unwrap();
    }

    fn framed(flag: u8, message: &[u8]) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend((message.len() as u32).to_be_bytes());
        v.extend(message);
        v
    }

    #[tokio::test]
    async fn requests_are_read_only_as_fast_as_they_are_taken() {
        let (tx, body) = body(4);
        let mut requests = Requests::new(body, Encoding::Identity, 16);
        for m in [&b"one"[..], b"two", b"three"] {
            chunk(&tx, framed(0, m)).await;
        }
        assert_eq!(requests.next().await, Ok(Some(Bytes::from_static(b"one"))));
        // The two chunks after the first are still in the body.
        assert_eq!(tx.capacity(), 2);
        assert_eq!(requests.next().await, Ok(Some(Bytes::from_static(b"two"))));
        assert_eq!(tx.capacity(), 3);
        // A message across chunks, and the half-close.
        let four = framed(0, b"four");
        chunk(&tx, four[..3].to_vec()).await;
        chunk(&tx, four[3..].to_vec()).await;
        drop(tx);
        assert_eq!(requests.next().await, Ok(Some(Bytes::from_static(b"three"))));
        assert_eq!(requests.next().await, Ok(Some(Bytes::from_static(b"four"))));
        assert_eq!(requests.next().await, Ok(None));
    }

    #[tokio::test]
    async fn each_request_is_inflated_within_the_limit() {
        let (tx, body) = body(4);
        let mut requests = Requests::new(body, Encoding::Gzip, 200);
        let text = vec![b'a'; 200];
        let gz = framing::frame(&text, Encoding::Gzip);
        assert_eq!(gz[0], 1, "compressed");
        chunk(&tx, gz.to_vec()).await;
        chunk(&tx, gz.to_vec()).await;
        chunk(&tx, framing::frame(&[b'a'; 201], Encoding::Gzip).to_vec()).await;
        for _ in 0..2 {
            assert_eq!(requests.next().await, Ok(Some(Bytes::from(text.clone()))));
        }
        let refused = requests.next().await.unwrap_err();
        assert_eq!(refused.code, Code::ResourceExhausted, "{refused}");
        assert!(refused.message.contains("inflates (gzip)"), "{refused}");
    }

    #[tokio::test]
    async fn a_request_stream_cut_short_is_refused() {
        let (tx, body) = body(4);
        let mut requests = Requests::new(body, Encoding::Identity, 16);
        chunk(&tx, framed(0, b"whole")).await;
        chunk(&tx, framed(0, b"cut")[..6].to_vec()).await;
        drop(tx);
        assert_eq!(requests.next().await, Ok(Some(Bytes::from_static(b"whole"))));
        assert_eq!(
            requests.next().await,
            Err(FramingError::Truncated { missing: 2 }.into())
        );
    }

    fn data(frame: http_body::Frame<Bytes>) -> Vec<u8> {
        frame.into_data().expect("a data frame").to_vec()
    }

    async fn next_frame(body: &mut AnswerBody) -> Option<http_body::Frame<Bytes>> {
        poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx))
            .await
            .map(|f| f.unwrap_or_else(|e| match e {}))
    }

    #[tokio::test]
    async fn answers_are_framed_then_end_with_trailers() {
        let (mut answers, answered) = answer(Encoding::Identity);
        let mut headers = Metadata::new();
        headers.append("x-head", b"h".to_vec()).unwrap();
        answers.headers(headers.clone());
        let room = answers.room().await.expect("room");
        answers.send(room, b"hi".to_vec());
        let mut trailers_md = Metadata::new();
        trailers_md.append("x-tail", b"t".to_vec()).unwrap();
        answers.end(Ok(trailers_md));
        let (got, mut body) = answered.head().await.expect("a head");
        assert_eq!(got, headers);
        let first = next_frame(&mut body).await.unwrap();
        assert_eq!(data(first), framed(0, b"hi"));
        let last = next_frame(&mut body).await.unwrap();
        let trailers = last.into_trailers().expect("trailers");
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers["x-tail"], "t");
        assert!(body.is_end_stream());
        assert!(next_frame(&mut body).await.is_none());
    }

    #[tokio::test]
    async fn a_failure_before_any_answer_is_the_whole_answer() {
        let (answers, answered) = answer(Encoding::Identity);
        answers.end(Err(Status::new(Code::NotFound, "nothing")));
        let Err(status) = answered.head().await else {
            panic!("a head")
        };
        assert_eq!(status, Status::new(Code::NotFound, "nothing"));
    }

    #[tokio::test]
    async fn a_failure_after_answers_is_in_the_trailers() {
        let (mut answers, answered) = answer(Encoding::Identity);
        let room = answers.room().await.expect("room");
        answers.send(room, b"partial".to_vec());
        answers.end(Err(Status::new(Code::Aborted, "midway")));
        let (headers, mut body) = answered.head().await.expect("a head");
        assert!(headers.is_empty());
        let first = next_frame(&mut body).await.unwrap();
        assert_eq!(data(first), framed(0, b"partial"));
        let last = next_frame(&mut body).await.unwrap();
        let trailers = last.into_trailers().expect("trailers");
        assert_eq!(trailers["grpc-status"], "10");
        assert_eq!(trailers["grpc-message"], "midway");
    }

    #[tokio::test]
    async fn an_unread_body_stops_the_answers() {
        let (mut answers, answered) = answer(Encoding::Identity);
        for _ in 0..QUEUED {
            let room = answers.room().await.expect("room");
            answers.send(room, b"m".to_vec());
        }
        // No room until the body is read.
        let mut next = std::pin::pin!(answers.room());
        assert!(poll_fn(|cx| Poll::Ready(next.as_mut().poll(cx).is_pending())).await);
        let (_, mut body) = answered.head().await.expect("a head");
        next_frame(&mut body).await.unwrap();
        assert!(next.await.is_some());
        // A body dropped (the client reset the stream) is the client gone.
        drop(body);
        answers.gone().await;
        assert!(answers.room().await.is_none());
    }

    #[tokio::test]
    async fn answers_dropped_without_an_end_are_internal() {
        let (mut answers, answered) = answer(Encoding::Identity);
        answers.headers(Metadata::new());
        drop(answers);
        let (_, mut body) = answered.head().await.expect("a head");
        let last = next_frame(&mut body).await.unwrap();
        assert_eq!(last.into_trailers().expect("trailers")["grpc-status"], "13");
    }
}
