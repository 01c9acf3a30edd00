//! Outgoing cost per system and shape: application buffers in, socket-ready bytes out.
//!
//! Ids are `serialize/<shape>/<system>`: one Criterion group per shape, one function per
//! system, so `report.py` can divide every row by the `memcpy` floor of its group.
//! Headline shapes run every system; the size and count sweeps run the first
//! `SWEEPERS` systems of the registry; the copy floors (`google16-copied`) run memcpy only.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_bench::Shape;
use ferry_bench::systems::{Entry, SERIALIZERS, SWEEPERS, Serializer};

fn bench_shape(c: &mut Criterion, shape: &Shape, systems: &[Entry<dyn Serializer>]) {
    let mut group = c.benchmark_group(format!("serialize/{}", shape.name()));
    group.throughput(Throughput::Bytes(shape.payload_len() as u64));
    for entry in systems {
        // A fresh instance per shape: its reused buffers size themselves to this shape.
        let mut serializer = (entry.new)();
        serializer
            .serialize(shape)
            .unwrap_or_else(|e| panic!("{} cannot serialize {}: {e}", entry.name, shape.name()));
        group.bench_function(entry.name, |b| {
            b.iter(|| {
                let out = serializer.serialize(black_box(shape)).expect("checked above");
                black_box(out);
            });
        });
    }
    group.finish();
}

fn headline(c: &mut Criterion) {
    for shape in Shape::headline() {
        bench_shape(c, &shape, SERIALIZERS);
    }
}

fn sweeps(c: &mut Criterion) {
    for shape in Shape::size_sweep().iter().chain(&Shape::count_sweep()) {
        bench_shape(c, shape, &SERIALIZERS[..SWEEPERS]);
    }
}

/// The memcpy of the bytes a hybrid message copies (`google16-copied`): its own floor.
fn copy_floors(c: &mut Criterion) {
    for shape in Shape::copy_floors() {
        bench_shape(c, &shape, &SERIALIZERS[..1]);
    }
}

criterion_group!(benches, headline, copy_floors, sweeps);
criterion_main!(benches);
