//! Every mode moves Ferry messages with zero-copy fields over loopback, byte for byte.

use std::net::TcpListener;
use std::thread;

use ferry::sample::Record;
use ferry_buf::{Pool, PoolConfig};
use ferry_net::{Config, Connection, Meta, Mode};
use ferry_wire::Context;

fn pool() -> Pool {
    Pool::new(PoolConfig {
        region_size: 8 << 20,
        max_bytes: 512 << 20,
        ..PoolConfig::default()
    })
    .unwrap()
}

#[test]
fn every_mode_round_trips() {
    for mode in Mode::ALL {
        let pool = pool();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server_pool = pool.clone();
        let server = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut conn = Connection::new(stream, &server_pool, &Config::default()).unwrap();
            let mut got = Vec::new();
            for _ in 0..200 {
                let frame = conn.recv().unwrap();
                let view = Record::decode_shared(&frame.payload).unwrap();
                let fields: Vec<Vec<u8>> = view.fields().iter().map(<[u8]>::to_vec).collect();
                got.push((frame.header.meta.request_id, view.key().to_vec(), fields));
            }
            got
        });
        let mut conn = Connection::connect(addr, &pool, &Config::with_mode(mode)).unwrap();
        let ctx = Context::new(pool.clone());
        let values: Vec<_> = (0..4u8)
            .map(|i| pool.copy_from(&vec![i; 3000 + i as usize]).unwrap())
            .collect();
        let mut expect = Vec::new();
        for id in 0..200u64 {
            let mut rec = Record::new(&ctx);
            rec.set_key(&b"key"[..]);
            for v in &values[..(id % 4) as usize + 1] {
                rec.append_field(&v[..]);
            }
            conn.send(Meta::new(7, id), &rec).unwrap();
            let fields = values[..(id % 4) as usize + 1]
                .iter()
                .map(|v| v.to_vec())
                .collect();
            expect.push((id, b"key".to_vec(), fields));
        }
        conn.sender().wait_idle().unwrap();
        let got = server.join().unwrap();
        assert_eq!(got, expect, "mode {mode}");
        let stats = conn.stats().send;
        eprintln!("{mode} ({}): {stats:?}", conn.mode());
        if conn.mode() != Mode::Copy && conn.mode() != Mode::Auto {
            assert_eq!(stats.queue.zero_copy_values_copied, 0);
        }
        drop(conn);
        drop(values);
        assert_eq!(pool.stats().buffers_outstanding(), 0, "mode {mode}");
    }
}
