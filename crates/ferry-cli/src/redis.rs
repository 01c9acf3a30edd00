//! `ferry redis`: a Redis-protocol server (`ferry-redis`) in the foreground, until killed.

use std::net::{IpAddr, SocketAddr};

use ferry_net::Mode;
use ferry_redis::{Config, Server};

/// Options of `ferry redis`, named like redis-server's.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on (0: any free port, printed at start).
    #[arg(long, default_value_t = 6379)]
    port: u16,
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

/// Runs the server until the process is killed.
pub fn run(args: &Args) -> Result<(), String> {
    let defaults = Config::default();
    let config = Config {
        bind: SocketAddr::new(args.bind, args.port),
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
        ..defaults
    };
    let threshold = config.zero_copy_threshold;
    let server = Server::bind(config).map_err(|e| format!("redis: {e}"))?;
    let handle = server.spawn().map_err(|e| format!("redis: {e}"))?;
    println!(
        "ferry redis listening on {} (replies: {} mode, values of {threshold} B and more sent by reference; no persistence)",
        handle.addr(),
        args.mode
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
