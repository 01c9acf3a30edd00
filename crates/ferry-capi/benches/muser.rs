//! muSer through the C API against the Rust generated-shape code, in one run: `cargo bench -p
//! ferry-capi --bench muser`. Builds `benches/muser.c` with `cc -O2` against this build's
//! `libferry_capi.so`, runs it, times `ferry::sample::Record` (the shape and code `ferry-build`
//! generates for `ferry_bench.Record`) the same way (build + contiguous encode into a caller
//! buffer; decode + read every field in place; the best of 5 runs of N iterations, over 3
//! rounds that alternate the two sides), and prints both
//! with their ratios. Target (issue 30): the C API within 1.5x. `FERRY_CAPI_BENCH_ITERS` sets N.
//! Figures and the method: docs/benchmarks/capi.md. A benchmark, not a test: it asserts only
//! that both sides encoded the same length and read the same bytes.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ferry::sample::Record;
use ferry::wire::{Context, Message, Outgoing};

const REPS: usize = 5;
/// Rounds of both sides, alternating.
const ROUNDS: usize = 3;

/// Nanoseconds per iteration of `f`, the best of [`REPS`] runs of `iterations`.
fn best_ns(iterations: u64, mut f: impl FnMut()) -> f64 {
    (0..REPS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed().as_nanos() as f64 / iterations as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let iterations: u64 = std::env::var("FERRY_CAPI_BENCH_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    // The same bytes as muser.c: byte j of buffer b is b * 31 + j.
    let key: Vec<u8> = (0..24).collect();
    let fields: Vec<Vec<u8>> = (1..=10u32)
        .map(|b| (0..100u32).map(|j| (b * 31 + j) as u8).collect())
        .collect();
    let ctx = Context::copy_only();
    let mut out = vec![0u8; 4096];
    let mut len = 0;
    let mut checksum = 0u64;
    let exe = build_c();
    // Rounds alternate the two sides, so that a busy machine slows both alike; the best of each.
    let [mut rust_encode, mut rust_decode, mut c_encode, mut c_decode] = [f64::INFINITY; 4];
    for _ in 0..ROUNDS {
        rust_encode = rust_encode.min(best_ns(iterations, || {
            let mut r = Record::new(ctx);
            r.set_key(&key[..]);
            r.init_fields(fields.len());
            for f in &fields {
                r.append_field(&f[..]);
            }
            let layout = r.layout();
            r.write_head(&layout, &mut out[..layout.head_len])
                .expect("encode");
            len = black_box(layout.total_len());
        }));
        let bytes = &out[..len];
        rust_decode = rust_decode.min(best_ns(iterations, || {
            checksum = 0;
            let v = Record::decode(black_box(bytes)).expect("decode");
            let k = v.key();
            checksum += k.len() as u64 + u64::from(k[0]);
            for f in v.fields().iter() {
                checksum += f.len() as u64 + u64::from(f[f.len() - 1]);
            }
        }));
        let c = run_c(&exe, iterations);
        assert_eq!(
            c("len") as usize,
            len,
            "both sides encode muSer to the same length"
        );
        assert_eq!(c("checksum") as u64, checksum, "both sides read the same bytes");
        c_encode = c_encode.min(c("encode_ns"));
        c_decode = c_decode.min(c("decode_ns"));
    }
    println!("muSer ({len} bytes), ns per message, best of {ROUNDS} x {REPS} x {iterations}:");
    println!(
        "  encode: Rust {rust_encode:.1}  C API {c_encode:.1}  ratio {:.2}x",
        c_encode / rust_encode
    );
    println!(
        "  decode: Rust {rust_decode:.1}  C API {c_decode:.1}  ratio {:.2}x",
        c_decode / rust_decode
    );
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds muser.c against this build's library, beside it.
fn build_c() -> PathBuf {
    let lib = std::env::current_exe()
        .expect("current_exe")
        .parent()
        .expect("deps")
        .to_owned();
    let exe = lib.join("ferry-capi-muser-c");
    let status = Command::new("cc")
        .args(["-std=c11", "-O2", "-g", "-Wall", "-Werror", "-I"])
        .arg(manifest().join("../../include"))
        .arg(manifest().join("benches/muser.c"))
        .arg("-L")
        .arg(&lib)
        .arg("-lferry_capi")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("cc");
    assert!(status.success(), "cc muser.c: {status}");
    exe
}

/// Runs muser.c; returns a reader of its `name value` lines.
fn run_c(exe: &Path, iterations: u64) -> impl Fn(&str) -> f64 {
    let out = Command::new(exe)
        .arg(manifest().join("../ferry-bench/schema"))
        .arg(iterations.to_string())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run muser");
    assert!(
        out.status.success(),
        "muser: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    move |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    }
}
