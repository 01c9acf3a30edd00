"""Decode and read every field: Ferry's Python package against google.protobuf (its default
upb backend), in one run. Usage (from the repository root, after `pip install ./bindings/python
protobuf`):

    python3 bindings/python/benches/decode.py [--seconds S]

Shapes: `muser` (ferry_bench.Record: a 24-byte key and 10 fields of 100 bytes, the muSer
shape of crates/ferry-bench) and `bytes-<n>` (one `bytes` field of n bytes: 1 KiB, 64 KiB,
1 MiB). Each run decodes the same encoded message and reads every field (the length of each
`bytes` value: a memoryview of the received buffer for Ferry, a `bytes` object for
protobuf). It prints the least time per message over 15 interleaved rounds, in ns, and the ratio, and checks that
Ferry's 1 MiB value lies inside the received buffer (its address, through the buffer protocol).
"""

import argparse
import ctypes
import pathlib
import platform
import tempfile
import timeit

import ferry
from google.protobuf import __version__ as protobuf_version
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal import api_implementation

RECORD_PROTO = """syntax = "proto3";
package ferry_bench;
message Record { bytes key = 1; repeated bytes fields = 2; }
message Blob { bytes data = 1; }
"""


def protobuf_classes():
    """The same two messages as protobuf classes, built at run time (no protoc)."""
    f = descriptor_pb2.FileDescriptorProto(name="bench.proto", package="ferry_bench", syntax="proto3")
    B = descriptor_pb2.FieldDescriptorProto
    r = f.message_type.add(name="Record")
    r.field.add(name="key", number=1, type=B.TYPE_BYTES, label=B.LABEL_OPTIONAL)
    r.field.add(name="fields", number=2, type=B.TYPE_BYTES, label=B.LABEL_REPEATED)
    b = f.message_type.add(name="Blob")
    b.field.add(name="data", number=1, type=B.TYPE_BYTES, label=B.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    get = message_factory.GetMessageClass
    return get(pool.FindMessageTypeByName("ferry_bench.Record")), get(pool.FindMessageTypeByName("ferry_bench.Blob"))


class Py_buffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


def address(obj):
    """The address of the memory `obj` (bytes, memoryview) exposes."""
    view = Py_buffer()
    ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(obj), ctypes.byref(view), 0)
    try:
        return view.buf
    finally:
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))


def best_ns(fns, seconds, rounds=15):
    """The least time per call of each of `fns`, over `rounds` rounds that run each in turn
    (interleaved, so that a busy moment of the machine hits both systems alike) for about
    `seconds` / `rounds` each."""
    timers = [timeit.Timer(fn) for fn in fns]
    numbers = []
    for t in timers:
        n, took = t.autorange()
        numbers.append(max(1, int(n * seconds / rounds / max(took, 1e-9))))
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, t in enumerate(timers):
            best[i] = min(best[i], t.timeit(numbers[i]) / numbers[i] * 1e9)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0, help="time per shape and system")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proto = pathlib.Path(tmp) / "bench.proto"
        proto.write_text(RECORD_PROTO)
        schema = ferry.Schema.load([str(proto)], includes=[tmp])
    FRecord, FBlob = schema.message("ferry_bench.Record"), schema.message("ferry_bench.Blob")
    PRecord, PBlob = protobuf_classes()

    key, fields = bytes(range(24)), [bytes([i]) * 100 for i in range(10)]
    cases = [("muser", FRecord.encode(key=key, fields=fields),
              PRecord(key=key, fields=fields).SerializeToString(), "record")]
    for n in (1 << 10, 64 << 10, 1 << 20):
        blob = bytes(range(256)) * (n // 256)
        cases.append((f"bytes-{n}", FBlob.encode(data=blob), PBlob(data=blob).SerializeToString(), "blob"))

    def ferry_record(data):
        v = FRecord.decode(data)
        return len(v.key) + sum(len(f) for f in v.fields)

    def protobuf_record(data):
        m = PRecord.FromString(data)
        return len(m.key) + sum(len(f) for f in m.fields)

    def ferry_blob(data):
        return len(FBlob.decode(data).data)

    def protobuf_blob(data):
        return len(PBlob.FromString(data).data)

    readers = {"record": (ferry_record, protobuf_record), "blob": (ferry_blob, protobuf_blob)}
    print(f"python {platform.python_version()}, protobuf {protobuf_version} "
          f"({api_implementation.Type()} backend), ferry {ferry.__name__}")
    print(f"{'shape':<14}{'ferry ns':>12}{'protobuf ns':>14}{'protobuf/ferry':>16}")
    for name, fdata, pdata, kind in cases:
        fr, pr = readers[kind]
        assert fr(fdata) == pr(pdata)
        f_ns, p_ns = best_ns([lambda: fr(fdata), lambda: pr(pdata)], args.seconds)
        print(f"{name:<14}{f_ns:>12.0f}{p_ns:>14.0f}{p_ns / f_ns:>15.2f}x")

    # The floor of a zero-copy reader in CPython: one memoryview per value (muSer: 11), made
    # by slicing a memoryview of the received buffer, as Ferry does.
    data = cases[0][1]
    whole = memoryview(data)
    spans = [(i * 100, i * 100 + 100) for i in range(11)]
    [floor_ns] = best_ns([lambda: sum(len(whole[a:b]) for a, b in spans)], args.seconds / 2)
    print(f"floor: 11 memoryview slices in pure Python: {floor_ns:.0f} ns")

    data = cases[-1][1]
    mv = FBlob.decode(data).data
    start, at = address(data), address(mv)
    inside = start <= at and at + len(mv) <= start + len(data)
    print(f"1 MiB value at received buffer + {at - start} (inside: {inside}; buffer {len(data)} B)")
    assert inside


if __name__ == "__main__":
    main()
