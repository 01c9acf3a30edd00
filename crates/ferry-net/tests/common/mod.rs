//! Helpers shared by ferry-net's integration tests: pools, socket pairs, a seeded RNG, a
//! deadlock guard, `poll(2)`, child processes (the test binary re-executed in a role) and
//! network namespaces.
//!
//! Every test binary compiles this module and uses a part of it.
#![allow(dead_code)]

pub mod records;

use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::process::Command;
use std::thread;
use std::time::Instant;

use ferry_buf::{Pool, PoolConfig};
use ferry_net::{Config, Connection};

/// The environment variable that tells a re-executed test binary which role to play.
pub const ROLE_VAR: &str = "FERRY_NET_TEST_ROLE";

/// A pool like the default one (8 MiB regions) with a smaller address reservation.
pub fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 8 << 20,
        max_bytes: 512 << 20,
        ..PoolConfig::default()
    })
    .expect("pool")
}

/// A connected loopback pair: (client, server), each with its own pool and config.
pub fn pair(
    client_pool: &Pool,
    client_config: &Config,
    server_pool: &Pool,
    server_config: &Config,
) -> (Connection, Connection) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let client = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    (
        Connection::new(client, client_pool, client_config).expect("client connection"),
        Connection::new(server, server_pool, server_config).expect("server connection"),
    )
}

/// A raw client stream and the server-side connection it talks to.
pub fn raw_pair(server_pool: &Pool, server_config: &Config) -> (TcpStream, Connection) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let client = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    client.set_nodelay(true).unwrap();
    let (server, _) = listener.accept().expect("accept");
    (
        client,
        Connection::new(server, server_pool, server_config).expect("server connection"),
    )
}

/// Buffers a pool has handed out and not got back.
pub fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

// Each test binary uses a part of these (as of the rest of this module).
#[allow(unused_imports)]
pub use ferry_testkit::{ChildProc, DEADLINE, Rng, within};

/// The seed for randomized tests: `FERRY_NET_SEED` if set (to reproduce a failure), else
/// `default`.
pub fn seed(default: u64) -> u64 {
    ferry_testkit::seed("FERRY_NET_SEED", default)
}

/// `poll(2)` on `fds` with the deadline as timeout; panics (deadlock guard) if nothing becomes
/// ready in time. Returns the number of ready descriptors.
#[allow(unsafe_code)]
pub fn poll(fds: &mut [libc::pollfd]) -> usize {
    loop {
        // SAFETY: `fds` is an exclusively borrowed, initialized array of `pollfd` whose length
        // is passed with it; the kernel writes only `revents` inside it.
        let n = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                DEADLINE.as_millis() as i32,
            )
        };
        if n > 0 {
            return n as usize;
        }
        if n == 0 {
            panic!("deadlock guard: no descriptor became ready within {DEADLINE:?}");
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "poll: {e}");
    }
}

/// A `pollfd` for `fd` and `events`.
pub fn pollfd(fd: &impl AsFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    }
}

/// Waits until at least `n` bytes are queued for reading on `sock` (peeked, not consumed), so
/// that the next read sees them all at once. A deadlock guard bounds the wait.
pub fn wait_queued(sock: &impl AsFd, n: usize) {
    let stream = TcpStream::from(sock.as_fd().try_clone_to_owned().expect("dup"));
    let mut buf = vec![0; n];
    let start = Instant::now();
    loop {
        match stream.peek(&mut buf) {
            Ok(k) if k >= n => return,
            Ok(_) => thread::yield_now(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut fds = [pollfd(&stream, libc::POLLIN)];
                poll(&mut fds);
            }
            Err(e) => panic!("peek: {e}"),
        }
        assert!(
            start.elapsed() < DEADLINE,
            "deadlock guard: {n} bytes never arrived"
        );
    }
}

/// This test binary, re-executed to run only `test` in the role `role` (see [`ROLE_VAR`]),
/// optionally inside network namespace `netns` (through `ip netns exec`).
pub fn self_command(test: &str, role: &str, netns: Option<&str>) -> Command {
    let launcher = match netns {
        Some(ns) => vec!["ip", "netns", "exec", ns],
        None => Vec::new(),
    };
    ferry_testkit::self_command(&launcher, test, ROLE_VAR, role)
}

/// The role this process was started in, if it is a re-executed child.
pub fn role() -> Option<String> {
    std::env::var(ROLE_VAR).ok()
}

/// Namespaces for the tests that cross a veth pair (ferry-testkit's, shared with other crates).
#[allow(unused_imports)] // each test binary uses its own subset
pub use ferry_testkit::netns::{Netns, ip};

/// A skip with its reason, or a failure under `FERRY_REQUIRE_KERNEL_FEATURES` (CI).
#[allow(unused_imports)] // each test binary uses its own subset
pub use ferry_testkit::tools::skip;
