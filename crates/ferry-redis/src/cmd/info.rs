//! Server information: `INFO` and `TIME`.
//!
//! Where this differs from Redis, and why:
//! - `INFO` has the sections `server`, `clients`, `memory`, `persistence`, `stats`,
//!   `replication`, `cpu`, `commandstats`, `cluster` and `keyspace` (`default` is all but
//!   `commandstats`, `all` and `everything` all of them), with the fields Ferry can fill truthfully, plus Ferry's own (`ferry_*`, and the
//!   reply byte counters), `cpu` (the process's user and system time, and its children's; not
//!   the main thread's: Ferry has one loop per thread) and `commandstats` (`all`, `everything`
//!   or by name; `EXEC` itself is not counted, the commands it runs are). `modules`,
//!   `errorstats` and `latencystats` are empty, as any unknown section is. `avg_ttl` is always 0 (not tracked).

use std::fmt::Write as _;
use std::sync::PoisonError;

use super::connection::REDIS_VERSION;
use super::{Args, Ctx, Stats, pubsub};
use crate::db::{Db, DbStats};
use crate::resp::ReplyBuf;

/// CPU seconds of the process (user, system) and of its waited-for children, from
/// `/proc/self/stat` (zeros where it cannot be read).
fn cpu_seconds() -> (f64, f64, f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let hz = rustix::param::clock_ticks_per_second().max(1) as f64;
    // utime, stime, cutime, cstime are fields 14 to 17, 12 to 15 after the name.
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0) / hz;
    (at(11), at(12), at(13), at(14))
}

/// `TIME`: the server's clock, `[unix seconds, microseconds]` (to the millisecond: the
/// handlers' clock).
pub fn time(ctx: &mut Ctx<'_>, _args: &Args<'_>, out: &mut ReplyBuf) {
    out.array(2);
    out.bulk((ctx.now_ms / 1000).to_string().as_bytes());
    out.bulk(((ctx.now_ms % 1000) * 1000).to_string().as_bytes());
}

/// `INFO` sections, in the order Redis writes them.
const SECTIONS: [&str; 10] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "commandstats",
    "cluster",
    "keyspace",
];

/// The sections `INFO` and `INFO default` leave out (`all` and `everything` have them).
const NOT_DEFAULT: &[&str] = &["commandstats"];

/// `INFO [section ...]`: the chosen sections (the default ones for none or `default`, all
/// for `all` or `everything`; nothing for an unknown one) as text, `\r\n` line ends, a blank line between
/// sections; a verbatim `txt` string in RESP3.
pub fn info(ctx: &mut Ctx<'_>, args: &Args<'_>, out: &mut ReplyBuf) {
    let default = SECTIONS.map(|s| !NOT_DEFAULT.contains(&s));
    let mut wanted = if args.len() == 1 {
        default
    } else {
        [false; SECTIONS.len()]
    };
    for arg in args.iter_from(1) {
        let arg = arg.to_ascii_lowercase();
        if arg == b"default" {
            wanted.iter_mut().zip(default).for_each(|(w, d)| *w |= d);
        } else if matches!(arg.as_slice(), b"all" | b"everything") {
            wanted = [true; SECTIONS.len()];
        } else if let Some(i) = SECTIONS.iter().position(|s| s.as_bytes() == arg.as_slice()) {
            wanted[i] = true;
        }
    }
    let mut text = String::new();
    for (section, _) in SECTIONS.iter().zip(wanted).filter(|(_, w)| *w) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        info_section(ctx, section, &mut text);
    }
    out.verbatim("txt", text.as_bytes());
}

/// Appends `key:value\r\n`.
macro_rules! field {
    ($s:expr, $key:expr, $value:expr) => {{
        let _ = write!($s, "{}:{}\r\n", $key, $value);
    }};
}

