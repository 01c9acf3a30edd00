//! The atomics of the lock-free core ([`free_list`](crate::free_list) and
//! [`slot`](crate::slot)) and the lock of the region mapped ahead ([`ahead`](crate::ahead)):
//! std's, or loom's when built with `--cfg loom` so that
//! `cargo test --lib --release -- loom_` model-checks every interleaving of those modules
//! (`RUSTFLAGS="--cfg loom"`; see `.ci/run`). Nothing else in the crate is modelled: a loom
//! build is for the loom tests only.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
