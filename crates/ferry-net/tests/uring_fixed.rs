//! io_uring mode sends a batch that is one staging range with `SEND_ZC` from the registered
//! pool region, and a batch with referenced values with `SENDMSG_ZC`.

mod common;

use ferry_wire::Message as _;
use std::net::TcpListener;
use std::thread;

use ferry_buf::{Pool, PoolConfig};
use ferry_net::{Config, Connection, Meta, Mode, probe};
use ferry_wire::Context;
use ferry_wire::sample::Record;

fn exchange(small: bool) -> ferry_net::SendStats {
    let pool = Pool::new(PoolConfig {
        max_bytes: 256 << 20,
        ..PoolConfig::default()
    })
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server_pool = pool.clone();
    let server = thread::spawn(move || {
        let mut conn =
            Connection::new(listener.accept().unwrap().0, &server_pool, &Config::default()).unwrap();
        for i in 0..500u64 {
            let frame = conn.recv().unwrap();
            assert_eq!(frame.meta().request_id, i);
            let view = Record::decode_shared(frame.payload()).unwrap();
            assert!(view.fields().iter().all(|f| f.iter().all(|&b| b == i as u8)));
        }
    });
    let mut conn = Connection::connect(addr, &pool, &Config::with_mode(Mode::Uring)).unwrap();
    assert_eq!(conn.mode(), Mode::Uring);
    let ctx = Context::new(pool.clone());
    for i in 0..500u64 {
        let value = pool
            .copy_from(&vec![i as u8; if small { 100 } else { 4096 }])
            .unwrap();
        let mut rec = Record::new(&ctx);
        rec.set_key(&b"k"[..]);
        rec.append_field(&value[..]);
        conn.send(Meta::new(1, i), &rec).unwrap();
    }
    conn.sender().wait_idle().unwrap();
    server.join().unwrap();
    let stats = conn.stats().send;
    drop(conn);
    assert_eq!(pool.stats().buffers_outstanding(), 0);
    stats
}

#[test]
fn registered_buffers_for_contiguous_batches() {
    if let Err(why) = &probe::features().send_zc {
        return common::skip(
            "registered_buffers_for_contiguous_batches",
            &format!("io_uring SEND_ZC unavailable: {why}"),
        );
    }
    let copied = exchange(true);
    assert_eq!(copied.queue.zero_copy_values_referenced, 0);
    assert_eq!(copied.fixed_buffer_sends, copied.send_calls, "{copied:?}");
    assert_eq!(copied.completions.completed, copied.send_calls);
    let gathered = exchange(false);
    assert_eq!(gathered.queue.zero_copy_values_copied, 0);
    assert_eq!(gathered.fixed_buffer_sends, 0, "{gathered:?}");
}
