//! One thread serves a TCP connection and a shared-memory connection at once, by readiness,
//! through the transport interface alone (`ferry::transport::Transport`): it polls both
//! connections' descriptors, drains each with `try_recv`, and echoes every record back.
//!
//! Two client threads (one per transport) send `N` records each (default 1000; pass another
//! count as the first argument), one at a time, and check every echo. The program exits 0
//! when both clients got all their echoes, and fails otherwise.
//!
//! ```text
//! cargo run --example multiplex -- 5000
//! ```

use ferry::{Message as _, MessageView as _};
use std::error::Error;
use std::net::TcpListener;
use std::thread;

use ferry::net::{Config, Connection};
use ferry::sample::{RECORD, Record};
use ferry::shm::{ShmConfig, ShmConnection, ShmListener};
use ferry::transport::{Meta, Received, Transport, TransportError};
use ferry::{Context, Limits, Pool, PoolConfig};
use rustix::event::{PollFd, PollFlags, poll};

type BoxError = Box<dyn Error + Send + Sync>;

/// Kind of the echoed records.
const ECHO: u16 = 7;

fn main() -> Result<(), BoxError> {
    let n: u64 = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 1000,
    };

    // The TCP pair.
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let tcp_client = thread::spawn(move || -> Result<(), BoxError> {
        let pool = pool()?;
        let mut conn = Connection::connect(addr, &pool, &tcp_config())?;
        call(&mut conn, &pool, n)
    });
    let server_pool = pool()?;
    let mut tcp = Connection::new(listener.accept()?.0, &server_pool, &tcp_config())?;

    // The shared-memory pair.
    let path = std::env::temp_dir().join(format!("ferry-multiplex-{}", std::process::id()));
    let listener = ShmListener::bind(&path)?;
    let shm_client = thread::spawn(move || -> Result<(), BoxError> {
        let pool = pool()?;
        let mut conn = ShmConnection::connect(&path, &pool, &ShmConfig::default())?;
        call(&mut conn, &pool, n)
    });
    let mut shm = listener.accept(&server_pool, &ShmConfig::default())?;

    // The event loop: one thread, both connections, until both clients have closed.
    let ctx = Context::new(server_pool.clone());
    let (mut tcp_echoed, mut shm_echoed) = (0, 0);
    let (mut tcp_open, mut shm_open) = (true, true);
    while tcp_open || shm_open {
        // Drain both before waiting: `try_recv` returning `None` is what arms readiness.
        if tcp_open {
            tcp_open = echo(&mut tcp, &ctx, &mut tcp_echoed)?;
        }
        if shm_open {
            shm_open = echo(&mut shm, &ctx, &mut shm_echoed)?;
        }
        let mut fds = Vec::with_capacity(2);
        if tcp_open {
            fds.push(PollFd::new(&tcp, PollFlags::IN));
        }
        if shm_open {
            fds.push(PollFd::new(&shm, PollFlags::IN));
        }
        if !fds.is_empty() {
            poll(&mut fds, None)?;
        }
    }
    tcp_client.join().map_err(|_| "the TCP client panicked")??;
    shm_client
        .join()
        .map_err(|_| "the shared-memory client panicked")??;
    if (tcp_echoed, shm_echoed) != (n, n) {
        return Err(
            format!("echoed {tcp_echoed} over TCP and {shm_echoed} over shared memory, not {n}").into(),
        );
    }
    println!("echoed {tcp_echoed} records over TCP and {shm_echoed} over shared memory on one thread");
    Ok(())
}

/// Echoes every record that has arrived, counting them in `echoed`; returns whether the
/// connection is still open (its client closes it when done).
fn echo<T: Transport>(conn: &mut T, ctx: &Context, echoed: &mut u64) -> Result<bool, BoxError> {
    let before = *echoed;
    loop {
        let frame = match conn.try_recv() {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(TransportError::Closed) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        let view = frame.view(&RECORD, &Limits::default())?;
        let request = Record::view_of(view).ok_or("not a Record view")?;
        let reply = request.to_message(ctx)?;
        conn.send(frame.meta(), &reply)?;
        *echoed += 1;
    }
    if *echoed > before {
        conn.flush()?;
    }
    Ok(true)
}

/// Sends `n` records, one at a time, and checks each echo.
fn call<T: Transport>(conn: &mut T, pool: &Pool, n: u64) -> Result<(), BoxError> {
    let ctx = Context::new(pool.clone());
    // A value in the pool: referenced, not copied, on both transports.
    let value = pool.copy_from(&[9u8; 4096])?;
    for i in 0..n {
        let key = i.to_le_bytes();
        let mut rec = Record::new(&ctx);
        rec.set_key(&key[..]);
        rec.append_field(&value[..]);
        conn.send(Meta::new(ECHO, i), &rec)?;
        conn.flush()?;
        let frame = conn.recv()?;
        if frame.meta() != Meta::new(ECHO, i) {
            return Err(format!("echo {i}: metadata {:?}", frame.meta()).into());
        }
        let echo = Record::view_of(frame.view(&RECORD, &Limits::default())?).ok_or("not a Record view")?;
        if echo.key() != key || echo.fields().get(0) != Some(&value[..]) {
            return Err(format!("echo {i}: the record differs").into());
        }
    }
    Ok(())
}

/// A pool both transports can send from (shared: the peer of a shared-memory connection maps it).
fn pool() -> Result<Pool, TransportError> {
    Ok(Pool::new(PoolConfig {
        shared: true,
        max_bytes: 64 << 20,
        region_size: 2 << 20,
        mlock: false,
        ..PoolConfig::default()
    })?)
}

/// TCP frames must fit the pool's largest buffer (2 MiB here).
fn tcp_config() -> Config {
    Config {
        max_frame_len: (2 << 20) - ferry::net::frame::HEADER_LEN,
        ..Config::default()
    }
}
