//! `ferry-build`: compiles protobuf schemas into Ferry message types, shaped like `prost-build`.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), ferry_build::BuildError> {
//!     ferry_build::compile_protos(&["proto/kv.proto"], &["proto/"])
//! }
//! ```
//!
//! and in the crate, every package as nested modules (`pub mod ferry { pub mod kv { .. } }`):
//! `include!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));`
//!
//! Pipeline: `.proto` files → descriptors (`protox`, no `protoc`) → type graph
//! (`prost-reflect`'s descriptor pool) → one generator per file with a shared context →
//! `prettyplease` → `@generated` header → written only if changed. Generated code stays thin:
//! the logic lives in `ferry-wire`.
//!
//! It is NOT the runtime (that is `ferry-wire`) and does not need `protoc`.
#![forbid(unsafe_code)]

mod codegen;
mod config;
mod error;

pub use config::{
    Config, GeneratedFile, HEADER, Method, Service, ServiceGenerator, compile_protos, write_files,
};
pub use error::BuildError;
pub use ferry_reflect::{SchemaError, load};
