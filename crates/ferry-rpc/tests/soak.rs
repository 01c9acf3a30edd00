//! A soak of the event-loop server (issue 28, `ferry_testkit::soak`): one client over TCP and
//! one over shared memory, raw echoes of random payloads, at 80 % of the capacity each
//! measured first; the process's resident set, the server's pool bytes in use and the open
//! descriptors flat within noise over the run.

mod common;

use common::{RAW, Scratch, TestService};
use ferry_rpc::Channel;
use ferry_testkit::load::{open_fds, rss_bytes};
use ferry_testkit::soak::{self, Bounds, Client, MakeClient};
use ferry_transport::{Payload, Received};

/// Growth over the window under which a trend is too small to matter: one byte kept per
/// call is already past the pool's bound, one descriptor per call past the descriptors'.
const BOUNDS: Bounds = Bounds {
    rss: 16.0 * 1024.0 * 1024.0,
    pool: 256.0 * 1024.0,
    fds: 1.0,
};

/// A channel to `addr` whose every call is an echo of a random payload, its reply checked.
fn client(name: &'static str, addr: String) -> MakeClient {
    (
        name,
        Box::new(move || -> Client {
            let ch = Channel::connect(&addr).expect("connect");
            Box::new(move |rng| {
                let body = rng.bytes_in(16, 2048);
                let r = ch.call_payload(RAW, Payload::Bytes(&body)).expect("served");
                assert_eq!(r.frame().bytes(), Some(&body[..]), "the reply");
            })
        }),
    )
}

#[test]
fn the_rpc_server_soaks_at_80_percent_of_capacity() {
    let scratch = Scratch::new("soak");
    let server = common::serve(
        TestService::default(),
        &scratch,
        1,
        ferry_rpc::LoopConfig::default(),
    );
    let addrs: Vec<String> = server.addrs().iter().map(ToString::to_string).collect();
    let clients = vec![client("tcp", addrs[0].clone()), client("shm", addrs[1].clone())];
    soak::run(
        "rpc",
        clients,
        || {
            [
                rss_bytes() as f64,
                server.services().metrics().pool_bytes() as f64,
                open_fds() as f64,
            ]
        },
        BOUNDS,
    );
    server.shutdown(std::time::Duration::from_secs(1));
}
