//! The cost of calling the serialize-and-send interface through `&dyn Outgoing` instead of a
//! concrete type: layout + header segment + zero-copy listing of one message, both ways.
//!
//! Ids are `dispatch/<shape>/{generic,dyn}`. Shapes: `muser` (24 B key, 10 x 100 B copied
//! values: the dispatch overhead is largest relative to the work) and `kv8k` (an 8 KiB value
//! in the pool, referenced).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ferry::sample::Record;
use ferry::{Context, Outgoing, Pool, PoolConfig};

/// What a transport does with a message: size it, write its header segment, list its
/// zero-copy values.
fn encode<M: Outgoing + ?Sized>(msg: &M, head: &mut Vec<u8>) -> usize {
    let layout = msg.layout();
    head.resize(layout.head_len, 0);
    msg.write_head(&layout, head).expect("fits");
    let mut entries = 0;
    msg.for_each_zero_copy(&mut |b| entries += b.len());
    entries
}

fn dispatch(c: &mut Criterion) {
    let pool = Pool::new(PoolConfig::default()).expect("pool");
    let ctx = Context::new(pool.clone());
    let small = [7u8; 100];
    let big = pool.copy_from(&[9u8; 8192]).expect("pool has room");
    let mut muser = Record::new(&ctx);
    muser.set_key(&[1u8; 24][..]);
    for _ in 0..10 {
        muser.append_field(&small[..]);
    }
    let mut kv8k = Record::new(&ctx);
    kv8k.set_key(&[1u8; 24][..]);
    kv8k.append_field(&big[..]);
    for (name, rec) in [("muser", &muser), ("kv8k", &kv8k)] {
        let mut group = c.benchmark_group(format!("dispatch/{name}"));
        let mut head = Vec::with_capacity(4096);
        group.bench_function("generic", |b| b.iter(|| encode(black_box(rec), &mut head)));
        let object: &dyn Outgoing = rec;
        group.bench_function("dyn", |b| b.iter(|| encode(black_box(object), &mut head)));
        group.finish();
    }
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
