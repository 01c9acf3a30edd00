//! `ferry demo`: a key-value store serving a real workload (`ferry_bench::kv::demo`): Ferry
//! against prost over TCP and shared memory, measured by the open-loop load generator.
//!
//! `ferry demo --serialize`: hybrid serialization on sample workloads, with what was copied
//! and what was referenced; then the same kind of message streamed over TCP loopback in each
//! send mode; then an RPC server and client echoing records over TCP and shared memory.

use ferry::Message as _;
use std::error::Error;
use std::hint::black_box;
use std::time::Instant;

use ferry::sample::Record;
use ferry::{Context, Outgoing, Pool, PoolConfig, SharedBuf};
use ferry_net::Mode;

use ferry_bench::datapath::{self, Budget, Pools, RunSpec};
use ferry_bench::harness;

/// Options of `ferry demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Instead of the key-value store, the serialization microbenchmarks: sample messages
    /// copy-only and hybrid, the TCP send modes, an RPC echo.
    #[arg(long)]
    serialize: bool,
    /// Where the key-value demo writes its plot (p99 latency against throughput).
    #[arg(long, default_value = "ferry-demo.svg")]
    plot: std::path::PathBuf,
    /// A short key-value demo: two short points per sweep, a smaller store (for tests).
    #[arg(long)]
    quick: bool,
    /// Messages to serialize per workload and mode (`--serialize`).
    #[arg(long, default_value_t = 20_000)]
    messages: usize,
    /// Zero-copy threshold in bytes for the hybrid mode.
    #[arg(long, default_value_t = ferry::wire::DEFAULT_THRESHOLD)]
    threshold: usize,
    /// Messages streamed over TCP loopback per send mode in the datapath section (0 skips it).
    #[arg(long, default_value_t = 20_000)]
    datapath_messages: u64,
    /// Milliseconds of each echo run in the RPC section (0 skips it).
    #[arg(long, default_value_t = 300)]
    rpc_ms: u64,
}

/// A workload: a key and field sizes (`../shared/workloads.md`).
struct Workload {
    name: &'static str,
    source: &'static str,
    key_len: usize,
    fields: Vec<usize>,
}

fn workloads() -> Vec<Workload> {
    // 16 fields drawn from the fleet-wide protobuf bytes-field size buckets (workloads.md,
    // "Google protobuf bytes field sizes"), fixed here so every run shows the same message.
    let google = vec![5, 12, 3, 30, 45, 90, 8, 300, 2000, 14, 26, 7, 60, 700, 4, 5000];
    vec![
        Workload {
            name: "muSer",
            source: "24 B key + 10 x 100 B",
            key_len: 24,
            fields: vec![100; 10],
        },
        Workload {
            name: "echo",
            source: "2 x 2048 B",
            key_len: 0,
            fields: vec![2048; 2],
        },
        Workload {
            name: "kv-8k",
            source: "64 B key + 8 KiB value",
            key_len: 64,
            fields: vec![8192],
        },
        Workload {
            name: "google-16",
            source: "64 B key + 16 fleet-sized fields",
            key_len: 64,
            fields: google,
        },
    ]
}

/// The application's data, held in pool memory as a store would hold its values.
struct Store {
    key: SharedBuf,
    values: Vec<SharedBuf>,
}

impl Store {
    fn new(pool: &Pool, w: &Workload) -> Result<Self, Box<dyn Error>> {
        let fill = |len: usize, seed: u8| (0..len).map(|i| seed.wrapping_add(i as u8)).collect::<Vec<u8>>();
        let key = pool.copy_from(&fill(w.key_len, b'k'))?;
        let values = w
            .fields
            .iter()
            .enumerate()
            .map(|(i, &len)| pool.copy_from(&fill(len, i as u8)))
            .collect::<Result<_, _>>()?;
        Ok(Store { key, values })
    }

    fn record<'a>(&'a self, ctx: &'a Context) -> Record<'a> {
        let mut r = Record::new(ctx);
        r.set_key(&self.key[..]);
        r.init_fields(self.values.len());
        for v in &self.values {
            r.append_field(&v[..]);
        }
        r
    }
}

struct Measured {
    head_len: usize,
    referenced: usize,
    entries: usize,
    ns_per_msg: f64,
}

