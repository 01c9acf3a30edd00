//! `ferry bench redis`: Ferry's Redis-protocol server (`ferry redis`) against `redis-server`,
//! both driven by the same `redis-benchmark` with the same flags, in one run.
//!
//! ```text
//!   CPU 0 (client)                                CPU 1 (server)
//!   ferry bench redis ── spawns, one at a time ─▶  redis-server --save '' ...   then
//!     │  (loads the keys over RESP, checks them)   ferry redis --port P --pin 1
//!     └─ spawns ─▶ redis-benchmark -c 50 -r 100000 -P 1|16 --csv <test> ──TCP──▶ the server
//!        reads /proc/PID/{stat,task/*/schedstat} of both, before and after each run
//! ```
//!
//! The tests ([`Test`]) are Cornflakes Table 3's: `GET` of 4096-byte values, `MGET` of two
//! 2048-byte values and `LRANGE 0 1` over lists of two 2048-byte elements, at pipeline 1 and
//! 16 over 100,000 keys; `SET` of 4096 bytes for context; `GET`/`SET` of 64-byte values; and
//! `SET` of 4096 bytes against both servers restarted with `--appendonly yes --appendfsync
//! everysec` in a fresh temporary directory (`set-4k-aof`).
//! Each server runs alone on the server CPU with a fresh database, loaded by the harness
//! (`preload.rs`) with the keys redis-benchmark's `-r` names; for each test, a warm-up run
//! (whose rate, on the first server, sizes `-n` for the requested duration: the same `-n`
//! for both servers), then the measured run.
//!
//! Per run: requests/s and p50/p99 from redis-benchmark's CSV; the server's CPU time over the
//! client's life from `/proc` ([`crate::harness::cpu`]) divided by the requests, and the client's, to tell
//! when redis-benchmark's core is the bottleneck; and how busy both cores were with anything
//! else (`/proc/stat`), to flag runs disturbed by other work. With `--repeat N` the servers
//! take turns in alternating order and the table shows medians and the rounds' range: on this
//! project's VM single rounds of one server vary by up to 25-40 % at pipeline 16 (see
//! `docs/benchmarks/redis.md`, which runs redis-server on both sides), so results use 5
//! rounds. The targets (issue text) are checked per test in [`Goal`].
//!
//! What it is NOT: a check of the replies' contents under load (redis-benchmark counts
//! replies and stops on an error reply; the harness spot-checks values after loading).

mod client;
pub mod csv;
mod preload;
mod report;
mod server;
mod tls;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use ferry_launch::Server;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::BoxError;
use crate::harness::cli::Common;
use crate::harness::lifecycle::{self, Benchmark, Target};
use crate::harness::progress::Progress;
use crate::harness::{self, Budget};
use crate::harness::{Link, Named};

pub use report::{Comparison, Goal, Median, Run, Runs};
pub use server::ServerCmd;

use client::Invocation;
use preload::Family;
use tls::TlsFiles;

/// Options of `ferry bench redis`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Rounds: each round runs every test on both servers; the servers' order alternates from
    /// one round to the next, and the table shows the median of the rounds.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// CPU of the servers (one at a time).
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
    /// CPU of redis-benchmark (and of this harness).
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// redis-benchmark's connections (`-c`).
    #[arg(long, default_value_t = 50)]
    clients: u32,
    /// Keys per family (`-r`).
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    /// Pipeline depths (`-P`), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 16])]
    pipeline: Vec<u32>,
    /// Tests, comma-separated (default: all, in the order listed).
    #[arg(long, value_delimiter = ',')]
    test: Vec<Test>,
    /// Also run every test over TLS: both servers listen on a TLS port beside the plain one
    /// (rustls in `ferry redis`, OpenSSL in redis-server; a CA and certificate made for the
    /// run), and redis-benchmark connects with `--tls --cacert`.
    #[arg(long)]
    tls: bool,
    /// Developer option: run this command line instead of `ferry redis` as the "ferry"
    /// server, e.g. "redis-server --port {port} --save ''" ({port} and {cpu} are filled in;
    /// quotes group words).
    #[arg(long)]
    ferry_cmd: Option<String>,
    /// One more argument for the ferry server's command (repeatable), e.g. --ferry-arg=--mode
    /// --ferry-arg=copy.
    #[arg(long, allow_hyphen_values = true)]
    ferry_arg: Vec<String>,
    /// The redis-server executable.
    #[arg(long, default_value = "redis-server")]
    redis_server: String,
    /// The redis-benchmark executable.
    #[arg(long, default_value = "redis-benchmark")]
    redis_benchmark: String,
}

