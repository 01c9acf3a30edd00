#!/usr/bin/env python3
"""Instructions per call of a `ferry bench rpc` configuration, per thread and function group.

    python3 crates/ferry-bench/rpc-callgrind.py SYSTEM TRANSPORT SHAPE IN_FLIGHT [--small N] [--large N]
    python3 crates/ferry-bench/rpc-callgrind.py ferry-hybrid shm 1x64 1
    python3 crates/ferry-bench/rpc-callgrind.py raw tcp 2x2048 16 --functions 25 --json out.json
    python3 crates/ferry-bench/rpc-callgrind.py ferry-hybrid udp 1x64 128 --binary /tmp/ferry-callgrind

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

TRANSPORT is tcp, tls, shm or udp (loopback). `--binary` profiles a ferry-callgrind built
before (from another tree: a before/after comparison) instead of building one here.

`--kernel` (root; perf and strace) adds what callgrind cannot see, from native runs of the
same binary, each again with N_SMALL and N_LARGE calls and differenced: each thread's CPU
time per call, user and kernel, from `perf record -e cpu-clock` samples (and the kernel's
costliest symbols); each thread's syscalls per call by name, from `strace -f` (which slows
the run, so batching may differ: counts, not times); datagrams received per call by each
side (the sum of `recvmmsg`'s results in that log: the other side's packets); and the
packets per call both ways together as the kernel counts them (`/proc/net/snmp`: UDP
InDatagrams, TCP InSegs) in a network namespace of the run's own (`unshare -n`), unslowed.

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
    ("datagram core (ferry-dgram sessions, packets)", r"ferry_dgram::(endpoint|session|packet|congestion|rtt|event|stats)::"),
    ("datagram driver (ferry-dgram udp, epoll set, timerfd)", r"ferry_dgram::(udp|conn|xdp)|^sendmmsg$|^recvmmsg$|^__libc_recvmmsg$|^__sendmmsg$|^__recvmmsg$|^epoll_wait$|^epoll_ctl$|^timerfd_settime$"),
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

SYSCALL_WRAPPERS = {"poll", "ppoll", "read", "write", "readv", "writev", "sendmsg", "recvmsg", "__libc_sendmsg", "__libc_recvmsg",
                    "sendmmsg", "recvmmsg", "__sendmmsg", "__recvmmsg", "epoll_wait", "epoll_pwait", "epoll_ctl", "timerfd_settime"}


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


def perf_cpu(binary, args, calls, out, freq):
    """CPU seconds per thread and ring (user/kernel), and the kernel's symbols, of one run."""
    served = subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "-g", "-o", out, binary, "rpc", *args, str(calls)],
        check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    # perf's `pid` key is the thread: "tid:comm". The main thread (the lowest id) is the client.
    text = subprocess.run(["perf", "report", "-i", out, "--stdio", "-n", "--no-children", "-g", "none",
                           "--sort", "pid,dso,sym", "-t", "|"],
                          check=True, capture_output=True, text=True).stdout
    rows = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split("|")]
        if line.startswith("#") or len(f) != 5 or not f[1].isdigit():
            continue
        rows.append((int(f[1]), int(f[2].split(":")[0]), f[4][:3] == "[k]", f[4][4:]))
    main = min((tid for _, tid, _, _ in rows), default=0)
    busiest = collections.Counter()
    for samples, tid, _, _ in rows:
        busiest[tid] += samples
    server = max((t for t in busiest if t != main), key=lambda t: busiest[t], default=None)
    cpu = collections.Counter()
    syms = collections.Counter()
    for samples, tid, kernel, sym in rows:
        role = "client" if tid == main else ("server" if tid == server else "other threads")
        cpu[(role, "kernel" if kernel else "user")] += samples / freq
        if kernel:
            syms[(role, sym)] += samples / freq
    return int(served), cpu, syms


