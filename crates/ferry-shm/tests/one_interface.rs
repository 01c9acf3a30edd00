//! One generic echo client and server, written against `ferry_net::Transport`, run unchanged
//! over TCP (`ferry_net::Connection`) and shared memory (`ShmConnection`).

use std::net::TcpListener;
use std::thread;

use ferry::sample::{RECORD, Record};
use ferry_buf::{Pool, PoolConfig};
use ferry_net::{Config, Connection, Meta, Received, Transport};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};
use ferry_wire::{Context, Limits};

const ROUNDS: u64 = 200;

fn limits() -> Limits {
    Limits {
        max_message_len: 1 << 30,
        ..Limits::default()
    }
}

/// Answers each record with the same key and its number of fields.
fn serve<T: Transport>(conn: &mut T, pool: &Pool) {
    let ctx = Context::new(pool.clone());
    for _ in 0..ROUNDS {
        let frame = conn.recv().unwrap();
        let request = frame.view(&RECORD, &limits()).unwrap();
        let fields = [request.bytes_list(2).len() as u8];
        let mut reply = Record::new(&ctx);
        reply.set_key(&fields[..]);
        conn.send(frame.meta(), &reply).unwrap();
        drop(frame);
        conn.flush().unwrap();
    }
}

/// Sends records with a large pool-resident field and checks every answer.
fn call<T: Transport>(conn: &mut T, pool: &Pool) {
    let ctx = Context::new(pool.clone());
    let value = pool.copy_from(&[3u8; 8192]).unwrap();
    for i in 0..ROUNDS {
        let mut rec = Record::new(&ctx);
        rec.set_key(&b"key"[..]);
        for _ in 0..(i % 3) {
            rec.append_field(&value[..]);
        }
        conn.send(Meta::new(5, i), &rec).unwrap();
        conn.flush().unwrap();
        let frame = conn.recv().unwrap();
        assert_eq!(frame.meta(), Meta::new(5, i));
        let view = frame.view(&RECORD, &limits()).unwrap();
        assert_eq!(view.bytes(1), Some(&[(i % 3) as u8][..]));
    }
}

fn shared_pool() -> Pool {
    Pool::new(PoolConfig {
        shared: true,
        max_bytes: 64 << 20,
        region_size: 2 << 20,
        mlock: false,
        ..PoolConfig::default()
    })
    .unwrap()
}

/// Frames must fit the pool's largest buffer (2 MiB here).
fn tcp_config() -> Config {
    Config {
        max_frame_len: (2 << 20) - ferry_net::frame::HEADER_LEN,
        ..Config::default()
    }
}

#[test]
fn the_same_code_runs_over_tcp() {
    let pool = shared_pool();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = Connection::new(listener.accept().unwrap().0, &pool, &tcp_config()).unwrap();
        serve(&mut conn, &pool);
    });
    let mut conn = Connection::connect(addr, &pool, &tcp_config()).unwrap();
    call(&mut conn, &pool);
    server.join().unwrap();
}

#[test]
fn the_same_code_runs_over_shared_memory() {
    let path = std::env::temp_dir().join(format!("ferry-shm-one-interface-{}", std::process::id()));
    let listener = ShmListener::bind(&path).unwrap();
    let server = thread::spawn(move || {
        let pool = shared_pool();
        let mut conn = listener.accept(&pool, &ShmConfig::default()).unwrap();
        serve(&mut conn, &pool);
    });
    let pool = shared_pool();
    let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default()).unwrap();
    call(&mut conn, &pool);
    server.join().unwrap();
    assert_eq!(conn.stats().bytes_copied_in, 0);
    assert_eq!(
        conn.stats().bytes_referenced,
        8192 * (0..ROUNDS).map(|i| i % 3).sum::<u64>()
    );
}