/// One of the benchmark's tests: a redis-benchmark command and the data it reads.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Test {
    /// `-t get -d 4096`: GET of 4096-byte values.
    #[value(name = "get-4k")]
    #[serde(rename = "get-4k")]
    Get4k,
    /// `mget m:__rand_int__ m:__rand_int__`: MGET of two 2048-byte values.
    #[value(name = "mget-2")]
    #[serde(rename = "mget-2")]
    Mget2,
    /// `lrange l:__rand_int__ 0 1`: both elements of a list of two 2048-byte strings.
    #[value(name = "lrange-2")]
    #[serde(rename = "lrange-2")]
    Lrange2,
    /// `-t set -d 4096`: SET of 4096-byte values.
    #[value(name = "set-4k")]
    #[serde(rename = "set-4k")]
    Set4k,
    /// `hgetall h:__rand_int__`: a hash of eight 1024-byte fields.
    #[value(name = "hgetall-8")]
    #[serde(rename = "hgetall-8")]
    Hgetall8,
    /// `smembers s:__rand_int__`: a set of sixteen 512-byte members.
    #[value(name = "smembers-16")]
    #[serde(rename = "smembers-16")]
    Smembers16,
    /// `zrange z:__rand_int__ 0 9 withscores`: ten 1024-byte members and their scores.
    #[value(name = "zrange-10")]
    #[serde(rename = "zrange-10")]
    Zrange10,
    /// `-t get -d 64`: GET of 64-byte values.
    #[value(name = "get-64")]
    #[serde(rename = "get-64")]
    Get64,
    /// `-t set -d 64`: SET of 64-byte values.
    #[value(name = "set-64")]
    #[serde(rename = "set-64")]
    Set64,
    /// `-t set -d 4096` against servers started with `--appendonly yes --appendfsync everysec`
    /// in a fresh directory: SET of 4096-byte values, every write appended to the AOF.
    #[value(name = "set-4k-aof")]
    #[serde(rename = "set-4k-aof")]
    Set4kAof,
}

impl Test {
    /// Every test, in the order they run.
    pub const ALL: [Test; 10] = [
        Test::Get4k,
        Test::Mget2,
        Test::Lrange2,
        Test::Hgetall8,
        Test::Smembers16,
        Test::Zrange10,
        Test::Set4k,
        Test::Get64,
        Test::Set64,
        Test::Set4kAof,
    ];

