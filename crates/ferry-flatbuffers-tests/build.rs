//! Writes `$OUT_DIR/interop_stock.rs`: the committed `flatc --rust` output with every
//! `::flatbuffers::` path turned into `::stock::`, so that the same generated API exists over
//! the stock `flatbuffers` builder (`crate::stock_interop`) beside the one over the zFlatBuffers
//! builder (`crate::interop`). A text substitution, not code generation: the file is otherwise
//! unchanged.

use std::env;
use std::fs;
use std::path::PathBuf;

const GENERATED: &str = "src/generated/interop_generated.rs";

fn main() {
    println!("cargo::rerun-if-changed={GENERATED}");
    println!("cargo::rerun-if-changed=build.rs");
    let text = fs::read_to_string(GENERATED).unwrap_or_else(|e| panic!("read {GENERATED}: {e}"));
    let stock = text.replace("::flatbuffers::", "::stock::");
    // Every runtime path is absolute in flatc's output; a relative one would silently keep
    // naming our builder.
    assert!(
        !stock.contains("flatbuffers::"),
        "{GENERATED} names the runtime other than as `::flatbuffers::`; update build.rs"
    );
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    fs::write(out.join("interop_stock.rs"), stock).expect("write interop_stock.rs");
}
