//! Decode one message and read every field, per system and headline shape.
//!
//! Ids are `decode/<shape>/<system>`. The input is what that system's serializer wrote for
//! the shape, prepared once outside the timed loop; see `Sink` for what "read" means.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_bench::systems::DECODERS;
use ferry_bench::{Shape, Sink};

fn decode(c: &mut Criterion) {
    for shape in Shape::headline() {
        let mut group = c.benchmark_group(format!("decode/{}", shape.name()));
        group.throughput(Throughput::Bytes(shape.payload_len() as u64));
        for entry in DECODERS {
            let mut decoder = (entry.new)();
            decoder
                .prepare(&shape)
                .unwrap_or_else(|e| panic!("{} cannot encode {}: {e}", entry.name, shape.name()));
            let mut sink = Sink::counting();
            decoder
                .decode_and_read(&mut sink)
                .unwrap_or_else(|e| panic!("{} cannot decode {}: {e}", entry.name, shape.name()));
            assert_eq!(sink.bytes_read(), shape.payload_len(), "{}", entry.name);
            group.bench_function(entry.name, |b| {
                b.iter(|| decoder.decode_and_read(&mut sink).expect("checked above"));
            });
            black_box(sink.bytes_read());
        }
        group.finish();
    }
}

criterion_group!(benches, decode);
criterion_main!(benches);