/// Builds, lays out and writes `n` messages as a transport would: header segment into a pool
/// buffer, zero-copy entries collected as held references.
fn measure(pool: &Pool, store: &Store, ctx: &Context, n: usize) -> Result<Measured, Box<dyn Error>> {
    let mut gather: Vec<(usize, usize)> = Vec::with_capacity(32);
    let mut last = None;
    let start = Instant::now();
    for _ in 0..n {
        let rec = store.record(ctx);
        let layout = rec.layout();
        let mut head = pool.alloc(layout.head_len)?;
        head.set_len(layout.head_len);
        // The header segment, and the gather list a `writev` would take: (address, length) of
        // each referenced value, listed as the write reaches it.
        gather.clear();
        rec.write_head_gather(&layout, &mut head, &mut |b| {
            gather.push((b.as_ptr() as usize, b.len()))
        })?;
        black_box((&head, &gather));
        last = Some(layout);
    }
    let elapsed = start.elapsed();
    let layout = last.unwrap_or_default();
    Ok(Measured {
        head_len: layout.head_len,
        referenced: layout.zero_copy_len,
        entries: 1 + layout.zero_copy_count,
        ns_per_msg: elapsed.as_nanos() as f64 / n.max(1) as f64,
    })
}

/// Serializes once, decodes the contiguous bytes a receiver would get, and checks every field.
fn verify(store: &Store, ctx: &Context) -> Result<(), Box<dyn Error>> {
    let rec = store.record(ctx);
    let bytes = rec.to_vec()?;
    let view = Record::decode(&bytes)?;
    if view.key() != &store.key[..] || view.fields().len() != store.values.len() {
        return Err("decoded record differs from the original".into());
    }
    for (got, want) in view.fields().iter().zip(&store.values) {
        if got != &want[..] {
            return Err("decoded field differs from the original".into());
        }
    }
    Ok(())
}

fn explain(store: &Store, ctx: &Context) {
    let rec = store.record(ctx);
    let layout = rec.layout();
    let mut gather = Vec::new();
    rec.for_each_zero_copy(&mut |b| gather.push(b.as_ptr()));
    let mut refs = gather.into_iter();
    println!(
        "  key       {:>6} B  copied into the header segment",
        rec.key().len()
    );
    for (i, f) in rec.fields().iter().enumerate() {
        if f.is_zero_copy() {
            let entry = refs.next();
            let same = entry == Some(store.values[i].as_ptr());
            println!(
                "  fields[{i:>2}] {:>6} B  referenced: gather entry at {:p} (the store's own memory: {})",
                f.len(),
                entry.unwrap_or(std::ptr::null()),
                if same { "yes" } else { "NO" }
            );
        } else {
            println!(
                "  fields[{i:>2}] {:>6} B  copied into the header segment",
                f.len()
            );
        }
    }
    println!(
        "  => {} gather entries: header segment of {} B + {} referenced buffer(s) of {} B",
        1 + layout.zero_copy_count,
        layout.head_len,
        layout.zero_copy_count,
        layout.zero_copy_len
    );
}

/// Runs the demo.
pub fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    if !args.serialize {
        return ferry_bench::kv::demo(&args.plot, args.quick).map_err(|e| e as Box<dyn Error>);
    }
    let pool = Pool::new(PoolConfig::default())?;
    let hybrid = Context::new(pool.clone()).with_threshold(args.threshold);
    let copy = Context::copy_only();
    println!(
        "Ferry demo: the same messages serialized copy-only and hybrid (zero-copy threshold {} B).",
        args.threshold
    );
    println!(
        "Values live in Ferry's registered pool, as a store's values would; {} messages per row.\n",
        args.messages
    );

    println!(
        "{:<10} {:<10} {:>12} {:>14} {:>15} {:>10}  shape",
        "workload", "mode", "copied B/msg", "referenced B", "gather entries", "ns/msg"
    );
    let mut stores = Vec::new();
    for w in workloads() {
        let store = Store::new(&pool, &w)?;
        for (mode, ctx) in [("copy-only", copy), ("hybrid", &hybrid)] {
            verify(&store, ctx)?;
            // Warm up: the first allocations of a size class map its region and fault its pages in.
            measure(&pool, &store, ctx, args.messages / 10 + 1)?;
            let m = measure(&pool, &store, ctx, args.messages)?;
            println!(
                "{:<10} {:<10} {:>12} {:>14} {:>15} {:>10.0}  {}",
                w.name, mode, m.head_len, m.referenced, m.entries, m.ns_per_msg, w.source
            );
        }
        stores.push((w, store));
    }

    for (w, store) in &stores {
        if w.name == "kv-8k" || w.name == "google-16" {
            println!("\n{} in hybrid mode, field by field:", w.name);
            explain(store, &hybrid);
        }
    }

    drop(stores);
    let stats = pool.stats();
    println!(
        "\nEvery message decoded back identical. Pool: {} region(s), {} MiB mapped, {} buffers outstanding after the run.",
        stats.regions,
        stats.mapped_bytes >> 20,
        stats.buffers_outstanding()
    );
    println!(
        "(\"copied B/msg\" is the header segment a send writes; \"referenced B\" goes out by scatter-gather, untouched.)"
    );
    if args.datapath_messages > 0 {
        datapath_section(args)?;
    }
    if args.rpc_ms > 0 {
        rpc_section(args)?;
    }
    Ok(())
}

