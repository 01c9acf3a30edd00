//! Compiles the store's service, `proto/ferry/kv.proto`, and its replication's, `proto/ferry/raft.proto`, with `ferry-build`.

fn main() -> Result<(), ferry_build::BuildError> {
    ferry_build::compile_protos(&["proto/ferry/kv.proto", "proto/ferry/raft.proto"], &["proto"])
}
