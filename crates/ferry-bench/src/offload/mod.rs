//! The DPU offload paper's benchmarks (`ferry bench offload`): what an offload engine that
//! turns gRPC clients' protobuf into Ferry messages in shared memory saves the host, measured
//! against a tonic host that decodes the protobuf itself.
//!
//! - [`decode`]: Figure 7, the time to deserialize one message (an int array, a char array)
//!   against its element count, on one pinned core, with no datapath: the tonic host's prost
//!   decode, the engine's decoder (protobuf to a `DynamicMessage`, then the Ferry image written
//!   into a pool buffer), and the host's side with offload (validate the image in place, read
//!   every element).
//!
//! The messages are the demo schema's `Ints` and `Chars`
//! (`crates/ferry-offload/proto/ferry/offload/demo.proto`): the Ferry side loads it at run time
//! with [`ferry_reflect::Schema::load`], as the engine does; the prost side is generated at
//! build time ([`crate::generated::demo_prost`], with the tonic `Demo` client and server).
//!
//! What it is NOT: the offload engine (that is `ferry-offload`; the benchmark calls the same
//! `ferry-reflect` and `ferry-wire` functions the engine's decoder is made of), or a test of it
//! (the benchmark checks that every system reads the same values before timing it, and asserts
//! nothing about speed).

pub mod decode;