    /// Its name in tables and plots.
    pub fn label(self) -> &'static str {
        match self {
            Test::Get4k => "GET 4 KiB",
            Test::Mget2 => "MGET 2x2 KiB",
            Test::Lrange2 => "LRANGE 2x2 KiB",
            Test::Hgetall8 => "HGETALL 8x1 KiB",
            Test::Smembers16 => "SMEMBERS 16x512 B",
            Test::Zrange10 => "ZRANGE 10x1 KiB",
            Test::Set4k => "SET 4 KiB",
            Test::Get64 => "GET 64 B",
            Test::Set64 => "SET 64 B",
            Test::Set4kAof => "SET 4 KiB, AOF everysec",
        }
    }

    /// Its redis-benchmark arguments (after the common options: a custom command must come
    /// last).
    pub fn bench_args(self) -> &'static [&'static str] {
        match self {
            Test::Get4k => &["-t", "get", "-d", "4096"],
            Test::Mget2 => &["mget", "m:__rand_int__", "m:__rand_int__"],
            Test::Lrange2 => &["lrange", "l:__rand_int__", "0", "1"],
            Test::Hgetall8 => &["hgetall", "h:__rand_int__"],
            Test::Smembers16 => &["smembers", "s:__rand_int__"],
            Test::Zrange10 => &["zrange", "z:__rand_int__", "0", "9", "withscores"],
            Test::Set4k | Test::Set4kAof => &["-t", "set", "-d", "4096"],
            Test::Get64 => &["-t", "get", "-d", "64"],
            Test::Set64 => &["-t", "set", "-d", "64"],
        }
    }

    /// The title redis-benchmark gives it in the CSV: the command, or a custom command line.
    fn csv_title(self) -> String {
        match self.bench_args() {
            ["-t", command, ..] => command.to_uppercase(),
            custom => custom.join(" "),
        }
    }

    /// The family of keys it reads, which must be loaded before it runs.
    fn reads(self) -> Option<Family> {
        match self.bench_args() {
            ["-t", "get", "-d", len] => len.parse().ok().map(Family::Key),
            ["mget", ..] => Some(Family::Mget),
            ["lrange", ..] => Some(Family::List),
            ["hgetall", ..] => Some(Family::Hash),
            ["smembers", ..] => Some(Family::Set),
            ["zrange", ..] => Some(Family::Zset),
            _ => None,
        }
    }

    /// Whether it runs against servers that append every write to an AOF.
    fn aof(self) -> bool {
        self == Test::Set4kAof
    }

    /// The length of the `key:` values it writes.
    fn writes_len(self) -> Option<usize> {
        match self.bench_args() {
            ["-t", "set", "-d", len] => len.parse().ok(),
            _ => None,
        }
    }
}

/// The two servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// `redis-server`.
    #[serde(rename = "redis-server")]
    Redis,
    /// Ferry's server (`ferry redis`, or the `--ferry-cmd` stand-in).
    #[serde(rename = "ferry")]
    Ferry,
}

/// What the `key:` family holds on the running server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyState {
    /// Nothing loaded.
    Empty,
    /// Every key, values of this length.
    Len(usize),
    /// Mixed lengths (a SET test wrote some keys).
    Mixed,
}

/// Everything one measurement needs, fixed for the whole run.
struct Plan {
    tests: Vec<Test>,
    pipelines: Vec<u32>,
    /// Plain, then TLS with `--tls`.
    links: Vec<Link>,
    /// The certificates of `--tls`.
    tls: Option<TlsFiles>,
    budget: Budget,
    repeat: usize,
    keys: u64,
    clients: u32,
    server_cpu: usize,
    client_cpu: usize,
    bench: String,
    redis: ServerCmd,
    ferry: ServerCmd,
}

impl Plan {
    /// The plan `args` ask for, with the programs found on `PATH`.
    fn new(args: &Args, ferry: ServerCmd) -> Result<Plan, BoxError> {
        let bench = which(&args.redis_benchmark, "redis-tools").map_err(|e| {
            e.to_string()
                .replace("--redis-benchmark", "--redis-benchmark PATH")
        })?;
        let redis = which(&args.redis_server, "redis-server")?;
        let mut ferry = match &args.ferry_cmd {
            Some(line) => ServerCmd::parse(line)?,
            None => ferry,
        };
        ferry.args.extend(args.ferry_arg.iter().cloned());
        let mut redis = ServerCmd::redis_server(&redis);
        let tls = args.tls.then(TlsFiles::new).transpose()?;
        if let Some(tls) = &tls {
            redis.args.extend(tls.server_args());
            ferry.args.extend(tls.server_args());
        }
        let cpus = harness::cpus();
        if args.server_cpu == args.client_cpu || args.server_cpu.max(args.client_cpu) >= cpus {
            return Err(format!(
                "--server-cpu {} and --client-cpu {} must be two different CPUs below {cpus}",
                args.server_cpu, args.client_cpu
            )
            .into());
        }
        let pipelines = pipelines(&args.pipeline);
        if pipelines.contains(&0) || args.clients == 0 || args.keys == 0 || args.repeat == 0 {
            return Err("--pipeline, --clients, --keys and --repeat must be at least 1".into());
        }
        Ok(Plan {
            tests: tests(&args.test),
            pipelines,
            links: if tls.is_some() {
                vec![Link::Plain, Link::Tls]
            } else {
                vec![Link::Plain]
            },
            tls,
            budget: args.common.budget(1_000, 5_000),
            repeat: args.repeat,
            keys: args.keys,
            clients: args.clients,
            server_cpu: args.server_cpu,
            client_cpu: args.client_cpu,
            bench,
            redis,
            ferry,
        })
    }

