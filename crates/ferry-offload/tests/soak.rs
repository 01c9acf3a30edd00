//! A soak of the gateway (issue 28, `ferry_testkit::soak`): the engine in front of the demo
//! host, two tonic clients calling `Echo` with a random `bytes` field at 80 % of the capacity
//! each measured first, every answer checked; the process's resident set (engine, host and
//! clients), the host's pool bytes in use (the engine exposes no pool gauge of its own; its
//! buffers show in the resident set) and the open descriptors flat within noise.

mod common;

use common::{Host, call_raw, channel, dir, engine, pb};
use ferry_testkit::load::{open_fds, rss_bytes};
use ferry_testkit::soak::{self, Bounds, Client, MakeClient};
use prost::Message as _;

const ECHO: &str = "/ferry.offload.demo.Demo/Echo";

#[test]
fn the_gateway_soaks_at_80_percent_of_capacity() {
    let dir = dir();
    let host = Host::start(&dir);
    let engine = engine(&host, 1);
    let addr = engine.local_addr();
    let client = |name: &'static str| -> MakeClient {
        (
            name,
            Box::new(move || -> Client {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                let ch = rt.block_on(channel(addr));
                Box::new(move |rng| {
                    let req = pb::Kinds {
                        f_bytes: rng.bytes_in(16, 2048),
                        ..Default::default()
                    };
                    let (body, _) = rt
                        .block_on(call_raw(&ch, ECHO, req.encode_to_vec(), &[], None))
                        .expect("served");
                    assert_eq!(pb::Kinds::decode(&body[..]).expect("decodes"), req, "the answer");
                })
            }),
        )
    };
    soak::run(
        "gateway",
        vec![client("a"), client("b")],
        || [rss_bytes() as f64, host.pool_bytes() as f64, open_fds() as f64],
        Bounds {
            rss: 16.0 * 1024.0 * 1024.0,
            pool: 256.0 * 1024.0,
            fds: 1.0,
        },
    );
}