/// Section 7: a server and a client of `ferry-rpc`, serving the echo of the Cornflakes paper.
fn rpc_section(args: &Args) -> Result<(), Box<dyn Error>> {
    println!(
        "\nRPC: a ferry-rpc server (one busy-polling event loop) echoes 2 x 2 KiB records to a client event loop keeping 16 calls in flight,"
    );
    println!(
        "over TCP loopback and over shared memory, {} ms per row: no serialization (raw), Ferry hybrid, and prost through the same loop.\n",
        args.rpc_ms
    );
    ferry_bench::rpc::demo(ferry_bench::harness::Budget::Time(
        std::time::Duration::from_millis(args.rpc_ms),
    ))
    .map_err(|e| -> Box<dyn Error> { format!("rpc section: {e}").into() })?;
    println!(
        "Over shared memory Ferry's fields are read where the client wrote them and the response is built in the server's pool; over TCP the kernel copies on delivery. `ferry bench rpc` runs the full comparison (docs/benchmarks/rpc.md)."
    );
    Ok(())
}

/// Field sizes of the datapath section's messages: large values, as a store would send.
const DATAPATH_FIELDS: [usize; 4] = [16 << 10; 4];

/// Section 6: the same kind of message over TCP loopback in each send mode, with what each
/// mode copied in user space and what the kernel reported.
fn datapath_section(args: &Args) -> Result<(), Box<dyn Error>> {
    let pools = Pools::new().map_err(|e| -> Box<dyn Error> { e })?;
    let size: usize = DATAPATH_FIELDS.iter().sum();
    let values = pools
        .values(size, DATAPATH_FIELDS.len())
        .map_err(|e| -> Box<dyn Error> { e })?;
    let cpus = if harness::cpus() > 1 {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    println!(
        "\nDatapath: {} messages of {} x {} KiB pool-resident fields per mode, one-way over TCP loopback",
        args.datapath_messages,
        DATAPATH_FIELDS.len(),
        DATAPATH_FIELDS[0] >> 10
    );
    println!(
        "(ferry-net, batched; sender and receiver threads on {}; the receiver decodes every frame in place).\n",
        if cpus.0.is_some() {
            "CPUs 0 and 1"
        } else {
            "one CPU"
        }
    );
    println!(
        "{:<10} {:>10} {:>9} {:>14} {:>16} {:>18} {:>15}",
        "mode", "msgs/s", "MiB/s", "sender us/msg", "receiver us/msg", "user copied B/msg", "kernel copied"
    );
    let mut rates = Vec::new();
    for mode in Mode::ALL {
        let spec = RunSpec {
            mode,
            batch_frames: ferry_net::Config::default().batch_frames,
            values: &values,
            threshold: args.threshold,
            budget: Budget::Count(args.datapath_messages),
            cpus,
            congestion: Some("cubic"),
        };
        let r = datapath::measure(&spec, &pools).map_err(|e| format!("datapath, {mode} mode: {e}"))?;
        let name = if r.effective_mode == mode {
            mode.name().to_owned()
        } else {
            format!("{mode}>{}", r.effective_mode)
        };
        let rate = r.kernel_copied_rate();
        rates.extend(rate);
        println!(
            "{:<10} {:>10.0} {:>9.0} {:>14.2} {:>16.2} {:>18.0} {:>15}",
            name,
            r.msgs_per_sec(),
            r.msgs_per_sec() * size as f64 / f64::from(1 << 20),
            r.sender_us_per_msg(),
            r.receiver_us_per_msg(),
            r.send.values_copied as f64 / r.messages.max(1) as f64,
            rate.map_or("no zero-copy".to_owned(), |r| format!(
                "{:.0}% of sends",
                r * 100.0
            )),
        );
    }
    println!(
        "\nuser copied: bytes of field values the sender copied in user space (copy mode copies each value once; the others post them as gather entries)."
    );
    println!(
        "kernel copied: share of zero-copy sends (MSG_ZEROCOPY, io_uring SEND_ZC) whose completion said the kernel copied the data after all."
    );
    if !rates.is_empty() && rates.iter().all(|&r| r >= 0.99) {
        println!(
            "On loopback the kernel copies on delivery, and said so for every zero-copy send above: zero-copy modes cannot avoid a copy here, they can at most save sender CPU (and pay for completions); only a real NIC can show the saving."
        );
    } else {
        println!(
            "On loopback the kernel copies on delivery (the kernel-copied rate shows how often): zero-copy modes can at most save sender CPU here."
        );
    }
    Ok(())
}
