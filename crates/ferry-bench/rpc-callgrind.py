#!/usr/bin/env python3
"""Instructions per call of a `ferry bench rpc` configuration, per thread and function group.

    python3 crates/ferry-bench/rpc-callgrind.py SYSTEM TRANSPORT SHAPE IN_FLIGHT [--small N] [--large N]
    python3 crates/ferry-bench/rpc-callgrind.py ferry-hybrid shm 1x64 1
    python3 crates/ferry-bench/rpc-callgrind.py raw tcp 2x2048 16 --functions 25 --json out.json

Runs `ferry-callgrind rpc SYSTEM TRANSPORT SHAPE IN_FLIGHT CALLS` under
`valgrind --tool=callgrind --separate-threads=yes` twice, with N_SMALL and N_LARGE measured
calls. Process start, server start, connection set-up and shutdown cost the same in both
runs, so every function's instructions per call is its difference divided by the difference
in calls the server answered. Thread 1 is the client (the calling thread's event loop),
thread 2 the server loop. Counts are user space only (callgrind does not see the kernel),
and deterministic up to how often the loops go to sleep.

The server loop sleeps in poll(2) when it has nothing to do (`server_spin: ZERO`): under
valgrind a busy-polling loop runs empty turns for as long as valgrind lets it, which would
swamp the count. Its sleep and wake-up (arming shared-memory sessions, poll(2), the eventfd
doorbells) are therefore counted in their own group, "sleep/wake": a busy-polling server
(the benchmark's configuration) does not pay them, but pays empty turns instead.

Functions are grouped by name (self cost, the first matching rule of GROUPS wins). Allocation,
hashing and memcpy are their own groups: they are called from every layer.
Standard library only.
"""

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

# (group, regex on the demangled function name); first match wins.
GROUPS = [
    ("allocation (malloc/free)", r"^(malloc|free|calloc|realloc|cfree|_int_\w+|malloc_consolidate|unlink_chunk|tcache\w*|__libc_(malloc|free|calloc)|__rdl_\w+|__rust_(alloc|dealloc|realloc|alloc_zeroed|no_alloc\w*)|__rustc::__r\w+)$|arena\.c|alloc::raw_vec::|RawVec|finish_grow|grow_one|do_reserve_and_handle|alloc::alloc::"),
    ("hashing (SipHash HashMaps)", r"hash_one|Hasher|sip::|hashbrown::"),
    ("memcpy/memset", r"__mem(cpy|move|set)|memcpy|memmove|memset"),
    ("sleep/wake (poll(2), doorbells)", r"EventLoop::arm|EventLoop::sleep_time|Waker|announce_sleep|hung_up|ShmConnection::try_recv|^poll$|^ppoll$|^read$|^write$|^eventfd|pthread_(en|dis)able_asynccancel|ferry_rpc::sys::|rustix::backend::event"),
    ("transport receive", r"ShmConnection::poll_recv|ShmConnection::push_ready|Endpoint::poll|Endpoint::next|Endpoint::publish_acks|ferry_shm::proto::Hold|ShmFrame|Conn::poll_recv|Conn::try_recv|ferry_net::reader|ferry_net::receiver|Connection::try_recv|Connection::recv|^readv$|^recv|FrameReader|FrameHeader::parse"),
    ("send (transport)", r"ferry_shm::proto::Endpoint::(send|publish|room|queued|flush)|ferry_shm::proto::ring|ShmConnection::(send|flush|make_room|queued|send_payload)|MsgHeader::write|ferry_net::sender|ferry_net::queue|ferry_net::conn::Connection::(send|flush|send_payload)|ferry_net::sys|^writev$|^sendmsg$|^__libc_sendmsg$|Session::(flush|transmit)|FrameHeader::write|Conn::(send|flush|send_payload)"),
    ("pool buffers (ferry-buf)", r"ferry_buf::"),
    ("serialization", r"ferry_wire::encode|ferry_wire::layout|write_head|Sizer|HeaderWriter|to_message|HybridBytes|View::hybrid|BytesList::hybrid|drop_in_place<ferry_wire::sample::Record|ferry_wire::sample::Record|prost::encoding::.*encode|encoded_len|Message>::encode|flatbuffers::builder|FlatBufferBuilder|capnp::message::Builder|capnp::private::layout::.*Builder|capnp::serialize::write|ScratchSpace|Codec>::echo|Codec>::encode|FlatbufSerializer|CapnpSerializer|ProstSerializer|bytes::bytes|bytes::bytes_mut"),
    ("benchmark client (build, check, time)", r"ferry_bench::rpc::client|hdrhistogram|Histogram"),
    ("handler and decoding", r"ferry_wire::decode|Validator|View::|RecordView|BenchService|Request::decode|Received>::view|Incoming::|prost::encoding|::decode|::merge|flatbuffers::|capnp::|Codec>::read|ferry_bench::"),
    ("RPC core (sessions, dispatch, metrics)", r"ferry_rpc::(session|wire|services|metrics|service|event_loop::handler_outcome|event_loop::EventLoop::(on_frame|request|call|start_call|call_payload)|event_loop::session|status)|SessionOutbox|Reply|prometheus|__rust_try|catch_unwind|Instant>::elapsed|tracing|Continuation|FnOnce|ferry_bench::rpc::client"),
    ("loop overhead", r"ferry_rpc::event_loop|ferry_rpc::server::run_loop|ferry_rpc::conn|Instant>::now|Instant>::duration_since|Timespec|clock_gettime|vdso|mpmc|mpsc|vec_deque|alloc::vec::|core::ptr::drop_in_place"),
]