    /// redis-benchmark's arguments for `test` at pipeline `p` with `n` requests, to `port`
    /// over `link`.
    fn invocation(
        &self,
        (port, link): (u16, Link),
        test: Test,
        p: u32,
        n: u64,
        deadline: Duration,
    ) -> Invocation {
        let (c, r) = (self.clients, self.keys);
        let common = format!("-h 127.0.0.1 -p {port} -c {c} -n {n} -r {r} -P {p} --csv");
        let tls = match (link, &self.tls) {
            (Link::Tls, Some(tls)) => tls.client_args(),
            _ => Vec::new(),
        };
        Invocation {
            program: self.bench.clone(),
            args: common
                .split(' ')
                .map(str::to_owned)
                .chain(tls)
                .chain(test.bench_args().iter().map(|a| a.to_string()))
                .collect(),
            deadline,
            cores: (self.server_cpu, self.client_cpu),
        }
    }

    /// Requests of a warm-up run: 200 rounds of every connection's pipeline.
    fn warmup_requests(&self, p: u32) -> u64 {
        u64::from(self.clients) * u64::from(p) * 200
    }
}

/// `-n` for a run of `secs` at `rps`, to two significant digits, at least 20 rounds of every
/// connection's pipeline.
fn size_requests(rps: f64, secs: f64, floor: u64) -> u64 {
    let n = (rps * secs).max(floor as f64);
    let scale = 10f64.powi((n.log10().floor() as i32 - 1).max(0));
    ((n / scale).round() * scale) as u64
}

/// Finds `name` on `PATH` (or checks it, if it is a path).
fn which(name: &str, package: &str) -> Result<String, BoxError> {
    let found = if name.contains('/') {
        std::path::Path::new(name).is_file().then(|| name.to_owned())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
                .map(|p| p.display().to_string())
        })
    };
    found.ok_or_else(|| {
        format!("{name} not found on PATH: install it (Debian: apt-get install -y {package}) or name it with --{}", name.trim_start_matches("./"))
            .into()
    })
}

/// The first line `program --version` prints.
fn version(program: &Path) -> Option<String> {
    let out = std::process::Command::new(program)
        .arg("--version")
        .output()
        .ok()?;
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()?
            .trim()
            .to_owned(),
    )
}

/// `ferry bench redis` through the lifecycle: measures (or reads `--from`), prints the tables
/// and the targets, writes `--json` and `--plot`. `ferry` is Ferry's server command
/// ([`ServerCmd::ferry`] of the running `ferry` binary), unless `--ferry-cmd` replaces it.
pub fn run(args: &Args, ferry: ServerCmd) -> Result<Runs, BoxError> {
    lifecycle::main(&Redis { args, ferry }, &args.common)
}

/// The benchmark as the lifecycle runs it.
struct Redis<'a> {
    args: &'a Args,
    ferry: ServerCmd,
}

