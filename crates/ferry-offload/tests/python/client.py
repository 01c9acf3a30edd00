"""A grpcio client calls the demo service through the engine and on the reference tonic server,
unchanged but for the address, and checks that both answer the same (run by
tests/python_client.rs).

It compiles demo.proto with grpc_tools.protoc into a temporary folder and uses the generated
stub, as any grpcio user does. Checks (--check):

- echo: seeded random Kinds with every field kind (all scalar kinds with their extremes and
  negatives, special floats, enums known and unknown, unicode strings, bytes up to 100 KiB,
  nested and recursive messages, repeated fields, maps of every key kind, the oneof, optional
  fields set to their defaults): the engine's answer equals the reference's and the request.
- paper: random Small, Ints and Chars: the same Ack from both, and the count and sum the
  request implies.
- statuses: Fail with every code gives that code and message on both; unknown methods and
  services give UNIMPLEMENTED; a deadline shorter than Sleep gives DEADLINE_EXCEEDED.
- compression (the engine only; the reference server has no compression): requests gzipped
  by a channel with compression=Gzip, gzipped and deflated per call, and uncompressed (the
  engine, started with gzip answers, compresses the answer grpcio accepts) echo back equal to
  the request.

Exits 0 when everything agreed; prints each difference and exits 1 otherwise.
"""

import argparse
import math
import os
import random
import struct
import sys
import tempfile

import grpc
from grpc_tools import protoc
from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor as FD

TIMEOUT = 30.0  # seconds, per call
FAILURES = []


def fail(what):
    FAILURES.append(what)
    print("DIFFERS: " + what, flush=True)


def compile_proto(proto_dir, out_dir):
    args = ["protoc", "-I" + proto_dir, "--python_out=" + out_dir, "--grpc_python_out=" + out_dir,
            "ferry/offload/demo.proto"]
    if protoc.main(args) != 0:
        sys.exit("protoc could not compile demo.proto from " + proto_dir)
    # Regular packages, not namespace ones: an installed package named `ferry` (Ferry's own
    # Python bindings) would otherwise win over the generated `ferry.offload` wherever it sits
    # on the path.
    for package in ["ferry", "ferry/offload"]:
        open(os.path.join(out_dir, package, "__init__.py"), "a").close()
    sys.path.insert(0, out_dir)
    from ferry.offload import demo_pb2, demo_pb2_grpc
    return demo_pb2, demo_pb2_grpc


# Random values ------------------------------------------------------------------------------

INT_RANGES = {
    FD.TYPE_INT32: (-2**31, 2**31 - 1), FD.TYPE_SINT32: (-2**31, 2**31 - 1),
    FD.TYPE_SFIXED32: (-2**31, 2**31 - 1), FD.TYPE_INT64: (-2**63, 2**63 - 1),
    FD.TYPE_SINT64: (-2**63, 2**63 - 1), FD.TYPE_SFIXED64: (-2**63, 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1), FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1), FD.TYPE_FIXED64: (0, 2**64 - 1),
}

# Code points from several scripts and planes (no surrogates).
ALPHABETS = [(0x20, 0x7e), (0xa0, 0x24f), (0x400, 0x4ff), (0x4e00, 0x9fff), (0x1f300, 0x1f64f),
             (0x10000, 0x1007f)]

SPECIAL_FLOATS = [math.inf, -math.inf, math.nan, 1.5, -0.25, 3.4028234663852886e38, 1e-45]


