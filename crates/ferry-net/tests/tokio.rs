//! `AsyncConnection` on tokio: request/response round trips in gather, zerocopy and uring
//! modes, ending with `wait_idle().await`; values and pools are released.

mod common;

use common::{outstanding, pair, pool, within};
use ferry_buf::SharedBuf;
use ferry_net::{AsyncConnection, Config, Meta, Mode, Payload};
use ferry_wire::Context;
use ferry_wire::Message as _;
use ferry_wire::sample::Record;

const ROUNDS: u64 = 20;
const WINDOW: u64 = 8;

fn async_round_trip(mode: Mode) {
    within(&format!("AsyncConnection ({mode})"), move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (client_pool, server_pool) = (pool(), pool());
            let (client, server) = pair(
                &client_pool,
                &Config::with_mode(mode),
                &server_pool,
                &Config::with_mode(mode),
            );
            if client.mode() != mode {
                common::skip("async_round_trip", &format!("{mode} unavailable here"));
                return;
            }
            let mut client = AsyncConnection::new(client).unwrap();
            let mut server = AsyncConnection::new(server).unwrap();
            // The server echoes every frame back, its payload referenced (not copied).
            let echo = tokio::spawn(async move {
                for _ in 0..ROUNDS * WINDOW {
                    let f = server.recv().await.expect("server recv");
                    let parts = [f.payload().clone()];
                    server
                        .send_payload(
                            f.meta(),
                            Payload::Gather {
                                head: &[],
                                parts: &parts,
                            },
                        )
                        .await
                        .expect("echo");
                }
                server.flush().await.expect("server flush");
                server.wait_idle().await.expect("server wait_idle");
                let stats = server.stats();
                drop(server);
                assert_eq!(outstanding(&server_pool), 0, "server pool");
                stats
            });
            let ctx = Context::new(client_pool.clone());
            let values: Vec<SharedBuf> = (0..4u8)
                .map(|i| client_pool.copy_from(&vec![i + 1; 8000]).unwrap())
                .collect();
            for round in 0..ROUNDS {
                for k in 0..WINDOW {
                    let id = round * WINDOW + k;
                    let mut rec = Record::new(&ctx);
                    rec.set_key(&b"async"[..]);
                    for v in &values[..(id % 4) as usize + 1] {
                        rec.append_field(&v[..]);
                    }
                    client.send(Meta::new(6, id), &rec).await.expect("send");
                }
                client.flush().await.expect("flush");
                for k in 0..WINDOW {
                    let id = round * WINDOW + k;
                    let f = client.recv().await.expect("client recv");
                    assert_eq!(f.meta().request_id, id, "in order");
                    let view = Record::decode_shared(f.payload()).expect("echo decodes");
                    assert_eq!(view.key(), b"async");
                    assert_eq!(view.fields().len(), (id % 4) as usize + 1);
                    for (got, want) in view.fields().iter().zip(&values) {
                        assert!(got == &want[..]);
                    }
                }
            }
            client.wait_idle().await.expect("client wait_idle");
            let server_stats = echo.await.unwrap();
            let stats = client.stats();
            eprintln!(
                "{mode}: client {:?}\n{mode}: server {:?}",
                stats.send, server_stats.send
            );
            for v in &values {
                assert_eq!(v.ref_count(), 1, "{mode}: values released");
            }
            let conn = client.into_inner();
            drop(conn);
            assert_eq!(outstanding(&client_pool), values.len());
            drop(values);
            assert_eq!(outstanding(&client_pool), 0);
        });
    });
}

#[test]
fn async_round_trip_gather() {
    async_round_trip(Mode::Gather);
}

#[test]
fn async_round_trip_zerocopy() {
    async_round_trip(Mode::ZeroCopy);
}

#[test]
fn async_round_trip_uring() {
    async_round_trip(Mode::Uring);
}
