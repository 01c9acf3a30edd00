//! What the tokio driver's tests share: a raw-payload `AsyncService` that counts what its
//! handlers do, an `AsyncServer` on a thread of its own, addresses for both transports, and
//! time bounds.

#![allow(dead_code)] // each test crate uses part of it

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferry_rpc::tokio::{AsyncCall, AsyncRequest, AsyncServer, AsyncService, AsyncServices, LocalBoxFuture};
use ferry_rpc::{Code, Encoded, LoopConfig, MethodInfo, Metrics, Mode, Shape, Status};
use ferry_transport::method_id;

/// Answers with the request's bytes.
pub const ECHO: u16 = method_id("/ferry.test.AsyncEcho/Echo");
/// Sleeps 30 s, then answers (no test waits that long: it is cancelled or expires).
pub const SLOW: u16 = method_id("/ferry.test.AsyncEcho/Slow");
/// Panics.
pub const PANIC: u16 = method_id("/ferry.test.AsyncEcho/Panic");
/// Sleeps as many milliseconds as its payload says (decimal text), then echoes.
pub const DELAY: u16 = method_id("/ferry.test.AsyncEcho/Delay");
/// Answers the caller's certificate identity (`AsyncCall::peer`), or `none`.
pub const WHOAMI: u16 = method_id("/ferry.test.AsyncEcho/WhoAmI");

/// What the `SLOW` and `DELAY` handlers did, seen from the test's thread.
#[derive(Debug, Default)]
pub struct Flags {
    /// Handlers started.
    pub started: AtomicUsize,
    /// Handler futures dropped before their end (aborted).
    pub dropped: AtomicUsize,
    /// Handlers that ran to their end.
    pub finished: AtomicUsize,
}

/// Counts a handler future dropped before it ended.
struct Aborted(Arc<Flags>, bool);

