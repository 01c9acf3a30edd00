//! Server settings. Every limit is explicit; defaults follow Redis where Redis has one.

use std::net::SocketAddr;
use std::path::PathBuf;

use ferry_net::{Mode, TlsServer};

/// How the server runs and what it accepts.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on (default `127.0.0.1:6379`).
    pub bind: SocketAddr,
    /// Whether `bind` is listened on: `false` serves TLS only (redis-server's `port 0`).
    pub plain: bool,
    /// A TLS listener beside the plain one (redis-server's `tls-port` and its certificate
    /// options); `None`: no TLS.
    pub tls: Option<Tls>,
    /// `requirepass`: clients must `AUTH` (or `HELLO ... AUTH`) first when set.
    pub password: Option<String>,
    /// `maxmemory`: bytes of keys and values (Redis's estimate: key + value + a fixed overhead
    /// per key) beyond which commands that add data get the OOM error. No eviction.
    pub maxmemory: usize,
    /// `proto-max-bulk-len`: the longest bulk string a request may carry (Redis: 512 MiB; here
    /// 8 MiB − 1 KiB by default). Requests are parsed in place, so a whole request must fit
    /// one pool buffer (`region_size`).
    pub proto_max_bulk_len: usize,
    /// Most arguments in one request (Redis: 1,048,576).
    pub max_args: usize,
    /// `client-query-buffer-limit`: unparsed request bytes one client may have buffered (at
    /// most `region_size`).
    pub query_buffer_limit: usize,
    /// Reply bytes one client may have queued and unwritten before it is disconnected (a
    /// client that sends without reading). Redis's normal-client limit is unlimited; here 64 MiB.
    pub output_buffer_limit: usize,
    /// `maxclients`.
    pub max_clients: usize,
    /// Values at least this long go out as gather entries referencing the stored bytes; shorter
    /// ones are copied into the reply. The calibrated TCP threshold by default.
    pub zero_copy_threshold: usize,
    /// A `SET` value at least this long that arrived whole in one read buffer is stored in
    /// place, as a counted slice of that buffer (no copy). Memory held per stored byte is then
    /// at most `read_buf / keep_in_place_min`.
    pub keep_in_place_min: usize,
    /// Size of the pool's regions, and so of its largest buffer: the longest request and the
    /// longest value (default 8 MiB).
    pub region_size: usize,
    /// Size of each read buffer (default 16 KiB).
    pub read_buf: usize,
    /// How replies reach the kernel (`ferry-net`'s send modes; default gather). `Copy` is the
    /// copy-only baseline: every value is copied into the reply, whatever its size.
    pub mode: Mode,
    /// Event loops, each on its own thread (and core, when `pin` is set) with its own
    /// `SO_REUSEPORT` listener, sharing one keyspace.
    pub threads: usize,
    /// Pin loop `i` to CPU `pin[i % pin.len()]`.
    pub pin: Vec<usize>,
    /// Active expiry cycles per second (Redis's `hz`, default 10).
    pub hz: u32,
    /// `databases`: how many databases `SELECT` can choose from (default 16, as Redis).
    pub databases: usize,
    /// `enable-debug-command`: whether `DEBUG` runs (default off, as in Redis 7.0; Redis's
    /// test suite needs it on).
    pub enable_debug_command: bool,
    /// `dir`: where the RDB file is written and read (default: the working directory).
    pub dir: PathBuf,
    /// `dbfilename`: the RDB file's name in `dir` (default `dump.rdb`). It is loaded at start
    /// when it exists; `SAVE`, `BGSAVE`, `DEBUG RELOAD` and the save points write it.
    pub dbfilename: String,
    /// `save`: save points, `(seconds, changes)`: a background save starts when at least
    /// `changes` writes happened and `seconds` passed since the last save. Empty by default
    /// (redis-server's default is `3600 1 300 100 60 10000`): nothing is saved unless asked.
    pub save: Vec<(u64, u64)>,
    /// `appendonly`: the AOF is on ([`crate::aof`]); at start it is loaded instead of the RDB
    /// file, as Redis does.
    pub appendonly: bool,
    /// `appendfsync` (default `everysec`, as Redis).
    pub appendfsync: crate::aof::Fsync,
    /// `appenddirname`: the AOF's directory in `dir` (default `appendonlydir`).
    pub appenddirname: String,
    /// `appendfilename`: the AOF files' base name (default `appendonly.aof`).
    pub appendfilename: String,
    /// `aof-use-rdb-preamble`: a rewrite's base is an RDB file (default), else commands.
    pub aof_use_rdb_preamble: bool,
    /// `aof-load-truncated`: load an AOF whose last command is torn, cut before it (default).
    pub aof_load_truncated: bool,
}

/// The TLS listener: `bind`'s address on its own port, with ferry-net's TLS (rustls).
#[derive(Debug, Clone)]
pub struct Tls {
    /// `tls-port` (0: the kernel's choice).
    pub port: u16,
    /// The certificate, key and client-certificate policy (`tls-auth-clients`: ferry-net's
    /// [`ClientAuth`](ferry_net::ClientAuth)), and the handshake timeout: a client that has
    /// not finished its handshake by then is closed, holding its slot until then and never
    /// the loop's time.
    pub server: TlsServer,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 6379)),
            plain: true,
            tls: None,
            password: None,
            maxmemory: 1 << 30,
            proto_max_bulk_len: (8 << 20) - 1024,
            max_args: 1 << 20,
            query_buffer_limit: 1 << 30,
            output_buffer_limit: 64 << 20,
            max_clients: 10_000,
            zero_copy_threshold: 512,
            keep_in_place_min: 4096,
            region_size: 8 << 20,
            read_buf: 16 << 10,
            mode: Mode::Gather,
            threads: 1,
            pin: Vec::new(),
            hz: 10,
            databases: 16,
            enable_debug_command: false,
            dir: PathBuf::from("."),
            dbfilename: "dump.rdb".into(),
            save: Vec::new(),
            appendonly: false,
            appendfsync: crate::aof::Fsync::Everysec,
            appenddirname: "appendonlydir".into(),
            appendfilename: "appendonly.aof".into(),
            aof_use_rdb_preamble: true,
            aof_load_truncated: true,
        }
    }
}