/// Appends one `INFO` section, header included.
fn info_section(ctx: &Ctx<'_>, section: &str, s: &mut String) {
    let server = ctx.server;
    let config = &server.config;
    let stat = Stats::get;
    match section {
        "server" => {
            s.push_str("# Server\r\n");
            let uptime = server.started.elapsed().as_secs();
            field!(s, "redis_version", REDIS_VERSION);
            field!(s, "redis_git_sha1", "00000000");
            field!(s, "redis_git_dirty", 0);
            field!(s, "redis_build_id", 0);
            field!(s, "redis_mode", "standalone");
            field!(s, "os", os_name());
            field!(s, "arch_bits", usize::BITS);
            field!(s, "multiplexing_api", "epoll");
            field!(s, "process_id", std::process::id());
            field!(s, "process_supervised", "no");
            field!(s, "run_id", server.run_id);
            field!(s, "tcp_port", server.port);
            field!(s, "server_time_usec", ctx.now_ms.saturating_mul(1000));
            field!(s, "uptime_in_seconds", uptime);
            field!(s, "uptime_in_days", uptime / 86_400);
            field!(s, "hz", config.hz);
            field!(s, "configured_hz", config.hz);
            field!(s, "config_file", "");
            field!(s, "io_threads_active", 0);
            field!(s, "ferry_version", env!("CARGO_PKG_VERSION"));
            field!(s, "ferry_send_mode", config.mode);
            field!(s, "ferry_threads", config.threads);
            field!(s, "ferry_zero_copy_threshold", config.zero_copy_threshold);
            field!(s, "ferry_keep_in_place_min", config.keep_in_place_min);
        }
        "clients" => {
            s.push_str("# Clients\r\n");
            field!(s, "connected_clients", stat(&server.stats.connected_clients));
            field!(s, "cluster_connections", 0);
            field!(s, "maxclients", config.max_clients);
            let blocked = server
                .blocked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len();
            field!(s, "blocked_clients", blocked);
            field!(s, "tracking_clients", 0);
        }
        "memory" => {
            s.push_str("# Memory\r\n");
            let used = ctx.used_memory() as u64;
            let maxmemory = server.maxmemory.load(std::sync::atomic::Ordering::Relaxed) as u64;
            field!(s, "used_memory", used);
            field!(s, "used_memory_human", human_bytes(used));
            field!(s, "maxmemory", maxmemory);
            field!(s, "maxmemory_human", human_bytes(maxmemory));
            field!(s, "maxmemory_policy", "noeviction");
            let pool = ctx.db.pool().stats();
            field!(s, "ferry_pool_mapped_bytes", pool.mapped_bytes);
            field!(s, "ferry_pool_regions", pool.regions);
            field!(s, "ferry_pool_buffers_outstanding", pool.buffers_outstanding());
            field!(s, "ferry_pool_bytes_outstanding", pool.bytes_outstanding());
            field!(s, "ferry_pool_mlock_failures", pool.mlock_failures);
        }
        "persistence" => {
            s.push_str("# Persistence\r\n");
            field!(s, "loading", 0);
            field!(s, "async_loading", 0);
            let persist = &server.persist;
            let changes = std::iter::once(&*ctx.db).chain(ctx.others.iter().map(|(_, d)| d));
            field!(
                s,
                "rdb_changes_since_last_save",
                persist.changes_since_save(super::persist::changes(changes))
            );
            field!(
                s,
                "rdb_bgsave_in_progress",
                u8::from(persist.bgsave_in_progress())
            );
            field!(s, "rdb_last_save_time", persist.lastsave());
            let status = if persist.last_bgsave_ok() { "ok" } else { "err" };
            field!(s, "rdb_last_bgsave_status", status);
            for (key, value) in server.aof.info_fields() {
                field!(s, key, value);
            }
        }
        "stats" => {
            s.push_str("# Stats\r\n");
            let st = &server.stats;
            let db = std::iter::once(ctx.db.stats())
                .chain(ctx.others.iter().map(|(_, d)| d.stats()))
                .fold(DbStats::default(), |a, b| DbStats {
                    keyspace_hits: a.keyspace_hits + b.keyspace_hits,
                    keyspace_misses: a.keyspace_misses + b.keyspace_misses,
                    expired_keys: a.expired_keys + b.expired_keys,
                });
            field!(
                s,
                "total_connections_received",
                stat(&st.total_connections_received)
            );
            field!(s, "total_commands_processed", stat(&st.total_commands_processed));
            field!(s, "total_net_input_bytes", stat(&st.total_net_input_bytes));
            field!(s, "total_net_output_bytes", stat(&st.total_net_output_bytes));
            field!(s, "rejected_connections", stat(&st.rejected_connections));
            field!(s, "expired_keys", db.expired_keys);
            field!(s, "evicted_keys", 0);
            field!(s, "keyspace_hits", db.keyspace_hits);
            field!(s, "keyspace_misses", db.keyspace_misses);
            let (channels, patterns, shard) =
                pubsub::info_counts(&server.pubsub.lock().unwrap_or_else(PoisonError::into_inner));
            field!(s, "pubsub_channels", channels);
            field!(s, "pubsub_patterns", patterns);
            field!(s, "pubsubshard_channels", shard);
            field!(s, "reply_bytes_copied", stat(&st.reply_bytes_copied));
            field!(s, "reply_bytes_referenced", stat(&st.reply_bytes_referenced));
            field!(s, "clients_dropped", stat(&st.clients_dropped));
        }
        "cpu" => {
            s.push_str("# CPU\r\n");
            let (user, sys, child_user, child_sys) = cpu_seconds();
            field!(s, "used_cpu_sys", format!("{sys:.6}"));
            field!(s, "used_cpu_user", format!("{user:.6}"));
            field!(s, "used_cpu_sys_children", format!("{child_sys:.6}"));
            field!(s, "used_cpu_user_children", format!("{child_user:.6}"));
        }
        "commandstats" => {
            s.push_str("# Commandstats\r\n");
            for (spec, st) in ctx.table.commands.iter().zip(&server.command_stats) {
                let (calls, usec) = (stat(&st.calls), stat(&st.usec));
                let (rejected, failed) = (stat(&st.rejected_calls), stat(&st.failed_calls));
                if calls + rejected + failed == 0 {
                    continue;
                }
                let per_call = if calls == 0 {
                    0.0
                } else {
                    usec as f64 / calls as f64
                };
                let _ = write!(
                    s,
                    "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},\
                     rejected_calls={rejected},failed_calls={failed}\r\n",
                    spec.name
                );
            }
        }
        "replication" => {
            s.push_str("# Replication\r\n");
            match ctx.server.follow.master() {
                None => field!(s, "role", "master"),
                Some((master, up)) => {
                    let (host, port) = master.rsplit_once(':').unwrap_or((&master, "0"));
                    field!(s, "role", "slave");
                    field!(s, "master_host", host);
                    field!(s, "master_port", port);
                    field!(s, "master_link_status", if up { "up" } else { "down" });
                }
            }
            field!(s, "connected_slaves", 0);
            field!(s, "master_failover_state", "no-failover");
            field!(s, "master_repl_offset", 0);
            field!(s, "repl_backlog_active", 0);
        }
        "cluster" => {
            s.push_str("# Cluster\r\n");
            field!(s, "cluster_enabled", 0);
        }
        "keyspace" => {
            s.push_str("# Keyspace\r\n");
            let mut dbs: Vec<(usize, &Db)> = ctx.others.iter().collect();
            dbs.push((ctx.client.db, &*ctx.db));
            dbs.sort_by_key(|&(i, _)| i);
            for (i, db) in dbs.into_iter().filter(|(_, db)| !db.is_empty()) {
                let (keys, expires) = (db.len(), db.expires());
                let _ = write!(s, "db{i}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
        _ => {}
    }
}

/// `os:` as Redis writes it, without the kernel release: `Linux x86_64`.
fn os_name() -> String {
    let os = std::env::consts::OS;
    let mut name = String::with_capacity(os.len() + 1 + std::env::consts::ARCH.len());
    let mut chars = os.chars();
    if let Some(c) = chars.next() {
        name.extend(c.to_uppercase());
    }
    name.push_str(chars.as_str());
    name.push(' ');
    name.push_str(std::env::consts::ARCH);
    name
}

/// Redis's `bytesToHuman`: `999B`, `1.50K`, `64.00M`, `1.00G`, ...
fn human_bytes(n: u64) -> String {
    const UNITS: [(char, u32); 5] = [('K', 1), ('M', 2), ('G', 3), ('T', 4), ('P', 5)];
    for (unit, power) in UNITS {
        let next = 1u64 << (10 * (power + 1));
        if n < next {
            let d = n as f64 / (1u64 << (10 * power)) as f64;
            return if n < 1024 {
                format!("{n}B")
            } else {
                format!("{d:.2}{unit}")
            };
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::harness::{bulk, server_harness};

    /// The INFO text of a reply (RESP2 bulk).
    fn info_text(reply: &str) -> &str {
        let (len, rest) = reply[1..].split_once("\r\n").unwrap();
        let len: usize = len.parse().unwrap();
        assert_eq!(rest.len(), len + 2, "bulk length");
        &rest[..len]
    }

    #[test]
    fn info_sections() {
        let mut h = server_harness(None);
        assert_eq!(h.cmd("INFO keyspace"), bulk("# Keyspace\r\n"));
        h.cmd("SET a 1");
        h.cmd("SET b 2 EX 100");
        assert_eq!(
            h.cmd("INFO KEYSPACE"),
            bulk("# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n")
        );
        assert_eq!(h.cmd("INFO nosuch"), bulk(""));
        assert_eq!(h.cmd("INFO nosuch keyspace"), h.cmd("INFO keyspace"));

        // Sections come in Redis's order whatever the request's, with a blank line between.
        let reply = h.cmd("INFO keyspace server");
        let text = info_text(&reply);
        assert!(text.starts_with("# Server\r\nredis_version:7.0.15\r\n"), "{text}");
        assert!(text.contains("\r\nredis_mode:standalone\r\n"));
        assert!(text.contains("\r\ntcp_port:6379\r\n"));
        assert!(text.contains(&format!("\r\nrun_id:{}\r\n", "ab".repeat(20))));
        assert!(text.contains(&format!("\r\nferry_version:{}\r\n", env!("CARGO_PKG_VERSION"))));
        assert!(text.contains("\r\narch_bits:64\r\n"));
        assert!(text.ends_with("\r\n\r\n# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n"));
        assert!(
            text.split("\r\n")
                .all(|l| l.is_empty() || l.starts_with('#') || l.contains(':'))
        );

        // All sections, for each way of asking (the command counter moves in between).
        let fields = |reply: &str| -> Vec<String> {
            let text = info_text(reply);
            text.lines()
                .filter(|l| {
                    !l.starts_with("total_commands_processed:")
                        && !l.starts_with("uptime_in")
                        && !l.starts_with("used_cpu_")
                })
                .map(str::to_owned)
                .collect()
        };
        let all = h.cmd("INFO");
        for line in ["INFO default", "INFO server default"] {
            assert_eq!(fields(&h.cmd(line)), fields(&all), "{line}");
        }
        // `all` adds commandstats: the commands run so far, none rejected or failed.
        let everything = h.cmd("INFO EVERYTHING");
        assert!(!all.contains("cmdstat_"));
        assert!(
            everything.contains("\r\n# Commandstats\r\ncmdstat_info:calls="),
            "{everything}"
        );
        assert!(everything.contains(",rejected_calls=0,failed_calls=0\r\n"));
        assert!(info_text(&h.cmd("INFO cpu")).starts_with("# CPU\r\nused_cpu_sys:"));
        h.cmd("GET");
        h.cmd("SET n x");
        h.cmd("INCR n");
        let stats = h.cmd("INFO commandstats");
        assert!(
            stats.contains(
                "cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n"
            )
        );
        assert!(
            stats.contains(",rejected_calls=0,failed_calls=1\r\n") && stats.contains("cmdstat_incr:calls=1,")
        );
        h.cmd("DEL n");
        let text = info_text(&all);
        let headers: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            headers,
            [
                "# Server",
                "# Clients",
                "# Memory",
                "# Persistence",
                "# Stats",
                "# Replication",
                "# CPU",
                "# Cluster",
                "# Keyspace"
            ]
        );
        for field in [
            "connected_clients:0",
            "maxclients:10000",
            "used_memory:",
            "used_memory_human:",
            "maxmemory:1073741824",
            "maxmemory_human:1.00G",
            "maxmemory_policy:noeviction",
            "loading:0",
            "total_commands_processed:",
            "keyspace_hits:0",
            "keyspace_misses:0",
            "expired_keys:0",
            "reply_bytes_copied:0",
            "reply_bytes_referenced:0",
            "role:master",
            "cluster_enabled:0",
        ] {
            assert!(text.contains(&format!("\r\n{field}")), "{field} in {text}");
        }
        // Hits and misses come from the keyspace.
        h.cmd("GET a");
        h.cmd("GET nosuch");
        let stats = h.cmd("INFO stats");
        assert!(
            stats.contains("\r\nkeyspace_hits:1\r\nkeyspace_misses:1\r\n"),
            "{stats}"
        );

        h.cmd("HELLO 3");
        assert_eq!(
            h.cmd("INFO keyspace"),
            "=48\r\ntxt:# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n\r\n"
        );
        assert_eq!(h.cmd("INFO nosuch"), "=4\r\ntxt:\r\n");
    }

    #[test]
    fn human_bytes_like_redis() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1023), "1023B");
        assert_eq!(human_bytes(1024), "1.00K");
        assert_eq!(human_bytes(1536), "1.50K");
        assert_eq!(human_bytes(64 << 20), "64.00M");
        assert_eq!(human_bytes(1 << 30), "1.00G");
        assert_eq!(human_bytes(3 << 40), "3.00T");
        assert_eq!(human_bytes(1 << 50), "1.00P");
        assert_eq!(human_bytes(u64::MAX), format!("{}B", u64::MAX));
    }
}