SYSCALL_WRAPPERS = {"poll", "ppoll", "read", "write", "readv", "writev", "sendmsg", "recvmsg", "__libc_sendmsg", "__libc_recvmsg"}


def build():
    here = pathlib.Path(__file__).resolve().parent
    out = subprocess.run(
        ["cargo", "build", "--quiet", "--profile", "bench", "--manifest-path", str(here / "Cargo.toml"),
         "--bin", "ferry-callgrind", "--message-format=json"],
        check=True, capture_output=True, text=True).stdout
    exes = [json.loads(l).get("executable") for l in out.splitlines() if '"executable"' in l]
    exes = [e for e in exes if e and e.endswith("ferry-callgrind")]
    if not exes:
        sys.exit("rpc-callgrind.py: could not build ferry-callgrind")
    return exes[-1]


def run(binary, args, calls, out):
    served = subprocess.run(
        ["valgrind", "--quiet", "--tool=callgrind", "--separate-threads=yes",
         f"--callgrind-out-file={out}", binary, "rpc", *args, str(calls)],
        check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return int(served)


def functions(path):
    """Self cost per function (summed over the files its code came from), and the calls of
    syscall wrappers."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=no", path],
                          check=True, capture_output=True, text=True).stdout
    cost = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$", line)
        if not m or m.group(2).startswith("PROGRAM TOTALS"):
            continue
        where = re.sub(r"\s*\[[^\]]*\]\s*$", "", m.group(2))
        name = where.split(":", 1)[1] if ":" in where else where
        cost[name] += int(m.group(1).replace(",", ""))
    return cost


def calls_of(path, names):
    """How often each function in `names` was called (from the call-graph records)."""
    counts = collections.Counter()
    current = None
    fn_names = {}
    with open(path) as f:
        for line in f:
            if line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.strip())
                if m:
                    if m.group(2):
                        fn_names[m.group(1)] = m.group(2)
                    current = fn_names.get(m.group(1))
            elif line.startswith("fn="):
                m = re.match(r"fn=\((\d+)\)(?: (.*))?", line.strip())
                if m and m.group(2):
                    fn_names[m.group(1)] = m.group(2)
            elif line.startswith("calls=") and current in names:
                counts[current] += int(line.split("=", 1)[1].split()[0])
    return counts


def group_of(name):
    for group, pattern in GROUPS:
        if re.search(pattern, name):
            return group
    return "other"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("system")
    p.add_argument("transport")
    p.add_argument("shape", help="<fields>x<bytes>, e.g. 2x2048")
    p.add_argument("in_flight")
    p.add_argument("--small", type=int, default=2000, help="measured calls of the first run")
    p.add_argument("--large", type=int, default=12000, help="measured calls of the second run")
    p.add_argument("--functions", type=int, default=0, help="also list the N costliest functions per thread")
    p.add_argument("--json", help="write the groups (and functions) here")
    a = p.parse_args()
    binary = build()
    args = [a.system, a.transport, a.shape, a.in_flight]
    result = {"config": " ".join(args), "threads": {}}
    with tempfile.TemporaryDirectory() as tmp:
        small = run(binary, args, a.small, f"{tmp}/small")
        large = run(binary, args, a.large, f"{tmp}/large")
        calls = large - small
        result["calls"] = calls
        for tid, role in (("01", "client"), ("02", "server")):
            fs = functions(f"{tmp}/small-{tid}")
            fl = functions(f"{tmp}/large-{tid}")
            per_call = {k: (fl.get(k, 0) - fs.get(k, 0)) / calls for k in set(fs) | set(fl)}
            groups = collections.Counter()
            for name, ir in per_call.items():
                groups[group_of(name)] += ir
            sc = calls_of(f"{tmp}/large-{tid}", SYSCALL_WRAPPERS)
            ss = calls_of(f"{tmp}/small-{tid}", SYSCALL_WRAPPERS)
            syscalls = {k: (sc[k] - ss[k]) / calls for k in SYSCALL_WRAPPERS if sc[k] - ss[k]}
            total = sum(per_call.values())
            print(f"\n{' '.join(args)}: {role} thread, instructions per call ({calls} calls, total {total:,.0f})")
            for group, ir in sorted(groups.items(), key=lambda kv: -kv[1]):
                print(f"  {group:<40} {ir:>9,.0f}  {100 * ir / total:5.1f} %")
            if syscalls:
                print("  system calls per call: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(syscalls.items())))
            top = sorted(per_call.items(), key=lambda kv: -kv[1])[: a.functions]
            for name, ir in top:
                print(f"    {ir:>8,.0f}  [{group_of(name)}] {name[:150]}")
            result["threads"][role] = {
                "total": round(total, 1),
                "groups": {g: round(v, 1) for g, v in groups.items()},
                "syscalls_per_call": syscalls,
                "functions": {n: round(v, 1) for n, v in top},
            }
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
