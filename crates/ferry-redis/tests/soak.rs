//! A soak of `ferry redis` (issue 28, `ferry_testkit::soak`): two clients, each a `SET` of a
//! random value under one of 64 keys and a `GET` of it, at 80 % of the capacity each measured
//! first; the process's resident set, the server's pool bytes in use and the open descriptors
//! flat within noise over the run. The keys bound the dataset, so any growth is a leak.

mod common;

use common::{cmd, config, connect, start};
use ferry_redis::resp::client::Reply;
use ferry_testkit::load::{open_fds, rss_bytes};
use ferry_testkit::soak::{self, Bounds, Client, MakeClient};

#[test]
fn ferry_redis_soaks_at_80_percent_of_capacity() {
    let server = start(config());
    let client = |name: &'static str| -> MakeClient {
        let addr = server.addr();
        (
            name,
            Box::new(move || -> Client {
                let mut c = connect(addr);
                let mut i = 0u64;
                Box::new(move |rng| {
                    let key = format!("{name}-{}", i % 64);
                    let value = rng.bytes_in(16, 2048);
                    assert_eq!(
                        cmd(&mut c, &[b"SET", key.as_bytes(), &value]),
                        Reply::Simple("OK".into())
                    );
                    assert_eq!(
                        cmd(&mut c, &[b"GET", key.as_bytes()]),
                        Reply::Bulk(value),
                        "{key}"
                    );
                    i += 1;
                })
            }),
        )
    };
    let pool = server.pool().clone();
    soak::run(
        "redis",
        vec![client("a"), client("b")],
        || {
            let pool = pool.stats().bytes_outstanding() as f64;
            [rss_bytes() as f64, pool, open_fds() as f64]
        },
        Bounds {
            rss: 16.0 * 1024.0 * 1024.0,
            pool: 256.0 * 1024.0,
            fds: 1.0,
        },
    );
}
