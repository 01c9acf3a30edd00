# The key-value store's requests and responses as the Cap'n Proto peer serializes them
# (Cornflakes section 6.1.3): one request struct with an operation kind, one response with the
# values in order. Keys are text, as in the store's own schema; values are data.
# Keep in step with kv.proto and kv.fbs.
@0xbc2d627b268b24b4;

# The generated code lives in `crate::generated`, and names its own types by that path
# (`rust.capnp` ships with capnpc; regen.sh puts it on the import path).
using Rust = import "/rust.capnp";
$Rust.parentModule("generated");

struct Request {
  enum Op {
    get @0;      # One single-buffer value: `keys` holds its key.
    getList @1;  # Every buffer of a value: `keys` holds its key.
    getM @2;     # One single-buffer value per key of `keys`, in order.
    put @3;      # Stores `values` (one buffer, or several) under the one key of `keys`.
  }
  op @0 :Op;
  keys @1 :List(Text);
  values @2 :List(Data);
}

# The values read, in order (none for put). Failures travel as the RPC status.
struct Response {
  values @0 :List(Data);
}
