"""Python decodes what Rust encoded, and Rust decodes what Python encoded: seeded random
messages of every message type of tests/vectors' schemas, through the `ferry encode` and
`ferry decode` commands (child processes)."""

import os
import random
import subprocess

import pytest

from conftest import PROTOS, SCHEMAS

SEED = int(os.environ.get("FERRY_TEST_SEED", "30"))
PER_TYPE = 6

INTS = {
    "int32": (-(2**31), 2**31 - 1), "sint32": (-(2**31), 2**31 - 1), "sfixed32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "sint64": (-(2**63), 2**63 - 1), "sfixed64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1), "fixed32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1), "fixed64": (0, 2**64 - 1),
    "enum": (-5, 2),
}


def scalar(rng, kind):
    if kind in INTS:
        lo, hi = INTS[kind]
        return rng.choice([lo, hi, 0, 1, -1 if lo < 0 else 2, rng.randint(lo, hi)])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "double":
        return rng.choice([0.0, -0.0, 1.5, -1e300, 5e-324, rng.uniform(-1e9, 1e9)])
    if kind == "float":
        return rng.choice([0.0, 0.5, -3.25, 1e30])  # exactly representable as f32
    if kind == "string":
        return "".join(rng.choice("aé€😀 \n\"\\") for _ in range(rng.randrange(12)))
    if kind == "bytes":
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 7, 300])))
    raise AssertionError(kind)


def message(rng, schema, name, depth=0):
    t = schema.message(name)
    out = {}
    oneofs = set()
    for fname, _number, kind, label, sub, oneof in t.fields:
        if label != "required" and rng.random() < 0.45 or oneof in oneofs:
            continue
        if oneof is not None:
            oneofs.add(oneof)
        if kind == "message" and depth >= 3 and label != "required":
            continue
        if kind == "map":
            entry = schema.message(sub).fields
            key_kind, value_kind, value_sub = entry[0][2], entry[1][2], entry[1][4]
            out[fname] = {
                scalar(rng, key_kind): value(rng, schema, value_kind, value_sub, depth)
                for _ in range(rng.randrange(4))
            }
        elif label == "repeated":
            out[fname] = [value(rng, schema, kind, sub, depth) for _ in range(rng.randrange(4))]
        else:
            out[fname] = value(rng, schema, kind, sub, depth)
    return out


def value(rng, schema, kind, sub, depth):
    if kind == "message":
        return message(rng, schema, sub, depth + 1)
    return scalar(rng, kind)


def ferry_cmd(programs, verb, name, stdin):
    args = [programs["ferry"], verb, "-I", str(SCHEMAS), "--message", name]
    for p in PROTOS:
        args += ["--proto", p]
    out = subprocess.run(args, input=stdin, capture_output=True, check=False)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


def test_random_messages_both_ways(schema, rust_programs):
    rng = random.Random(SEED)
    types = [n for n in schema.messages() if not n.endswith("Entry") and not n.startswith("google.")]
    assert "vectors.Everything" in types and "fixtures.Scalars" in types
    checked = 0
    for name in types:
        t = schema.message(name)
        for i in range(PER_TYPE):
            fields = message(rng, schema, name)
            data = t.encode(fields)
            text = t.to_json(t.decode(data))
            # Rust decodes Python's bytes to the same JSON...
            rust_json = ferry_cmd(rust_programs, "decode", name, data).decode().rstrip("\n")
            assert rust_json == text, (name, i, fields)
            # ...and encodes that JSON to the same bytes, which Python reads back.
            rust_bytes = ferry_cmd(rust_programs, "encode", name, text.encode())
            assert rust_bytes == data, (name, i, fields)
            assert t.encode(t.decode(rust_bytes).to_dict()) == data
            checked += 1
    print(f"seed {SEED}: {checked} messages of {len(types)} types")
