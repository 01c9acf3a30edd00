//! `ferry redis`: a Redis-protocol server (`ferry-redis`) in the foreground, until killed.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use ferry_net::{ClientAuth, Mode, TlsServer};
use ferry_redis::{Config, Server, Tls};

/// Options of `ferry redis`, named like redis-server's.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on (0: any free port, printed at start; with --tls-port, 0 turns the
    /// plain port off, as redis-server's `port 0`).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Port to serve TLS on, beside the plain port (0: any free port, printed at start).
    #[arg(long)]
    tls_port: Option<u16>,
    /// The server's certificate chain (PEM, the leaf first).
    #[arg(long)]
    tls_cert_file: Option<PathBuf>,
    /// The server certificate's private key (PEM).
    #[arg(long)]
    tls_key_file: Option<PathBuf>,
    /// CA certificates (PEM) that client certificates must chain to.
    #[arg(long)]
    tls_ca_cert_file: Option<PathBuf>,
    /// Client certificates: yes (required), optional (checked when sent), no (not asked for).
    #[arg(long, default_value = "yes", value_parser = ["yes", "no", "optional"])]
    tls_auth_clients: String,
    /// Milliseconds a TLS client may take over its handshake before it is closed (it holds a
    /// client slot meanwhile, never the loop's time).
    #[arg(long, default_value_t = 10_000)]
    tls_handshake_timeout_ms: u64,
    /// Clients must AUTH with this password first.
    #[arg(long)]
    requirepass: Option<String>,
    /// Bytes of keys and values beyond which writes get the OOM error (suffixes k, m, g, kb,
    /// mb, gb as in redis.conf; no eviction).
    #[arg(long, default_value = "1gb", value_parser = parse_size)]
    maxmemory: usize,
    /// Longest bulk string a request may carry (at most the region size minus 1 KiB).
    #[arg(long, value_parser = parse_size)]
    proto_max_bulk_len: Option<usize>,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 10_000)]
    maxclients: usize,
    /// Values at least this long are sent by reference from the keyspace; shorter ones are
    /// copied into the reply. Default: the calibrated TCP threshold (`ferry calibrate`, or the
    /// measured default).
    #[arg(long, value_parser = parse_size)]
    zero_copy_threshold: Option<usize>,
    /// How replies reach the kernel: copy, gather, zerocopy, uring, auto.
    #[arg(long, default_value = "gather")]
    mode: Mode,
    /// Event loops (each its own thread and SO_REUSEPORT listener; one keyspace).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Pin the loops to these CPUs (comma-separated; loop i on the (i mod n)-th).
    #[arg(long, value_delimiter = ',')]
    pin: Vec<usize>,
    /// Size of the pool's regions: the largest value and request (suffixes as maxmemory).
    #[arg(long, default_value = "8mb", value_parser = parse_size)]
    region_size: usize,
    /// Allow the DEBUG command (its SLEEP, SET-ACTIVE-EXPIRE, OBJECT subset), as Redis's
    /// `enable-debug-command yes`: Redis's own test suite needs it.
    #[arg(long)]
    enable_debug_command: bool,
    /// Where the RDB file is written and read.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The RDB file's name in --dir: loaded at start when it exists, written by SAVE, BGSAVE,
    /// DEBUG RELOAD and the save points.
    #[arg(long, default_value = "dump.rdb")]
    dbfilename: String,
    /// Save points, "seconds changes [seconds changes ...]" as redis.conf's `save` (a
    /// background save when both are reached); "" (the default) saves only when asked.
    #[arg(long, default_value = "")]
    save: String,
    /// The append-only file (Redis 7.0's multi-part AOF in --dir/--appenddirname): every write
    /// logged; when on, it is what loads at start (not the RDB file).
    #[arg(long, default_value = "no", value_parser = ["yes", "no"])]
    appendonly: String,
    /// When the AOF is synced: always (before each reply), everysec, or no (the kernel decides).
    #[arg(long, default_value = "everysec", value_parser = ["always", "everysec", "no"])]
    appendfsync: String,
    /// The AOF's directory, in --dir.
    #[arg(long, default_value = "appendonlydir")]
    appenddirname: String,
    /// The AOF files' base name.
    #[arg(long, default_value = "appendonly.aof")]
    appendfilename: String,
    /// Whether a rewritten AOF's base is an RDB file (else commands).
    #[arg(long, default_value = "yes", value_parser = ["yes", "no"])]
    aof_use_rdb_preamble: String,
    /// Whether an AOF whose last command is torn loads, cut before it (else start fails).
    #[arg(long, default_value = "yes", value_parser = ["yes", "no"])]
    aof_load_truncated: String,
}

