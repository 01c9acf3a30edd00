//! Regression (issue 28, the slowloris row of the hostile-load suite): a peer that trickles a
//! frame a byte at a time made its socket poll readable, and the event loop serving it take a
//! turn, once per byte. The receiver now sets the socket's low-water mark (`SO_RCVLOWAT`) to
//! the bytes its frame in progress still needs, so the socket polls readable once they have
//! all come (or the peer has closed), and at once again when a frame is whole. Counted in
//! bytes, not timed: after all but one of a frame's missing bytes are queued, the socket is
//! not readable.

mod common;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::time::Instant;

use common::{DEADLINE, pollfd, pool, raw_pair};
use ferry_net::{Config, Connection, FrameHeader, Meta, TransportError};

/// Whether `fd` polls readable now (no wait).
#[allow(unsafe_code)]
fn readable(fd: &impl AsFd) -> bool {
    let mut fds = [pollfd(fd, libc::POLLIN)];
    // SAFETY: `fds` is an exclusively borrowed, initialized one-element array of `pollfd`;
    // the kernel writes only its `revents`.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    fds[0].revents & libc::POLLIN != 0
}

/// Sends `bytes` and waits until the server's socket holds `queued` bytes in all (peeking,
/// not polling: a poll would wait for the low-water mark).
fn trickle(peer: &mut TcpStream, server: &Connection, bytes: &[u8], queued: usize) {
    peer.write_all(bytes).expect("write");
    let stream = TcpStream::from(server.as_fd().try_clone_to_owned().expect("dup"));
    let mut buf = vec![0; queued];
    let start = Instant::now();
    while !matches!(stream.peek(&mut buf), Ok(n) if n >= queued) {
        assert!(
            start.elapsed() < DEADLINE,
            "deadlock guard: {queued} bytes never came"
        );
        std::thread::yield_now();
    }
}

/// The server's connection reads what is queued; no frame is whole yet.
fn no_frame(server: &mut Connection) {
    assert!(server.try_recv().expect("try_recv").is_none(), "no frame yet");
}

#[test]
fn a_trickled_frame_makes_its_socket_readable_only_when_it_can_be_whole() {
    let pool = pool();
    let (mut peer, mut server) = raw_pair(&pool, &Config::default());
    server.set_nonblocking(true);
    let payload = [7u8; 100];
    let mut frame = FrameHeader {
        meta: Meta::new(1, 9),
        len: payload.len() as u32,
    }
    .to_bytes()
    .to_vec();
    frame.extend_from_slice(&payload);

    // One byte of the header: readable (nothing is in progress yet), read.
    trickle(&mut peer, &server, &frame[..1], 1);
    assert!(readable(&server), "the first byte");
    no_frame(&mut server);
    // 14 of the header's 15 missing bytes: not readable; the 15th: readable.
    trickle(&mut peer, &server, &frame[1..15], 14);
    assert!(
        !readable(&server),
        "14 of the header's 15 missing bytes woke the reader"
    );
    trickle(&mut peer, &server, &frame[15..16], 15);
    assert!(readable(&server), "the header is whole");
    no_frame(&mut server);
    // 99 of the payload's 100: not readable; the last: readable, and the frame is whole.
    trickle(&mut peer, &server, &frame[16..115], 99);
    assert!(
        !readable(&server),
        "99 of the payload's 100 bytes woke the reader"
    );
    trickle(&mut peer, &server, &frame[115..], 100);
    assert!(readable(&server), "the payload is whole");
    let got = server.try_recv().expect("try_recv").expect("the frame");
    assert_eq!(got.meta(), Meta::new(1, 9));
    assert_eq!(&got.payload()[..], &payload[..]);

    // Between frames the mark is back to one byte.
    no_frame(&mut server);
    trickle(&mut peer, &server, &frame[..3], 3);
    assert!(readable(&server), "the next frame's first bytes");
    no_frame(&mut server);
    // A peer that closes mid-frame is reported at once, whatever is missing.
    peer.shutdown(Shutdown::Write).expect("shutdown");
    common::poll(&mut [pollfd(&server, libc::POLLIN)]);
    match server.try_recv() {
        Err(TransportError::Truncated { received, expected }) => {
            assert_eq!((received, expected), (3, 16));
        }
        other => panic!("a frame cut by the peer's close: {other:?}"),
    }
}
