//! Helpers shared by ferry-shm's integration tests: shared pools, socket paths, a seeded RNG,
//! deterministic payloads, a deadlock guard, connection pairs on two threads, and peer
//! processes (the test binary re-executed in a role).
//!
//! Every test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use ferry_buf::Pool;
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_transport::TransportError;
use ferry_wire::Limits;

/// The environment variable that tells a re-executed test binary which role to play.
pub const ROLE_VAR: &str = "FERRY_SHM_TEST_ROLE";

/// Buffers a pool has handed out and not got back.
pub fn outstanding(pool: &Pool) -> usize {
    pool.stats().buffers_outstanding()
}

/// Decoding limits that admit a whole shared region (views are region-relative).
pub fn limits() -> Limits {
    Limits {
        max_message_len: 1 << 30,
        ..Limits::default()
    }
}

/// A socket path unique to this process and `name`.
pub fn socket_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferry-shm-{}-{name}.sock", std::process::id()))
}

/// Whether `e` says the peer went away: a clean close or a reset connection.
pub fn peer_gone(e: &TransportError) -> bool {
    match e {
        TransportError::Closed => true,
        TransportError::Io { source, .. } => source.kind() == std::io::ErrorKind::ConnectionReset,
        _ => false,
    }
}

// Each test binary uses a part of these (as of the rest of this module). `shared_pool`:
// memfd-backed, what the transport sends from; `pool`: private, so the transport must copy
// the values in it.
#[allow(unused_imports)]
pub use ferry_testkit::{ChildProc, DEADLINE, Guarded, Rng, pool, shared_pool, spawn, within};

/// The seed for randomized tests: `FERRY_SHM_SEED` if set (to reproduce a failure), else
/// `default`.
pub fn seed(default: u64) -> u64 {
    ferry_testkit::seed("FERRY_SHM_SEED", default)
}

/// `len` bytes determined by `tag`: what a receiver regenerates to check a value.
pub fn pattern(len: usize, tag: u64) -> Vec<u8> {
    Rng::new(tag ^ 0x5eed_0000_0000_0000).bytes(len)
}

/// Connects two sides on two threads (each with its own shared pool; `b` accepts, `a`
/// connects) and runs `a` and `b` on them; once each returns (its connection, frames and
/// values dropped), checks that its pool has every buffer back. Fails with both sides'
/// messages if either panics, and fails (deadlock guard) if either does not finish within
/// [`DEADLINE`].
pub fn run_pair<A: Send + 'static, B: Send + 'static>(
    name: &str,
    config_a: ShmConfig,
    config_b: ShmConfig,
    a: impl FnOnce(ShmConnection) -> A + Send + 'static,
    b: impl FnOnce(ShmConnection) -> B + Send + 'static,
) -> (A, B) {
    let listener = ShmListener::bind(socket_path(name)).expect("bind");
    let path = listener.path().to_path_buf();
    let side_b = spawn(&format!("{name}: side B"), move || {
        let pool = shared_pool();
        let base = outstanding(&pool);
        let conn = listener.accept(&pool, &config_b).expect("accept");
        let r = b(conn);
        assert_eq!(outstanding(&pool), base, "side B: pool buffers leaked");
        r
    });
    let side_a = spawn(&format!("{name}: side A"), move || {
        let pool = shared_pool();
        let base = outstanding(&pool);
        let conn = ShmConnection::connect(&path, &pool, &config_a).expect("connect");
        let r = a(conn);
        assert_eq!(outstanding(&pool), base, "side A: pool buffers leaked");
        r
    });
    let deadline = Instant::now() + DEADLINE;
    match (side_a.result_by(deadline), side_b.result_by(deadline)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => panic!(
            "{name}:\n  A: {}\n  B: {}",
            a.err().unwrap_or_else(|| "ok".into()),
            b.err().unwrap_or_else(|| "ok".into())
        ),
    }
}

/// The role this process was started in, if it is a re-executed peer.
pub fn role() -> Option<String> {
    std::env::var(ROLE_VAR).ok()
}

/// An environment variable the parent passed to a peer.
pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("peer started without {name}"))
}

/// This test binary, re-executed to run only `test` in role `role`.
pub fn self_command(test: &str, role: &str) -> Command {
    ferry_testkit::self_command(&[], test, ROLE_VAR, role)
}

/// Blocks until the parent closes our stdin (or kills us): how a peer waits to be killed.
pub fn wait_for_parent() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