impl Benchmark for Redis<'_> {
    const NAME: &'static str = "redis";
    type Records = Runs;

    fn plan(&self) -> u64 {
        let a = self.args;
        let links = if a.tls { 2 } else { 1 };
        (a.repeat * 2 * tests(&a.test).len() * pipelines(&a.pipeline).len() * links) as u64
    }

    fn run(&self, progress: &Progress) -> Result<(Value, Runs), BoxError> {
        let plan = Plan::new(self.args, self.ferry.clone())?;
        progress.suspend(|| {
            println!(
                "ferry bench redis: servers on CPU {}, redis-benchmark on CPU {}, -c {} -r {}, {} per test\n  redis-server: {}\n  ferry:        {}",
                plan.server_cpu,
                plan.client_cpu,
                plan.clients,
                plan.keys,
                plan.budget.describe("requests"),
                plan.redis.template(),
                plan.ferry.template(),
            )
        });
        // On a thread of its own pinned to the client CPU (the caller's affinity stays as it
        // was): redis-benchmark inherits that CPU, and loading the keys stays off the server's.
        let (records, requests) =
            harness::on_cpu("redis-client", plan.client_cpu, || measure(&plan, progress))?;
        let cases = plan.tests.iter().flat_map(|&t| {
            let links = &plan.links;
            plan.pipelines
                .iter()
                .flat_map(move |&p| links.iter().map(move |&l| (t, p, l)))
        });
        let settings = json!({
            "tests": plan.tests.iter().map(|t| json!({
                "name": t.name(),
                "label": t.label(),
                "redis_benchmark_args": t.bench_args(),
            })).collect::<Vec<_>>(),
            "pipelines": plan.pipelines,
            "clients": plan.clients,
            "keys": plan.keys,
            "repeat": plan.repeat,
            "budget": plan.budget.to_json("requests"),
            "requests": cases
                .filter_map(|(t, p, l)| Some((format!("{}@P{p}@{}", t.name(), l.name()), json!(requests.get(&(t, p, l))?))))
                .collect::<serde_json::Map<_, _>>(),
            "links": plan.links,
            "tls": plan.tls.as_ref().map(|_| "TLS 1.3 beside the plain port on both servers: rustls (ring) in ferry redis, OpenSSL in redis-server; a CA and a certificate for 127.0.0.1 made for the run; redis-benchmark --tls --cacert, no client certificate"),
            "requests_sized_by": "the warm-up run on the first server of the first round (redis-server), for the budget's duration",
            "server_cpu": plan.server_cpu,
            "client_cpu": plan.client_cpu,
            "redis_server": {"command": plan.redis.template(), "version": version(&plan.redis.program)},
            "ferry": {"command": plan.ferry.template()},
            "redis_benchmark": {"path": plan.bench, "version": version(Path::new(&plan.bench))},
            "cpu_time": "server: utime+stime from /proc/PID/task/*/schedstat (ns on a CPU, summed over threads; /proc/PID/stat ticks if unavailable), read before redis-benchmark starts and after it exits; client: redis-benchmark's own total, read while it is a zombie",
        });
        Ok((settings, Runs { records }))
    }

    fn table(runs: &Runs) {
        runs.print();
    }

    fn targets(runs: &Runs) -> Vec<Target> {
        runs.targets()
    }

    fn plot(runs: &Runs, path: &Path) -> Result<(), BoxError> {
        runs.plot(path)
    }
}

/// The tests `--test` names, in the order of [`Test::ALL`] (all of them if none).
fn tests(named: &[Test]) -> Vec<Test> {
    Test::ALL
        .into_iter()
        .filter(|t| named.is_empty() || named.contains(t))
        .collect()
}

/// The pipeline depths, sorted, each once.
fn pipelines(named: &[u32]) -> Vec<u32> {
    harness::sorted(named.iter().copied())
}

/// `-n` of each test at each pipeline depth over each link.
type Requests = HashMap<(Test, u32, Link), u64>;

/// Every round, server and test; returns the runs and the `-n` each test ran with.
fn measure(plan: &Plan, progress: &Progress) -> Result<(Vec<Run>, Requests), BoxError> {
    let mut requests = Requests::new();
    let mut runs = Vec::new();
    for round in 0..plan.repeat {
        let order = if round % 2 == 0 {
            [Side::Redis, Side::Ferry]
        } else {
            [Side::Ferry, Side::Redis]
        };
        for side in order {
            let cmd = match side {
                Side::Redis => &plan.redis,
                Side::Ferry => &plan.ferry,
            };
            // The AOF tests on a server of their own, appending to a fresh directory.
            for aof in [false, true] {
                let tests: Vec<Test> = plan.tests.iter().copied().filter(|t| t.aof() == aof).collect();
                if tests.is_empty() {
                    continue;
                }
                let dir = aof.then(|| tempfile::Builder::new().prefix("ferry-bench-redis-aof").tempdir());
                let dir = dir.transpose()?;
                let cmd = dir
                    .as_ref()
                    .map_or_else(|| cmd.clone(), |d| cmd.with_aof(d.path()));
                progress.start(format!("round {} {}: starting", round + 1, side.name()));
                let (mut server, tls_port) = server::start(&side.name(), &cmd, plan.server_cpu)?;
                measure_server(
                    plan,
                    &tests,
                    (&mut server, tls_port),
                    (round, side),
                    &mut requests,
                    progress,
                    &mut runs,
                )?;
            }
        }
    }
    Ok((runs, requests))
}