impl Drop for Aborted {
    fn drop(&mut self) {
        if self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The service: raw payloads in, raw payloads out.
pub struct Echo {
    pub flags: Arc<Flags>,
}

impl AsyncService for Echo {
    fn methods(&self) -> Vec<MethodInfo> {
        [
            "/ferry.test.AsyncEcho/Echo",
            "/ferry.test.AsyncEcho/Slow",
            "/ferry.test.AsyncEcho/Panic",
            "/ferry.test.AsyncEcho/Delay",
            "/ferry.test.AsyncEcho/WhoAmI",
        ]
        .into_iter()
        .map(|path| MethodInfo {
            path,
            id: method_id(path),
            request: None,
            mode: Mode::Foreground,
            shape: Shape::Unary,
        })
        .collect()
    }

    fn call(&self, call: AsyncCall, request: AsyncRequest<()>) -> LocalBoxFuture<Result<Encoded, Status>> {
        let flags = Arc::clone(&self.flags);
        Box::pin(async move {
            let bytes = request
                .bytes()
                .ok_or_else(|| Status::new(Code::InvalidArgument, "not a raw payload"))?;
            match call.method() {
                ECHO => Ok(Encoded::bytes(bytes)),
                SLOW | DELAY => {
                    flags.started.fetch_add(1, Ordering::SeqCst);
                    let mut guard = Aborted(Arc::clone(&flags), true);
                    let pause = match call.method() {
                        SLOW => 30_000,
                        _ => std::str::from_utf8(bytes)
                            .ok()
                            .and_then(|t| t.parse().ok())
                            .ok_or_else(|| Status::new(Code::InvalidArgument, "a delay in ms"))?,
                    };
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    guard.1 = false;
                    flags.finished.fetch_add(1, Ordering::SeqCst);
                    Ok(Encoded::bytes(bytes))
                }
                PANIC => panic!("boom"),
                WHOAMI => Ok(Encoded::bytes(
                    call.peer()
                        .map_or_else(|| "none".to_string(), |p| p.to_string())
                        .as_bytes(),
                )),
                m => Err(Status::new(Code::Unimplemented, format!("method {m}"))),
            }
        })
    }
}

/// Generates one test per transport from functions taking a [`Transport`]: `both!(a, b)`
/// makes `tcp::a`, `shm::a`, `tcp::b`, `shm::b`.
#[allow(unused_macros)] // not every test crate uses it
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod tcp {
            $(#[test] fn $name() { super::$name(super::Transport::Tcp) })*
        }
        mod shm {
            $(#[test] fn $name() { super::$name(super::Transport::Shm) })*
        }
    };
}

/// [`both!`], plus a `tls` module running each over `tls://` ([`Transport::Tls`]): for test
/// files whose channels carry [`tls::with_tls`]'s client settings.
#[allow(unused_macros)] // not every test crate uses it
macro_rules! every_transport {
    ($($name:ident),* $(,)?) => {
        both!($($name),*);
        mod tls {
            $(#[test] fn $name() { super::$name(super::Transport::Tls) })*
        }
    };
}

/// Certificates for `tls://` (one PKI per test binary: reach it only through this module).
#[path = "../tls_support/mod.rs"]
pub mod tls;

/// Which transport a test runs over.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    Tcp,
    Shm,
    /// TLS over TCP, with the test PKI ([`tls`]).
    Tls,
}

impl Transport {
    /// An address to bind: a free port, or a socket in a new directory of its own (removed
    /// when the [`Scratch`] is dropped).
    pub fn bind_addr(self) -> (String, Option<Scratch>) {
        match self {
            Transport::Tcp => ("tcp://127.0.0.1:0".into(), None),
            Transport::Tls => ("tls://127.0.0.1:0".into(), None),
            Transport::Shm => {
                let dir = Scratch::new();
                (format!("shm://{}", dir.0.join("s.sock").display()), Some(dir))
            }
        }
    }
}

/// A new, empty directory under the system's temporary directory, removed on drop.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("ferry-rpc-tokio-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An `AsyncServer` of [`Echo`] on a thread of its own (current-thread runtime, `LocalSet`).
pub struct ServerThread {
    pub addr: String,
    pub flags: Arc<Flags>,
    /// The server's metrics (`AsyncServer::metrics`).
    pub metrics: Arc<Metrics>,
    /// The server thread's id (for [`thread_sleeps`]).
    pub tid: u32,
    stop: Arc<AtomicBool>,
    kill: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Removed after the thread is joined (fields drop after `Drop::drop`).
    _scratch: Option<Scratch>,
}

impl ServerThread {
    /// Starts serving on a new address of `transport`, with `drain` for the shutdown.
    pub fn start(transport: Transport, drain: Duration) -> ServerThread {
        let (addr, scratch) = transport.bind_addr();
        ServerThread::start_at(&addr, drain, scratch)
    }

    /// Starts serving on `addr`; `scratch` (the socket's directory) goes with the server.
    pub fn start_at(addr: &str, drain: Duration, scratch: Option<Scratch>) -> ServerThread {
        ServerThread::serve(addr, drain, scratch, LoopConfig::default(), |flags| {
            AsyncServices::new().service(Echo { flags }).expect("services")
        })
    }

    /// Starts serving what `services` makes (given the server's [`Flags`]) on `addr`, with
    /// `config`.
    pub fn serve(
        addr: &str,
        drain: Duration,
        scratch: Option<Scratch>,
        config: LoopConfig,
        services: impl FnOnce(Arc<Flags>) -> AsyncServices + Send + 'static,
    ) -> ServerThread {
        let flags = Arc::new(Flags::default());
        let stop = Arc::new(AtomicBool::new(false));
        let kill = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let thread = {
            let (flags, stop, kill, addr) = (flags.clone(), stop.clone(), kill.clone(), addr.to_string());
            std::thread::Builder::new()
                .name("async-server".into())
                .spawn(move || {
                    let local = tokio::task::LocalSet::new();
                    let rt = runtime();
                    local.block_on(&rt, async move {
                        let config = LoopConfig {
                            conn: tls::with_tls(config.conn.clone()),
                            ..config
                        };
                        let server = AsyncServer::bind(services(flags), &[&addr], config).expect("bind");
                        tx.send((
                            server.addrs()[0].to_string(),
                            this_thread(),
                            Arc::clone(server.metrics()),
                        ))
                        .expect("report the address");
                        tokio::select! {
                            r = server.run(flag(stop), drain) => r.expect("run"),
                            // Dropping `run` closes every session at once.
                            () = flag(kill) => {}
                        }
                    });
                    // Every task left (sessions, handlers) goes with the set.
                    drop(local);
                })
                .expect("spawn the server thread")
        };
        let (addr, tid, metrics) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the server's address");
        ServerThread {
            addr,
            flags,
            metrics,
            tid,
            stop,
            kill,
            thread: Some(thread),
            _scratch: scratch,
        }
    }

    /// The flag that starts the shutdown (with the drain time given at the start).
    pub fn stopper(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Shuts down (drain, then close) and waits for the thread.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.join();
    }

    /// Drops the server's `run` future and every session: what a crash looks like to clients.
    pub fn kill(self) {
        self.kill.store(true, Ordering::SeqCst);
        self.join();
    }

    /// Waits for the thread (after `stopper` was set).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            t.join().expect("the server thread panicked");
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.kill.store(true, Ordering::SeqCst);
            let _ = t.join();
        }
    }
}

/// The calling thread's id (from `/proc/thread-self`, a link to `<pid>/task/<tid>`).
fn this_thread() -> u32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name()
        .and_then(|n| n.to_str()?.parse().ok())
        .unwrap_or_else(|| panic!("no thread id in {}", link.display()))
}

/// Whether thread `tid` of this process sleeps (state `S`: blocked, not running or runnable).
/// A current-thread runtime sleeps only when none of its tasks can go on.
pub fn thread_sleeps(tid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("the thread's stat");
    // "<tid> (<name>) <state> ...": the name may hold anything but ends at the last ')'.
    stat.rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('S'))
}

/// Resolves once `flag` is set (looked at every 5 ms).
pub async fn flag(flag: Arc<AtomicBool>) {
    while !flag.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A current-thread runtime with I/O and time.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Runs `f` to completion on a current-thread runtime inside a `LocalSet`.
pub fn local_runtime<F: Future>(f: F) -> F::Output {
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime(), f)
}

/// Runs `f` on a thread of its own; fails the test if it takes more than `secs` seconds
/// (the thread is left behind: the test process ends with the failure).
pub fn within<T: Send + 'static>(what: &str, secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(what.into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn the test thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => {
            let _ = thread.join();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sent nothing and did not panic"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: not done within {secs} s"),
    }
}

/// Resolves once `cond` holds (looked at every 5 ms).
pub async fn wait_until(cond: impl Fn() -> bool) {
    while !cond() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits up to 10 s for `cond`; fails naming `what` if it never holds.
pub async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
