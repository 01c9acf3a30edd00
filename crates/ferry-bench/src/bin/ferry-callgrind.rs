//! Runs one benchmark case N times, for `valgrind --tool=callgrind` instruction counts.
//!
//! ```text
//! ferry-callgrind list
//! ferry-callgrind <serialize|decode> <system> <shape> <iterations>
//! ferry-callgrind rpc <system> <tcp|shm|tls> <fields>x<bytes> <in-flight> <calls>
//! ferry-callgrind kv <shared|borrowed> <values>x<bytes> <iterations>
//! ```
//!
//! `rpc` runs `calls` echo calls of one `ferry bench rpc` configuration (plus a tenth of them
//! as warm-up and two control calls) against a `ferry_rpc::Server` loop on its own thread that
//! sleeps in `poll(2)` when idle instead of busy-polling (see `ferry_bench::rpc::profile`),
//! and prints the number of echo calls the server answered. Run it under
//! `valgrind --tool=callgrind --separate-threads=yes` with two call counts and subtract: the
//! server thread's instructions per call (`rpc-callgrind.sh`).
//!
//! `kv` builds and serializes, `iterations` times, the answer `ferry kv` gives a `GetM`
//! (`ferry_kv`'s `Values`, built as its service builds it: a fresh message per answer, the
//! count reserved, each stored value appended), into a reused header segment and gather list,
//! as the `ferry` serializer does. `shared` appends each value as the store hands it out, a
//! counted `SharedBuf` clone (an owning value); `borrowed` appends a slice of the same pool
//! buffer. The values lie in the context's pool, so those at or above its threshold (512 B)
//! are referenced either way. Difference two iteration counts as `run-callgrind.sh` does.
//!
//! `list` prints every case the Criterion benches run, one `op system shape` per line.
//! A case does its setup (shape buffers, a fresh system instance, one untimed call that
//! sizes the reused buffers) and then the operation `iterations` times. Setup and process
//! start cost the same for any N, so `run-callgrind.sh` runs each case with two values of N
//! and divides the difference in instructions by the difference in N.

use std::hint::black_box;
use std::process::ExitCode;

use ferry_bench::harness::Link;
use ferry_bench::systems::{DECODERS, SERIALIZERS, SWEEPERS, find};
use ferry_bench::{BenchError, BoxError, Shape, Sink, rpc};

const USAGE: &str = "usage: ferry-callgrind list\n       \
                     ferry-callgrind <serialize|decode> <system> <shape> <iterations>\n       \
                     ferry-callgrind rpc <system> <tcp|shm|tls> <fields>x<bytes> <in-flight> <calls>\n       \
                     ferry-callgrind kv <shared|borrowed> <values>x<bytes> <iterations>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["list"] => {
            list();
            Ok(())
        }
        ["rpc", system, transport, shape, in_flight, calls] => {
            return match rpc(system, transport, shape, in_flight, calls) {
                Ok(served) => {
                    println!("{served}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ferry-callgrind rpc: {e}\n{USAGE}");
                    ExitCode::FAILURE
                }
            };
        }
        ["kv", how, shape, iterations] => {
            kv(how, shape, iterations).map_err(|e| BenchError::Ferry(e.to_string()))
        }
        [op, system, shape, iterations] => match iterations.parse::<u64>() {
            Ok(iterations) => run(op, system, shape, iterations),
            Err(_) => {
                eprintln!("iterations must be a whole number, got {iterations:?}\n{USAGE}");
                return ExitCode::FAILURE;
            }
        },
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferry-callgrind: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the cases in the order and grouping of the Criterion benches.
fn list() {
    for shape in Shape::headline() {
        for entry in SERIALIZERS {
            println!("serialize {} {}", entry.name, shape.name());
        }
    }
    for shape in Shape::copy_floors() {
        println!("serialize memcpy {}", shape.name());
    }
    for shape in Shape::size_sweep().iter().chain(&Shape::count_sweep()) {
        for entry in &SERIALIZERS[..SWEEPERS] {
            println!("serialize {} {}", entry.name, shape.name());
        }
    }
    for shape in Shape::headline() {
        for entry in DECODERS {
            println!("decode {} {}", entry.name, shape.name());
        }
    }
}

