//! `flatc --rust --gen-object-api` output for `schema/interop.fbs` (flatc 25.12.19), twice:
//!
//! - [`interop_generated`]: the committed file, as flatc wrote it. Its `::flatbuffers::` is
//!   this crate's dependency of that name, ferry-flatbuffers, so it builds with the zFlatBuffers
//!   builder and reads with the stock readers ferry-flatbuffers re-exports.
//! - [`interop_stock`]: the same file with `::flatbuffers::` replaced by `::stock::` (the
//!   `flatbuffers` crate itself), written by `build.rs` into `OUT_DIR`: the same API over the
//!   stock builder, the reference the tests compare with.
//!
//! The workspace lints (`missing_docs`, `unsafe_code`, documented unsafe blocks) hold for the
//! code we write, not for what flatc emits, so they are relaxed here and only here; rustfmt
//! skips these files so that `regen.sh` output stays byte for byte as generated (the
//! freshness test compares it with flatc's).

/// The generated code over the zFlatBuffers builder (`regen.sh` writes it).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod interop_generated;

/// The generated code over the stock builder (`build.rs` writes it from the file above).
#[rustfmt::skip]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    dead_code,
    mismatched_lifetime_syntaxes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
pub mod interop_stock {
    include!(concat!(env!("OUT_DIR"), "/interop_stock.rs"));
}
