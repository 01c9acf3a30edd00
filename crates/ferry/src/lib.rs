//! Ferry: move structured data between processes and machines without copying it.
//!
//! Messages are protobuf-shaped. Each `bytes`/`string` field is either copied (small values)
//! or sent by reference (large values that live in Ferry's registered [`Pool`]), decided once
//! when the field is set. Serializing yields one header segment plus one gather entry per
//! referenced value; decoding validates once and then reads fields in place.
//!
//! This crate is the one applications depend on: it re-exports the memory layer
//! ([`buf`], `ferry-buf`), the wire format ([`wire`], `ferry-wire`), the TCP datapath
//! ([`net`], `ferry-net`) and the shared-memory transport ([`shm`], `ferry-shm`). The schema
//! compiler is `ferry-build`, used from `build.rs`.
//!
//! ```
//! use ferry::{Context, Pool, PoolConfig, Serialize};
//! use ferry::sample::Record;
//!
//! let pool = Pool::new(PoolConfig::default()).unwrap();
//! let ctx = Context::new(pool.clone());
//!
//! // A large value that lives in pool memory is referenced, a small key is copied.
//! let value = pool.copy_from(&[7u8; 4096]).unwrap();
//! let mut rec = Record::new(&ctx);
//! rec.set_key(&b"user:42"[..]);
//! rec.append_field(value.clone());
//! assert!(rec.fields()[0].is_zero_copy());
//!
//! let layout = rec.layout();
//! assert_eq!(layout.zero_copy_count, 1);
//! let bytes = rec.to_vec().unwrap();
//! let view = Record::decode(&bytes).unwrap();
//! assert_eq!(view.key(), b"user:42");
//! assert_eq!(view.fields().get(0), Some(&value[..]));
//! ```
#![forbid(unsafe_code)]

pub mod sample;

pub use ferry_buf as buf;
pub use ferry_buf::{BufMut, Pool, PoolConfig, PoolError, SharedBuf};
pub use ferry_net as net;
pub use ferry_shm as shm;
pub use ferry_wire as wire;
pub use ferry_wire::{
    Arena, Context, DecodeError, Encode, EncodeError, HybridBytes, HybridStr, Layout, Limits, Serialize, View,
};
