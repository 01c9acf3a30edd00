//! Ferry, in three modes: copy-only, hybrid (threshold 512 B) and zero-copy (threshold 0).
//!
//! Outgoing: the application's values live in Ferry's pool (copied there once per shape,
//! untimed, as a store holds its values). Each call refills a reused [`Record`] with the
//! values (a pool lookup per field), takes its layout, writes the header segment into a reused
//! vector (the returned bytes) and, in the same pass (`write_head_gather`), collects the
//! (address, length) of each zero-copy buffer into a reused gather list, as a `writev` would
//! take them (a zero-copy send keeps the message, and
//! with it the references, until its completion). The output is therefore the header segment
//! plus that gather list: the referenced bytes are never touched, which is the point. Decode: validate the whole message, then read
//! the key and every field in place.

use ferry::Message as _;
use ferry::sample::Record;
use ferry::{Context, Outgoing, Pool, PoolConfig, SharedBuf};

use crate::systems::{Decoder, Serializer, Sink};
use crate::{BenchError, Shape};

/// One pool per process for every Ferry instance: its regions are mapped and faulted in once.
fn pool() -> &'static Pool {
    static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| Pool::new(PoolConfig::default()).expect("bench pool"))
}

/// The shape's key and fields, copied into the pool once.
struct Store {
    shape: String,
    key: SharedBuf,
    fields: Vec<SharedBuf>,
}

/// Ferry serializer with zero-copy threshold `THRESHOLD` (`usize::MAX`: copy-only).
pub struct FerrySerializer<const THRESHOLD: usize> {
    store: Option<&'static Store>,
    record: Record<'static>,
    head: Vec<u8>,
    gather: Vec<(usize, usize)>,
}

impl<const THRESHOLD: usize> FerrySerializer<THRESHOLD> {
    /// A fresh instance for the registry.
    pub fn boxed() -> Box<dyn Serializer> {
        // The context and store live for the process, so the record can be reused across
        // calls like prost's; leaked once per instance (per shape), which is bounded.
        let ctx: &'static Context =
            Box::leak(Box::new(Context::new(pool().clone()).with_threshold(THRESHOLD)));
        Box::new(FerrySerializer::<THRESHOLD> {
            store: None,
            record: Record::new(ctx),
            head: Vec::new(),
            gather: Vec::new(),
        })
    }

    fn store(&mut self, shape: &Shape) -> Result<&'static Store, BenchError> {
        if let Some(s) = self.store.filter(|s| s.shape == shape.name()) {
            return Ok(s);
        }
        let p = pool();
        let copy = |b: &[u8]| p.copy_from(b).map_err(|e| BenchError::Ferry(e.to_string()));
        let store = Store {
            shape: shape.name().to_owned(),
            key: copy(shape.key())?,
            fields: shape.fields().iter().map(|f| copy(f)).collect::<Result<_, _>>()?,
        };
        let store: &'static Store = Box::leak(Box::new(store));
        self.store = Some(store);
        Ok(store)
    }
}

impl<const THRESHOLD: usize> Serializer for FerrySerializer<THRESHOLD> {
    fn serialize(&mut self, shape: &Shape) -> Result<&[u8], BenchError> {
        let store = self.store(shape)?;
        let rec = &mut self.record;
        rec.set_key(&store.key[..]);
        rec.init_fields(store.fields.len());
        for f in &store.fields {
            rec.append_field(&f[..]);
        }
        let layout = rec.layout();
        self.head.resize(layout.head_len, 0);
        self.gather.clear();
        let gather = &mut self.gather;
        rec.write_head_gather(&layout, &mut self.head, &mut |b| {
            gather.push((b.as_ptr() as usize, b.len()))
        })
        .map_err(|e| BenchError::Ferry(e.to_string()))?;
        Ok(&self.head)
    }

    fn referenced_len(&self) -> usize {
        self.gather.iter().map(|&(_, len)| len).sum()
    }
}

/// Validates and reads a prepared contiguous encoding.
#[derive(Default)]
pub struct FerryDecoder {
    input: Option<Vec<u8>>,
}

impl Decoder for FerryDecoder {
    fn prepare(&mut self, shape: &Shape) -> Result<(), BenchError> {
        let ctx = Context::copy_only();
        let mut rec = Record::new(ctx);
        rec.set_key(&shape.key()[..]);
        for f in shape.fields() {
            rec.append_field(&f[..]);
        }
        self.input = Some(rec.to_vec().map_err(|e| BenchError::Ferry(e.to_string()))?);
        Ok(())
    }

    fn decode_and_read(&mut self, sink: &mut Sink) -> Result<(), BenchError> {
        let input = self
            .input
            .as_deref()
            .ok_or(BenchError::NotPrepared { system: "ferry" })?;
        let view = Record::decode(input).map_err(|e| BenchError::Ferry(e.to_string()))?;
        sink.key(view.key());
        for f in view.fields().iter() {
            sink.field(f);
        }
        Ok(())
    }
}
