//! Runs one benchmark case N times, for `valgrind --tool=callgrind` instruction counts.
//!
//! ```text
//! ferry-callgrind list
//! ferry-callgrind <serialize|decode> <system> <shape> <iterations>
//! ```
//!
//! `list` prints every case the Criterion benches run, one `op system shape` per line.
//! A case does its setup (shape buffers, a fresh system instance, one untimed call that
//! sizes the reused buffers) and then the operation `iterations` times. Setup and process
//! start cost the same for any N, so `run-callgrind.sh` runs each case with two values of N
//! and divides the difference in instructions by the difference in N.

use std::hint::black_box;
use std::process::ExitCode;

use ferry_bench::systems::{self, DECODERS, SERIALIZERS};
use ferry_bench::{BenchError, Shape, Sink};

const USAGE: &str = "usage: ferry-callgrind list\n       \
                     ferry-callgrind <serialize|decode> <system> <shape> <iterations>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["list"] => {
            list();
            Ok(())
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
    for shape in Shape::size_sweep().iter().chain(&Shape::count_sweep()) {
        for entry in SERIALIZERS.iter().filter(|e| e.sweeps) {
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
            let mut serializer = (systems::serializer(system)?.new)();
            serializer.serialize(&shape)?;
            for _ in 0..iterations {
                black_box(serializer.serialize(black_box(&shape))?);
            }
        }
        "decode" => {
            let mut decoder = (systems::decoder(system)?.new)();
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