/// `tests` against one running server.
fn measure_server(
    plan: &Plan,
    tests: &[Test],
    (server, tls_port): (&mut Server, Option<u16>),
    (round, side): (usize, Side),
    requests: &mut Requests,
    progress: &Progress,
    runs: &mut Vec<Run>,
) -> Result<(), BoxError> {
    let what = |s: &str| format!("round {} {}: {s}", round + 1, side.name());
    let mut conn = preload::connect(server.addr())?;
    let at_start = preload::dbsize(&mut conn)?;
    if at_start != 0 {
        let command = server.command();
        return Err(format!("{command} holds {at_start} keys at start; expected an empty database").into());
    }
    // The families that never change, then `key:` as each test needs it.
    let mut loaded = 0u64;
    for family in [
        Family::Mget,
        Family::List,
        Family::Hash,
        Family::Set,
        Family::Zset,
    ] {
        if tests.iter().any(|t| t.reads() == Some(family)) {
            progress.start(what(&format!("loading {}..", family.key(0))));
            loaded += plan.keys;
            load_checked(&mut conn, family, plan.keys, loaded)?;
        }
    }
    let mut key_state = KeyState::Empty;
    for &test in tests {
        for &p in &plan.pipelines {
            if let Some(Family::Key(len)) = test.reads()
                && key_state != KeyState::Len(len)
            {
                progress.start(what(&format!("loading key:.. values of {len} B")));
                // Loaded over an earlier length, the keys are overwritten and the count stays.
                if key_state == KeyState::Empty {
                    loaded += plan.keys;
                }
                load_checked(&mut conn, Family::Key(len), plan.keys, loaded)?;
                key_state = KeyState::Len(len);
            }
            for &link in &plan.links {
                let port = match link {
                    Link::Plain => server.addr().port(),
                    Link::Tls => tls_port.ok_or("--tls: the server has no TLS port")?,
                };
                let case = format!("{} P={p}{}", test.label(), link.suffix());
                progress.start(what(&format!("{case} warm-up")));
                let warm = client::run(
                    &plan.invocation(
                        (port, link),
                        test,
                        p,
                        plan.warmup_requests(p),
                        Duration::from_secs(120),
                    ),
                    server.pid(),
                )
                .map_err(|e| format!("{}, warm-up: {e}", side.name()))?;
                let n = *requests
                    .entry((test, p, link))
                    .or_insert_with(|| match plan.budget {
                        Budget::Count(n) => n,
                        Budget::Time(d) => {
                            size_requests(warm.row.rps, d.as_secs_f64(), plan.warmup_requests(p) / 10)
                        }
                    });
                // Generous: three times as long as the warm-up's rate predicts, plus half a minute.
                let deadline = Duration::from_secs_f64(3.0 * n as f64 / warm.row.rps.max(1.0) + 30.0);
                progress.start(what(&format!("{case} -n {n}")));
                let inv = plan.invocation((port, link), test, p, n, deadline);
                let measured =
                    client::run(&inv, server.pid()).map_err(|e| format!("{}: {e}", side.name()))?;
                if measured.row.test != test.csv_title() {
                    return Err(format!(
                        "{}: the CSV names the test {:?}, expected {:?}",
                        inv.display(),
                        measured.row.test,
                        test.csv_title()
                    )
                    .into());
                }
                server.check_alive()?;
                runs.push(Run::from_client(
                    (round, side, test, p, link),
                    n,
                    &inv,
                    server,
                    measured,
                    warm.row.rps,
                ));
                progress.done();
            }
            // A SET over values of another length leaves some keys of each. Over no values it
            // leaves some keys; `Empty` still reloads them all and counts them then.
            if let Some(len) = test.writes_len()
                && matches!(key_state, KeyState::Len(l) if l != len)
            {
                key_state = KeyState::Mixed;
            }
        }
    }
    Ok(())
}

