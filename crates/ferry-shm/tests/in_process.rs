//! Two connections on two threads of one process: request/response round trips whose large
//! field is referenced in shared memory, never copied, and released once acknowledged.
use ferry_wire::Message as _;
use std::thread;

use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_testkit::shared_pool as pool;
use ferry_transport::Meta;
use ferry_wire::sample::Record;
use ferry_wire::{Context, Limits};

#[test]
fn ping_pong() {
    let path = std::env::temp_dir().join(format!("ferry-shm-test-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let server = thread::spawn(move || {
        let pool = pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        for i in 0..1000u64 {
            let f = conn.recv().unwrap();
            assert_eq!(f.meta().request_id, i);
            let view = Record::decode_at(
                f.region(),
                f.offset(),
                &Limits {
                    max_message_len: 1 << 30,
                    ..Limits::default()
                },
            )
            .unwrap();
            let n = view.fields().len();
            let key = view.key().to_vec();
            drop(f);
            let ctx = Context::new(conn.pool().clone());
            let mut r = Record::new(&ctx);
            r.set_key(&key[..]);
            conn.send(Meta::new(1, i), &r).unwrap();
            assert_eq!(n, 2);
        }
        conn.wait_idle().unwrap();
        let stats = conn.stats();
        drop(conn);
        assert_eq!(pool.stats().buffers_outstanding(), 0, "server leaked");
        stats
    });
    let pool = pool();
    let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    let big = pool.copy_from(&[7u8; 4096]).unwrap();
    let ctx = Context::new(pool.clone());
    for i in 0..1000u64 {
        let key = i.to_le_bytes();
        let mut r = Record::new(&ctx);
        r.set_key(&key[..]);
        r.append_field(&big[..]);
        r.append_field(&[1u8, 2, 3][..]);
        conn.send(Meta::new(1, i), &r).unwrap();
        conn.flush().unwrap();
        let f = conn.recv().unwrap();
        let view = f
            .view(
                &ferry_wire::sample::RECORD,
                &Limits {
                    max_message_len: 1 << 30,
                    ..Limits::default()
                },
            )
            .unwrap();
        assert_eq!(view.present_fields().count(), 1, "the response has only its key");
        assert_eq!(
            Record::decode_at(
                f.region(),
                f.offset(),
                &Limits {
                    max_message_len: 1 << 30,
                    ..Limits::default()
                }
            )
            .unwrap()
            .key(),
            &i.to_le_bytes()
        );
    }
    conn.wait_idle().unwrap();
    let (client, server) = (conn.stats(), server.join().unwrap());
    assert_eq!(client.bytes_referenced, 4096 * 1000, "{client:?}");
    assert_eq!(client.bytes_copied_in, 0);
    assert_eq!((client.messages_received, server.messages_received), (1000, 1000));
    assert_eq!(
        big.ref_count(),
        1,
        "every block acknowledged, every reference released"
    );
    drop(conn);
    drop(big);
    assert_eq!(pool.stats().buffers_outstanding(), 0, "client leaked");
}