def traced(binary, args, calls, out):
    """Syscalls per thread by name, and datagrams each thread received (recvmmsg's results)."""
    served = subprocess.run(["strace", "-f", "-qq", "-o", out, binary, "rpc", *args, str(calls)],
                            check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    counts = collections.defaultdict(collections.Counter)
    received = collections.Counter()
    main = None
    with open(out) as f:
        for line in f:
            m = re.match(r"(\d+)\s+(.*)$", line)
            if not m:
                continue
            tid, rest = m.group(1), m.group(2)
            main = main or tid
            resumed = re.match(r"<\.\.\. (\w+) resumed>", rest)
            if resumed:
                name = resumed.group(1)
            else:
                call = re.match(r"(\w+)\(", rest)
                if not call:
                    continue
                name = call.group(1)
                counts[tid][name] += 1
                if "<unfinished" in rest:
                    continue
            ret = re.findall(r"\)\s+=\s+(-?\d+)", rest)
            if name == "recvmmsg" and ret and int(ret[-1]) > 0:
                received[tid] += int(ret[-1])
    roles = {}
    for tid in sorted(counts, key=lambda t: -sum(counts[t].values())):
        roles[tid] = "client" if tid == main else ("server" if "server" not in roles.values() else f"thread {tid}")
    return int(served), {roles[t]: c for t, c in counts.items()}, {roles[t]: n for t, n in received.items()}


def snmp_packets(binary, args, calls):
    """Packets both ways, as the kernel counts them, in a network namespace of the run's own."""
    script = ("ip link set lo up; cat /proc/net/snmp; echo ---; "
              f"{binary} rpc {' '.join(args)} {calls}; echo ---; cat /proc/net/snmp")
    out = subprocess.run(["unshare", "-n", "sh", "-c", script], check=True, capture_output=True, text=True).stdout
    before, served, after = out.split("---\n")

    def counters(text):
        rows = [l.split() for l in text.splitlines() if l.startswith(("Udp:", "Tcp:"))]
        table = {}
        for names, values in zip(rows[0::2], rows[1::2]):
            for n, v in zip(names[1:], values[1:]):
                table[names[0] + n] = int(v)
        return table

    b, a = counters(before), counters(after)
    return int(served.strip().splitlines()[-1]), {k: a[k] - b[k] for k in ("Udp:InDatagrams", "Tcp:InSegs")}


def kernel(binary, args, small, large, result):
    """What callgrind does not see: CPU in the kernel, syscalls, packets (see the module doc)."""
    freq = 4999
    with tempfile.TemporaryDirectory() as tmp:
        n0, cpu0, _ = perf_cpu(binary, args, small, f"{tmp}/p0", freq)
        n1, cpu1, syms = perf_cpu(binary, args, large, f"{tmp}/p1", freq)
        calls = n1 - n0
        print(f"\n{' '.join(args)}: CPU per call from perf cpu-clock samples ({calls} calls)")
        cpu = {}
        for key in sorted(set(cpu0) | set(cpu1)):
            cpu[key] = (cpu1[key] - cpu0[key]) / calls * 1e9
        for role in sorted({r for r, _ in cpu}):
            u, k = cpu.get((role, "user"), 0), cpu.get((role, "kernel"), 0)
            print(f"  {role:<10} user {u:8,.0f} ns  kernel {k:8,.0f} ns  total {u + k:8,.0f} ns")
            top = sorted(((v, s) for (r, s), v in syms.items() if r == role), reverse=True)[:12]
            total_k = sum(v for (r, _), v in syms.items() if r == role) or 1
            for v, s in top:
                print(f"      {100 * v / total_k:5.1f} %  {s[:100]}")
        result["cpu_ns_per_call"] = {f"{r} {ring}": round(v, 1) for (r, ring), v in cpu.items()}
        t0, c0, r0 = traced(binary, args, small, f"{tmp}/s0")
        t1, c1, r1 = traced(binary, args, large, f"{tmp}/s1")
        calls = t1 - t0
        print(f"\n{' '.join(args)}: syscalls per call from strace -f ({calls} calls; counts, the run slowed)")
        result["syscalls_per_call"] = {}
        for role in sorted(set(c0) | set(c1)):
            per = {n: (c1.get(role, {}).get(n, 0) - c0.get(role, {}).get(n, 0)) / calls
                   for n in set(c0.get(role, {})) | set(c1.get(role, {}))}
            per = {n: v for n, v in per.items() if abs(v) >= 0.005}
            got = (r1.get(role, 0) - r0.get(role, 0)) / calls
            print(f"  {role:<10} {sum(per.values()):6.2f}: " + ", ".join(f"{n} {v:.2f}" for n, v in sorted(per.items(), key=lambda kv: -kv[1]))
                  + (f"; datagrams received {got:.2f}" if got else ""))
            result["syscalls_per_call"][role] = {"total": round(sum(per.values()), 3), "datagrams_received": round(got, 3),
                                                 **{n: round(v, 3) for n, v in per.items()}}
        u0, p0 = snmp_packets(binary, args, small)
        u1, p1 = snmp_packets(binary, args, large)
        calls = u1 - u0
        packets = {k: (p1[k] - p0[k]) / calls for k in p0}
        print(f"\n{' '.join(args)}: packets per call, both ways, the kernel's count in a namespace of its own ({calls} calls): "
              + ", ".join(f"{k} {v:.2f}" for k, v in packets.items()))
        result["packets_per_call"] = packets


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
    p.add_argument("--binary", help="a ferry-callgrind to profile instead of building one")
    p.add_argument("--kernel", action="store_true", help="also perf and strace runs: kernel CPU, syscalls, packets (root)")
    p.add_argument("--no-callgrind", action="store_true", help="with --kernel: only those runs")
    a = p.parse_args()
    binary = a.binary or build()
    args = [a.system, a.transport, a.shape, a.in_flight]
    result = {"config": " ".join(args), "threads": {}}
    if a.kernel:
        kernel(binary, args, a.small, a.large, result)
    if a.no_callgrind:
        if a.json:
            pathlib.Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
        return
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