/// Loads `family`, checks a few of its keys, and checks that the server then holds
/// `expected` keys in all.
fn load_checked(conn: &mut preload::Conn, family: Family, keys: u64, expected: u64) -> Result<(), BoxError> {
    let what = family.key(0);
    preload::load(conn, family, keys).map_err(|e| format!("loading {what}..: {e}"))?;
    preload::check(conn, family, keys).map_err(|e| format!("checking {what}..: {e}"))?;
    let n = preload::dbsize(conn)?;
    if n != expected {
        return Err(format!("after loading {what}.. the server holds {n} keys; expected {expected}").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_counts() {
        assert_eq!(size_requests(87_719.3, 5.0, 1000), 440_000);
        assert_eq!(size_requests(606_060.0, 1.0, 1000), 610_000);
        assert_eq!(size_requests(10.0, 1.0, 1000), 1000);
        assert_eq!(size_requests(0.0, 1.0, 57), 57);
    }

    #[test]
    fn invocations() {
        let plan = Plan {
            tests: Test::ALL.to_vec(),
            pipelines: vec![1, 16],
            links: vec![Link::Plain],
            tls: None,
            budget: Budget::Count(10),
            repeat: 1,
            keys: 100_000,
            clients: 50,
            server_cpu: 1,
            client_cpu: 0,
            bench: "redis-benchmark".into(),
            redis: ServerCmd::redis_server("redis-server"),
            ferry: ServerCmd::ferry("ferry"),
        };
        let inv = plan.invocation(
            (6400, Link::Plain),
            Test::Mget2,
            16,
            500_000,
            Duration::from_secs(1),
        );
        assert_eq!(
            inv.display(),
            "redis-benchmark -h 127.0.0.1 -p 6400 -c 50 -n 500000 -r 100000 -P 16 --csv mget m:__rand_int__ m:__rand_int__"
        );
        assert_eq!(plan.warmup_requests(16), 160_000);
        let tls = TlsFiles::new().unwrap();
        let ca = tls.client_args()[2].clone();
        let plan = Plan {
            links: vec![Link::Plain, Link::Tls],
            tls: Some(tls),
            ..plan
        };
        let inv = plan.invocation((6401, Link::Tls), Test::Mget2, 1, 10, Duration::from_secs(1));
        assert_eq!(
            inv.display(),
            format!(
                "redis-benchmark -h 127.0.0.1 -p 6401 -c 50 -n 10 -r 100000 -P 1 --csv --tls --cacert {ca} mget m:__rand_int__ m:__rand_int__"
            )
        );
        assert!(
            std::fs::read_to_string(&ca)
                .unwrap()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        let titles = Test::ALL.map(|t| (t.name(), t.csv_title(), t.reads(), t.writes_len()));
        assert_eq!(
            titles[0],
            ("get-4k".into(), "GET".into(), Some(Family::Key(4096)), None)
        );
        assert_eq!(titles[1].1, "mget m:__rand_int__ m:__rand_int__");
        assert_eq!(titles[2].2, Some(Family::List));
        assert_eq!(
            titles[5],
            (
                "zrange-10".into(),
                "zrange z:__rand_int__ 0 9 withscores".into(),
                Some(Family::Zset),
                None
            )
        );
        assert_eq!(titles[8], ("set-64".into(), "SET".into(), None, Some(64)));
        assert_eq!(titles[9], ("set-4k-aof".into(), "SET".into(), None, Some(4096)));
        assert!(Test::ALL.iter().all(|&t| t.aof() == (t == Test::Set4kAof)));
    }
}
