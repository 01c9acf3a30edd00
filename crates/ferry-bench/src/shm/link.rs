//! One run over a fresh connection: the pools, how each transport connects its two sides,
//! and the two pinned threads that drive them.

use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::Duration;

use ferry::Context;
use ferry::sample::Record;
use ferry::wire::Outgoing as _;
use ferry_buf::{Pool, PoolConfig, SharedBuf};
use ferry_net::{Config, Connection, Mode};
use ferry_shm::{ShmConfig, ShmConnection, ShmListener};

use super::client::client;
use super::endpoint::Endpoint;
use super::record::RunResult;
use super::server::serve;
use super::wire::{REQUEST_FILL, RESPONSE_FILL};
use super::{Notify, Spec};
use crate::BoxError;
use crate::harness::{self, joined};

/// The pools of the benchmark: shared (memfd) pools for the shm runs, ordinary ones for TCP;
/// a client's and a server's of each, as two processes would have.
pub struct Pools {
    pub shm: (Pool, Pool),
    pub tcp: (Pool, Pool),
}

impl Pools {
    pub fn new() -> Result<Pools, BoxError> {
        let shared = || {
            Pool::new(PoolConfig {
                shared: true,
                region_size: 2 << 20,
                max_bytes: 64 << 20,
                ..PoolConfig::default()
            })
        };
        let plain = || Pool::new(PoolConfig::default());
        Ok(Pools {
            shm: (shared()?, shared()?),
            tcp: (plain()?, plain()?),
        })
    }
}

/// A value of `payload` bytes of `fill` in `pool`.
pub fn value(pool: &Pool, payload: usize, fill: u8) -> Result<SharedBuf, BoxError> {
    Ok(pool.copy_from(&vec![fill; payload])?)
}

/// One step of setting up a connection (run once per run, so boxed).
type Step<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

/// How the two sides of a run get their ends of a fresh connection; the rest of a run is the
/// same for every transport.
pub struct Link<'a, T> {
    /// The server's end. It owns the listener: a server that fails before accepting drops it,
    /// which fails the client's connect instead of leaving it waiting.
    accept: Step<'a, Result<T, BoxError>>,
    /// The client's end.
    connect: Step<'a, Result<T, BoxError>>,
    /// Called when the client fails before it is connected: frees a server still waiting in
    /// `accept`.
    give_up: Step<'a, ()>,
}

/// Runs `server` and `client` on two threads pinned to `spec.cpus` (client, server), each on
/// its end of the connection `link` makes; returns (client's result, server's result).
pub fn on_two_cores<T: Endpoint, C: Send, S: Send>(
    spec: &Spec,
    link: Link<'_, T>,
    server: impl FnOnce(&mut T) -> Result<S, BoxError> + Send,
    client: impl FnOnce(&mut T) -> Result<C, BoxError> + Send,
) -> Result<(C, S), BoxError> {
    let Link {
        accept,
        connect,
        give_up,
    } = link;
    let (client, server) = thread::scope(|s| {
        let server = s.spawn(move || {
            harness::pin_current_thread(spec.cpus.1)?;
            server(&mut accept()?)
        });
        let client = s.spawn(move || {
            let connected = harness::pin_current_thread(spec.cpus.0)
                .map_err(BoxError::from)
                .and_then(|()| connect());
            match connected {
                Ok(mut conn) => client(&mut conn),
                Err(e) => {
                    give_up();
                    Err(e)
                }
            }
        });
        (client.join(), server.join())
    });
    Ok((joined("client", client)?, joined("server", server)?))
}

/// An shm link over a fresh socket path, with `config` on both sides.
pub fn shm_link(pools: &Pools, seq: u64, config: ShmConfig) -> Result<Link<'_, ShmConnection>, BoxError> {
    let path = std::env::temp_dir().join(format!("ferry-bench-shm-{}-{seq}", std::process::id()));
    let listener = ShmListener::bind(&path)?;
    let server_config = config.clone();
    let client_path = path.clone();
    Ok(Link {
        accept: Box::new(move || Ok(listener.accept(&pools.shm.1, &server_config)?)),
        connect: Box::new(move || Ok(ShmConnection::connect(&client_path, &pools.shm.0, &config)?)),
        // Unblock the server's accept (its handshake then fails).
        give_up: Box::new(move || {
            let _ = UnixStream::connect(&path);
        }),
    })
}

/// The shm configuration of `notify`: busy-poll and never sleep, or the default.
pub fn shm_config(notify: Notify) -> ShmConfig {
    match notify {
        Notify::Spin => ShmConfig {
            spin: Duration::MAX,
            never_sleep: true,
            ..ShmConfig::default()
        },
        _ => ShmConfig::default(),
    }
}

/// The TCP connections' settings: gather mode, the default batching.
pub fn tcp_config() -> Config {
    Config::with_mode(Mode::Gather)
}

/// A TCP link over a fresh loopback listener, with `congestion` control on both sides.
fn tcp_link<'a>(pools: &'a Pools, congestion: &'a str) -> Result<Link<'a, Connection>, BoxError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    Ok(Link {
        accept: Box::new(move || {
            let stream = harness::accept(&listener)?;
            let conn = Connection::new(stream, &pools.tcp.1, &tcp_config())?;
            // An error here is reported by the client, which sets the same option.
            let _ = conn.set_congestion(congestion);
            Ok(conn)
        }),
        connect: Box::new(move || {
            let conn = Connection::connect(addr, &pools.tcp.0, &tcp_config())?;
            conn.set_congestion(congestion)
                .map_err(|e| format!("setting {congestion} congestion control: {e}"))?;
            Ok(conn)
        }),
        // Nothing to do: `harness::accept` gives up by itself.
        give_up: Box::new(|| {}),
    })
}

/// One run over the fresh connection `link` makes; `pools` are the client's and the server's.
fn run_over<T: Endpoint>(
    spec: &Spec,
    pools: &(Pool, Pool),
    link: Link<'_, T>,
) -> Result<RunResult, BoxError> {
    let payload = spec.point.payload;
    let (cv, sv) = (
        value(&pools.0, payload, REQUEST_FILL)?,
        value(&pools.1, payload, RESPONSE_FILL)?,
    );
    let (c, s) = on_two_cores(
        spec,
        link,
        |conn| serve(conn, &pools.1, &sv, spec),
        |conn| client(conn, &pools.0, &cv, spec),
    )?;
    // The bytes of a request's header segment: what the CPU writes per request besides framing.
    let ctx = Context::new(pools.0.clone());
    let mut rec = Record::new(&ctx);
    rec.append_field(&cv[..]);
    Ok(RunResult {
        requests: c.requests,
        elapsed: c.elapsed,
        hist: c.hist,
        client_cpu: c.cpu,
        server_cpu: s.span.cpu,
        server_requests: s.span.served,
        window: c.window.plus(s.window),
        total: c.total.plus(s.total),
        head_bytes: rec.layout().head_len,
    })
}

/// One shm run: a fresh connection over a fresh socket path.
pub fn run_shm(spec: &Spec, pools: &Pools, seq: u64) -> Result<RunResult, BoxError> {
    let link = shm_link(pools, seq, shm_config(spec.point.notify))?;
    run_over(spec, &pools.shm, link)
}

/// One TCP run: a fresh loopback connection.
pub fn run_tcp(spec: &Spec, pools: &Pools, congestion: &str) -> Result<RunResult, BoxError> {
    run_over(spec, &pools.tcp, tcp_link(pools, congestion)?)
}
