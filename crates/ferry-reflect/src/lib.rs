//! Ferry's schemas at run time, for long-running programs and tools: no code generation, no
//! `syn`/`quote`/`prettyplease` (those stay in `ferry-build`).
//!
//! - [`load`]: `.proto` files to a `prost_reflect` descriptor pool (pure Rust, no `protoc`).
//! - [`Schema`]: the pool's messages as Ferry descriptors ([`ferry_wire::MessageDesc`]) that
//!   [`ferry_wire::DynamicMessage`] and [`ferry_wire::View`] work with.
//! - [`json`]: the proto3 JSON mapping to and from a [`ferry_wire::DynamicMessage`].
//! - [`values`]: which values an encoder leaves out (implicit presence, default value).
//! - [`protobuf`]: the protobuf binary format to and from a [`ferry_wire::DynamicMessage`],
//!   byte for byte as prost writes it.
//!
//! A [`Schema`] owns the descriptors it builds; the views and dynamic messages made with them
//! borrow it, and dropping it (a reload) frees them all.
//!
//! What it is not: the schema compiler (`ferry-build` generates Rust types from the same
//! files), or a protobuf runtime for generated types (prost is).

#![forbid(unsafe_code)]

mod error;
pub mod json;
mod load;
pub mod protobuf;
mod schema;
pub mod values;

pub use error::SchemaError;
pub use load::load;
pub use schema::Schema;
