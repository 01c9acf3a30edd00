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
//! Every message becomes `Foo<'a>`, `FooView<'b>` and `FOO_DESC`. Every service gets a
//! description module (`echo_service::{NAME, METHODS, SAY}`: its name and method ids) and,
//! from the built-in [`RpcGenerator`] that [`Config::new`] installs, the code to serve and call
//! it with `ferry::rpc`: the traits `Echo` (event loop and `Server`) and `AsyncEcho` (tokio),
//! their wrappers `EchoServer` and `AsyncEchoServer`, and the client `EchoClient`. Streaming
//! methods fail the build. [`Config::service_generator`] replaces the generator and
//! [`Config::no_service_generator`] turns it off.
//!
//! Pipeline: `.proto` files → descriptors (`protox`, no `protoc`) → type graph
//! (`prost-reflect`'s descriptor pool) → one generator per file with a shared context →
//! `prettyplease` → `@generated` header → written only if changed. Generated code stays thin:
//! the logic lives in `ferry-wire` and `ferry-rpc`.
//!
//! It is NOT the runtime (that is `ferry-wire`, and `ferry-rpc` for services) and does not
//! need `protoc`.
#![forbid(unsafe_code)]

mod codegen;
mod config;
mod error;

pub use codegen::RpcGenerator;
pub use config::{
    Config, GeneratedFile, HEADER, Method, Service, ServiceGenerator, ServiceNames, compile_protos,
    write_files,
};
pub use error::BuildError;
pub use ferry_reflect::{SchemaError, load};