/// A size in bytes with redis.conf's suffixes (`1gb`, `64mb`, `4k`; `k`/`kb` = 1024).
fn parse_size(s: &str) -> Result<usize, String> {
    let lower = s.trim().to_ascii_lowercase();
    let split = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let n: usize = digits.parse().map_err(|_| format!("{s:?} is not a size"))?;
    let mult: usize = match unit {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (k, kb, m, mb, g, gb)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("{s:?} is too large"))
}

/// The TLS listener of `--tls-port`, if given.
fn tls(args: &Args) -> Result<Option<Tls>, String> {
    let Some(port) = args.tls_port else {
        return Ok(None);
    };
    let file = |f: &Option<PathBuf>, flag: &str| {
        f.as_deref()
            .ok_or_else(|| format!("--tls-port needs {flag}"))
            .and_then(|p| std::fs::read(p).map_err(|e| format!("{flag} {}: {e}", p.display())))
    };
    let ca = || {
        file(
            &args.tls_ca_cert_file,
            "--tls-ca-cert-file (or --tls-auth-clients no)",
        )
    };
    let auth = match args.tls_auth_clients.as_str() {
        "no" => ClientAuth::None,
        "optional" => ClientAuth::Optional(ca()?),
        _ => ClientAuth::Required(ca()?),
    };
    let chain = file(&args.tls_cert_file, "--tls-cert-file")?;
    let key = file(&args.tls_key_file, "--tls-key-file")?;
    let server = TlsServer::from_pem(&chain, &key, auth).map_err(|e| e.to_string())?;
    Ok(Some(Tls {
        port,
        server: TlsServer {
            handshake_timeout: Duration::from_millis(args.tls_handshake_timeout_ms),
            ..server
        },
    }))
}

/// Runs the server until the process is killed.
pub fn run(args: &Args) -> Result<(), String> {
    let defaults = Config::default();
    let tls = tls(args).map_err(|e| format!("redis: {e}"))?;
    let config = Config {
        bind: SocketAddr::new(args.bind, args.port),
        plain: args.port != 0 || tls.is_none(),
        tls,
        password: args.requirepass.clone(),
        maxmemory: args.maxmemory,
        proto_max_bulk_len: args.proto_max_bulk_len.unwrap_or(
            defaults
                .proto_max_bulk_len
                .min(args.region_size.saturating_sub(1024)),
        ),
        max_clients: args.maxclients,
        zero_copy_threshold: args
            .zero_copy_threshold
            .unwrap_or_else(|| ferry_rpc::Thresholds::load().tcp),
        mode: args.mode,
        threads: args.threads,
        pin: args.pin.clone(),
        region_size: args.region_size,
        enable_debug_command: args.enable_debug_command,
        dir: args.dir.clone(),
        dbfilename: args.dbfilename.clone(),
        save: ferry_redis::cmd::persist::parse_save(args.save.as_bytes())
            .ok_or_else(|| format!("redis: --save {:?}: not \"seconds changes\" pairs", args.save))?,
        appendonly: args.appendonly == "yes",
        appendfsync: ferry_redis::aof::Fsync::parse(args.appendfsync.as_bytes())
            .unwrap_or(defaults.appendfsync),
        appenddirname: args.appenddirname.clone(),
        appendfilename: args.appendfilename.clone(),
        aof_use_rdb_preamble: args.aof_use_rdb_preamble == "yes",
        aof_load_truncated: args.aof_load_truncated == "yes",
        ..defaults
    };
    let threshold = config.zero_copy_threshold;
    let plain = config.plain;
    let server = Server::bind(config).map_err(|e| format!("redis: {e}"))?;
    let handle = server.spawn().map_err(|e| format!("redis: {e}"))?;
    let listening = match (plain, handle.tls_addr()) {
        (true, Some(tls)) => format!("{} and TLS on {tls}", handle.addr()),
        (false, Some(tls)) => format!("{tls}, TLS only,"),
        (_, None) => handle.addr().to_string(),
    };
    println!(
        "ferry redis listening on {listening} (replies: {} mode, values of {threshold} B and more sent by reference; RDB file {})",
        args.mode,
        args.dir.join(&args.dbfilename).display()
    );
    handle.join().map_err(|e| format!("redis: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_like_redis_conf() {
        assert_eq!(parse_size("1gb"), Ok(1 << 30));
        assert_eq!(parse_size("64MB"), Ok(64 << 20));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("12xb").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999999999999g").is_err());
    }
}
