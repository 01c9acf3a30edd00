//! Ferry's key-value store: the application of the Cornflakes evaluation (section 6.1.2).
//!
//! Keys are strings; values live in Ferry's registered pool, as single buffers, vectors of
//! buffers (written at once) or linked lists of buffers (grown by `Append`). The store is
//! served by `ferry-rpc` through the service compiled from `proto/ferry/kv.proto`
//! ([`proto`]): a response carries each value as a `bytes` field built from a counted
//! reference to the stored buffer, so values at or above the session's zero-copy threshold go
//! out by scatter-gather from the store's own memory and smaller ones are copied into the
//! header segment. The store never copies a large value to answer a request.
//!
//! ```text
//!  put ──copy once──► pool buffer (SharedBuf, refcount 1) ── held by the map
//!  get ──► map lookup (shard read lock) ──► clone (refcount + 1) ──► response field
//!        ──► transport: gather entry at the stored bytes (≥ threshold) or copied (smaller)
//!  overwrite/delete while a response is in flight: the map drops its reference; the
//!        response's keeps the old bytes intact until the transport is done with them
//! ```
//!
//! - [`Store`]: the map (sharded, `Send + Sync`, so several server loops can share it), the
//!   memory limit (`RESOURCE_EXHAUSTED`; no eviction), and the limits on keys and values.
//! - [`KvService`]: the generated `Kv` trait implemented over a [`Store`]; serve it with
//!   `KvServer::new(service)` on a `ferry::rpc::Server`. Serve it with
//!   [`Store::serving_config`] so responses over shared memory reference the store too.
//! - [`fill`]: the verifiable bytes values are filled with, so a client can check every
//!   response; [`load`]: preloading a key space (from a generator, or a `key,size` file).
//!
//! - [`raft`]: the store replicated by a Raft group (openraft 0.9), its log in redb: what
//!   `ferry kv serve` runs.
//!
//! What [`Store`] alone is not: persistent, replicated (that is [`raft`]), or evicting; it has no expiry. The serializations
//! of other libraries over the same store live in `ferry-bench` (they are benchmark peers, not
//! something to link).

#![forbid(unsafe_code)]

pub mod fill;
pub mod load;
pub mod raft;
mod service;
mod store;

pub use service::KvService;
pub use store::{Store, StoreConfig, StoreError, Value, footprint_of};

/// The code `ferry-build` generated from `proto/ferry/kv.proto` (package `ferry.kv`): the
/// messages, the `Kv` server traits and wrappers, and the `KvClient` stub.
#[allow(missing_docs)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));
}