class Gen:
    """Seeded random messages; `budget` caps the large values of one message (the engine's
    test limit is 1 MiB a message)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.budget = 0

    def int_value(self, kind):
        lo, hi = INT_RANGES[kind]
        r = self.rng.random()
        if r < 0.2:
            return self.rng.choice([lo, hi, 0, 1, -1 if lo < 0 else 2])
        if r < 0.6:  # small, so that varints of every length appear
            bits = self.rng.randrange(1, (hi - lo).bit_length())
            v = self.rng.randrange(0, 2**bits)
            return -v if lo < 0 and self.rng.random() < 0.5 and -v >= lo else min(v, hi)
        return self.rng.randint(lo, hi)

    def float_value(self, kind, singular):
        if self.rng.random() < 0.3:
            v = self.rng.choice(SPECIAL_FLOATS)
        elif kind == FD.TYPE_FLOAT:
            v = struct.unpack("<f", self.rng.randbytes(4))[0]
        else:
            v = struct.unpack("<d", self.rng.randbytes(8))[0]
        if singular and v == 0.0:
            # -0.0 in a singular field: prost (the reference) drops it as a default, protobuf
            # writes it; not a difference this test is about.
            v = 2.0
        return v

    def string_value(self):
        if self.budget > 0 and self.rng.random() < 0.03:
            n = self.rng.randrange(10_000, 30_000)
            self.budget -= 4 * n
        else:
            n = self.rng.choice([0, 1, 3, 8, 40])
        lo, hi = self.rng.choice(ALPHABETS)
        return "".join(chr(self.rng.randint(*self.rng.choice([(lo, hi), (0x20, 0x7e)]))) for _ in range(n))

    def bytes_value(self):
        if self.budget > 0 and self.rng.random() < 0.05:
            n = self.rng.choice([100 * 1024, self.rng.randrange(5_000, 60_000)])
            self.budget -= n
        else:
            n = self.rng.choice([0, 1, 7, 64, 300])
        return self.rng.randbytes(n)

    def scalar(self, field, singular):
        t = field.type
        if t in INT_RANGES:
            return self.int_value(t)
        if t in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
            return self.float_value(t, singular)
        if t == FD.TYPE_BOOL:
            return self.rng.random() < 0.5
        if t == FD.TYPE_ENUM:
            known = [v.number for v in field.enum_type.values]
            # proto3 enums are open: an unknown number must pass through too.
            return self.rng.choice(known + [9]) if self.rng.random() < 0.9 else -100
        if t == FD.TYPE_STRING:
            return self.string_value()
        if t == FD.TYPE_BYTES:
            return self.bytes_value()
        raise ValueError("no generator for field type %d (%s)" % (t, field.full_name))

    def message(self, msg, depth):
        """Fills `msg` at random (recursion stops at depth 3)."""
        oneof_pick = {}
        for oneof in msg.DESCRIPTOR.oneofs:
            members = [f.name for f in oneof.fields]
            # proto3 optional fields sit alone in a synthetic oneof (named _<field>).
            if len(members) > 1:
                oneof_pick[oneof.name] = self.rng.choice(members + [None])
        for field in msg.DESCRIPTOR.fields:
            oneof = field.containing_oneof
            if oneof is not None and oneof.name in oneof_pick:
                if oneof_pick[oneof.name] != field.name:
                    continue
                self.set_singular(msg, field, depth, force=True)
                continue
            # Sparser deeper down, so that recursion stays small.
            if self.rng.random() < (0.35 if depth == 0 else 0.75):
                continue
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                self.fill_map(getattr(msg, field.name), field.message_type, depth)
            elif field.is_repeated:
                self.fill_repeated(getattr(msg, field.name), field, depth)
            else:
                self.set_singular(msg, field, depth, force=field.has_presence)
        return msg

    def set_singular(self, msg, field, depth, force):
        if field.message_type is not None:
            if depth < 3:
                self.message(getattr(msg, field.name), depth + 1)
            elif force:
                getattr(msg, field.name).SetInParent()
            return
        if force and self.rng.random() < 0.3:
            # Presence: the default value, set, must stay set.
            setattr(msg, field.name, field.default_value)
        else:
            setattr(msg, field.name, self.scalar(field, singular=True))

    def count(self, depth):
        if depth > 0:
            return self.rng.choice([0, 1, 2, 5])
        return self.rng.choice([0, 1, 2, 5, 20, 200]) if self.rng.random() < 0.9 else 1000

    def fill_repeated(self, values, field, depth):
        if field.message_type is not None:
            for _ in range(self.rng.choice([0, 1, 2, 4]) if depth < 3 else 0):
                self.message(values.add(), depth + 1)
            return
        n = self.count(depth)
        if field.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
            n = min(n, 20)
        values.extend(self.scalar(field, singular=False) for _ in range(n))

    def fill_map(self, entries, entry_type, depth):
        key_field = entry_type.fields_by_name["key"]
        value_field = entry_type.fields_by_name["value"]
        for _ in range(self.rng.choice([0, 1, 3, 10] if depth == 0 else [0, 1, 2])):
            key = self.scalar(key_field, singular=False)
            if value_field.message_type is not None:
                if depth < 3:
                    self.message(entries[key], depth + 1)
                else:
                    entries[key].SetInParent()
            else:
                entries[key] = self.scalar(value_field, singular=False)

    def kinds(self, pb):
        # Under the engine's 1 MiB limit (a larger one is drawn again).
        while True:
            self.budget = 300 * 1024
            msg = self.message(pb.Kinds(), 0)
            if msg.ByteSize() < 900 * 1024:
                return msg


# Comparison ---------------------------------------------------------------------------------

def encoded(msg):
    # Deterministic: map entries in key order, so equal messages give equal bytes (NaN too,
    # which == does not equate).
    return msg.SerializeToString(deterministic=True)


def differences(got, want, path=""):
    """The fields where `got` and `want` differ, by name, for the failure message."""
    out = []
    names = {f.name for f, _ in got.ListFields()} | {f.name for f, _ in want.ListFields()}
    for name in sorted(names):
        field = want.DESCRIPTOR.fields_by_name[name]
        a, b = getattr(got, name), getattr(want, name)
        if field.message_type is not None and not field.is_repeated:
            if encoded(a) != encoded(b):
                out += differences(a, b, path + name + ".")
        elif field.has_presence and got.HasField(name) != want.HasField(name):
            out.append("%s%s: present %s, expected %s" % (path, name, got.HasField(name), want.HasField(name)))
        elif repr(list(a) if field.is_repeated else a) != repr(list(b) if field.is_repeated else b):
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                a, b = dict(sorted(a.items())), dict(sorted(b.items()))
            out.append("%s%s: %s, expected %s" % (path, name, short(a), short(b)))
    return out


def short(value):
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "... (%d chars)" % len(text)


def same_message(what, got, want):
    if encoded(got) == encoded(want):
        return True
    diff = differences(got, want) or ["(no field differs by value: %s vs %s)" % (
        short(text_format.MessageToString(got)), short(text_format.MessageToString(want)))]
    fail("%s:\n    %s" % (what, "\n    ".join(diff)))
    return False


def call(what, method, request, **kwargs):
    """The answer, or the status as an RpcError (returned, not raised)."""
    try:
        return method(request, timeout=kwargs.pop("timeout", TIMEOUT), **kwargs)
    except grpc.RpcError as e:
        return e


def status_text(e):
    return "%s %r" % (e.code(), e.details())


# Checks -------------------------------------------------------------------------------------

def check_echo(pb, engine, reference, gen, count):
    large = 0
    total = 0
    for i in range(count):
        request = gen.kinds(pb)
        size = request.ByteSize()
        total += size
        large += size > 64 * 1024
        got = call("echo", engine.Echo, request)
        want = call("echo", reference.Echo, request)
        if isinstance(want, grpc.RpcError):
            fail("request %d (%d bytes): the reference server failed: %s" % (i, size, status_text(want)))
            continue
        if isinstance(got, grpc.RpcError):
            fail("request %d (%d bytes): the engine failed: %s" % (i, size, status_text(got)))
            continue
        if same_message("request %d (%d bytes): the engine's answer vs the reference's" % (i, size), got, want):
            same_message("request %d (%d bytes): the answer vs the request" % (i, size), got, request)
    if large == 0:
        fail("no request was larger than 64 KiB: the generator did not exercise large values")
    print("echo: %d requests, %d bytes, %d over 64 KiB" % (count, total, large))


def check_paper(pb, engine, reference, gen):
    rng = gen.rng
    for i in range(30):
        small = pb.Small(id=rng.randrange(2**32), timestamp=rng.randint(-2**63, 2**63 - 1),
                         flag=rng.random() < 0.5, score=struct.unpack("<f", struct.pack("<f", rng.uniform(-1e6, 1e6)))[0],
                         tag=gen.string_value())
        ints = pb.Ints(values=[rng.randrange(2**rng.randrange(1, 33)) for _ in range(rng.choice([0, 1, 512, 5000]))])
        chars = pb.Chars(text=gen.string_value() * rng.choice([1, 100]))
        for name, request, count, digest in [
            ("SendSmall", small, 1, None),
            ("SendInts", ints, len(ints.values), sum(ints.values) % 2**64),
            ("SendChars", chars, len(chars.text.encode("utf-8")), None),
        ]:
            got = call(name, getattr(engine, name), request)
            want = call(name, getattr(reference, name), request)
            if isinstance(got, grpc.RpcError) or isinstance(want, grpc.RpcError):
                fail("%s %d: engine %s, reference %s" % (name, i, got, want))
                continue
            same_message("%s %d: the engine's Ack vs the reference's" % (name, i), got, want)
            if got.count != count or (digest is not None and got.digest != digest):
                fail("%s %d: Ack %s, expected count %d digest %s" % (name, i, short(got), count, digest))
    print("paper: 30 of each of Small, Ints, Chars")


def check_statuses(pb, engine, reference, engine_channel, reference_channel):
    by_number = {s.value[0]: s for s in grpc.StatusCode}
    for code in range(1, 17):
        message = "asked for %d: ünïcode" % code
        got = call("fail", engine.Fail, pb.FailRequest(code=code, message=message))
        want = call("fail", reference.Fail, pb.FailRequest(code=code, message=message))
        for side, e in [("engine", got), ("reference", want)]:
            if not isinstance(e, grpc.RpcError):
                fail("Fail(%d) on the %s succeeded: %s" % (code, side, short(e)))
            elif e.code() != by_number[code] or e.details() != message:
                fail("Fail(%d) on the %s: %s, expected %s %r" % (code, side, status_text(e), by_number[code], message))
    for path in ["/ferry.offload.demo.Demo/Nope", "/no.such.Service/Method"]:
        for side, channel in [("engine", engine_channel), ("reference", reference_channel)]:
            method = channel.unary_unary(path, request_serializer=pb.Empty.SerializeToString,
                                         response_deserializer=pb.Empty.FromString)
            e = call(path, method, pb.Empty())
            if not isinstance(e, grpc.RpcError) or e.code() != grpc.StatusCode.UNIMPLEMENTED:
                fail("%s on the %s: %s, expected UNIMPLEMENTED" % (path, side, status_text(e) if isinstance(e, grpc.RpcError) else e))
    for side, stub in [("engine", engine), ("reference", reference)]:
        e = call("sleep", stub.Sleep, pb.SleepRequest(millis=3000), timeout=0.2)
        # A tonic server enforces grpc-timeout itself and answers CANCELLED "Timeout expired"
        # when that timer fires before grpcio's own: the reference may give either. The
        # engine's deadline ends before tonic's, so it always says DEADLINE_EXCEEDED.
        tonic_timeout = (side == "reference" and isinstance(e, grpc.RpcError)
                         and e.code() == grpc.StatusCode.CANCELLED and e.details() == "Timeout expired")
        if tonic_timeout:
            pass
        elif not isinstance(e, grpc.RpcError) or e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            fail("Sleep(3000 ms) under a 200 ms deadline on the %s: %s, expected DEADLINE_EXCEEDED"
                 % (side, status_text(e) if isinstance(e, grpc.RpcError) else short(e)))
        reply = call("sleep", stub.Sleep, pb.SleepRequest(millis=1))
        if isinstance(reply, grpc.RpcError):
            fail("Sleep(1 ms) on the %s: %s" % (side, status_text(reply)))
    print("statuses: codes 1..16, unknown methods, a deadline")


def check_compression(pb, pb_grpc, engine_address, engine, gen, options):
    compressible = pb.Kinds(f_string="compressible " * 20000, f_bytes=bytes(50000))
    requests = [compressible, pb.Kinds(f_int32=7)] + [gen.kinds(pb) for _ in range(20)]
    with grpc.insecure_channel(engine_address, options=options,
                               compression=grpc.Compression.Gzip) as gzip_channel:
        gzipped = pb_grpc.DemoStub(gzip_channel)
        for how, method, kwargs in [
            ("a gzip channel", gzipped.Echo, {}),
            ("gzip per call", engine.Echo, {"compression": grpc.Compression.Gzip}),
            ("deflate per call", engine.Echo, {"compression": grpc.Compression.Deflate}),
            ("a gzip channel, no compression for the call", gzipped.Echo,
             {"compression": grpc.Compression.NoCompression}),
            ("uncompressed", engine.Echo, {}),
        ]:
            for i, request in enumerate(requests):
                got = call("echo", method, request, **kwargs)
                what = "%s, request %d (%d bytes)" % (how, i, request.ByteSize())
                if isinstance(got, grpc.RpcError):
                    fail("%s: the engine failed: %s" % (what, status_text(got)))
                else:
                    same_message("%s: the answer vs the request" % what, got, request)
    print("compression: %d requests each gzipped by the channel, gzipped, deflated and plain per call"
          % len(requests))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--proto-dir", required=True)
    parser.add_argument("--check", required=True, choices=["echo", "paper", "statuses", "compression"])
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    print("grpcio %s, seed %d" % (grpc.__version__, args.seed))

    with tempfile.TemporaryDirectory() as out_dir:
        pb, pb_grpc = compile_proto(args.proto_dir, out_dir)
        options = [("grpc.max_receive_message_length", 4 << 20), ("grpc.max_send_message_length", 4 << 20)]
        with grpc.insecure_channel(args.engine, options=options) as engine_channel, \
                grpc.insecure_channel(args.reference, options=options) as reference_channel:
            for ch in (engine_channel, reference_channel):
                grpc.channel_ready_future(ch).result(timeout=TIMEOUT)
            engine = pb_grpc.DemoStub(engine_channel)
            reference = pb_grpc.DemoStub(reference_channel)
            gen = Gen(args.seed)
            if args.check == "echo":
                check_echo(pb, engine, reference, gen, args.count)
            elif args.check == "paper":
                check_paper(pb, engine, reference, gen)
            elif args.check == "compression":
                check_compression(pb, pb_grpc, args.engine, engine, gen, options)
            else:
                check_statuses(pb, engine, reference, engine_channel, reference_channel)

    if FAILURES:
        print("%d difference(s)" % len(FAILURES))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