fn run(op: &str, system: &str, shape: &str, iterations: u64) -> Result<(), BenchError> {
    let shape = Shape::by_name(shape)?;
    match op {
        "serialize" => {
            let mut serializer = (find("serializer", SERIALIZERS, system)?.new)();
            serializer.serialize(&shape)?;
            for _ in 0..iterations {
                black_box(serializer.serialize(black_box(&shape))?);
            }
        }
        "decode" => {
            let mut decoder = (find("decoder", DECODERS, system)?.new)();
            decoder.prepare(&shape)?;
            let mut sink = Sink::counting();
            decoder.decode_and_read(&mut sink)?;
            for _ in 0..iterations {
                decoder.decode_and_read(&mut sink)?;
            }
            black_box(sink.bytes_read());
        }
        _ => {
            return Err(BenchError::Unknown {
                what: "operation",
                name: op.to_owned(),
                expected: "serialize, decode".to_owned(),
            });
        }
    }
    Ok(())
}

/// `<count>x<len>`, e.g. `2x2048`.
fn fields(shape: &str) -> Result<(usize, usize), BoxError> {
    Ok(shape
        .split_once('x')
        .and_then(|(n, len)| Some((n.parse().ok()?, len.parse().ok()?)))
        .ok_or_else(|| format!("shape {shape:?}: expected <fields>x<bytes>, e.g. 2x2048"))?)
}

/// `kv <shared|borrowed> <values>x<bytes> <iterations>`: `ferry kv`'s `GetM` answer, serialized.
fn kv(how: &str, shape: &str, iterations: &str) -> Result<(), BoxError> {
    use ferry::wire::{Context, Outgoing};
    use ferry_kv::proto::ferry::kv::Values;

    let shared = match how {
        "shared" => true,
        "borrowed" => false,
        _ => return Err(format!("kv {how:?}: expected shared or borrowed").into()),
    };
    let (count, len) = fields(shape)?;
    let iterations: u64 = iterations.parse()?;
    let pool = ferry_buf::Pool::new(ferry_buf::PoolConfig::default())?;
    let ctx = Context::new(pool.clone());
    let stored = (0..count)
        .map(|i| pool.copy_from(&vec![i as u8; len]))
        .collect::<Result<Vec<_>, _>>()?;
    let mut head = Vec::new();
    let mut gather: Vec<(usize, usize)> = Vec::new();
    // One untimed answer first, which sizes the reused buffers.
    for _ in 0..=iterations {
        let mut out = Values::new(&ctx);
        out.init_values(count);
        for value in &stored {
            if shared {
                out.append_values(value.clone());
            } else {
                out.append_values(&value[..]);
            }
        }
        let layout = out.layout();
        head.resize(layout.head_len, 0);
        gather.clear();
        out.write_head_gather(&layout, &mut head, &mut |b| {
            gather.push((b.as_ptr() as usize, b.len()))
        })?;
        black_box((&head, &gather));
    }
    Ok(())
}

/// `rpc <system> <tcp|shm> <fields>x<bytes> <in-flight> <calls>`: one profiled RPC run.
fn rpc(system: &str, transport: &str, shape: &str, in_flight: &str, calls: &str) -> Result<u64, BoxError> {
    use clap::ValueEnum;
    let system = rpc::System::from_str(system, true)?;
    // `tls`: TCP with TLS (the cost of TLS over plaintext, for `ferry bench rpc --tls`).
    let (transport, link) = match transport {
        "tls" => (rpc::Transport::Tcp, Link::Tls),
        t => (rpc::Transport::from_str(t, true)?, Link::Plain),
    };
    let (count, len) = fields(shape)?;
    let point = rpc::Point {
        system,
        transport,
        fields: rpc::Fields { count, len },
        in_flight: in_flight.parse()?,
        link,
    };
    rpc::profile(&point, calls.parse()?)
}
