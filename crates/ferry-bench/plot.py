#!/usr/bin/env python3
"""Plots and raw data of the ferry-bench results for docs/benchmarks/core.md.

    python3 crates/ferry-bench/plot.py [--criterion DIR ...] [--callgrind FILE] [--out DIR]

Inputs:
  --criterion DIR  a Criterion output directory (`target/criterion`, or a copy of it saved
                   after each run). Repeat it to combine runs: every benchmark's value is the
                   median over the runs that measured it, and the spread (min..max) is kept.
                   A benchmark whose samples are byte-identical in two directories (a copy
                   that was not re-measured) counts once. Default: target/criterion.
  --callgrind FILE the stdout of `run-callgrind.sh` (`op system shape Ir/op x-memcpy` rows).
                   Default: target/criterion-core/callgrind.txt, if present.
  --out DIR        where the PNGs and core-results.json go. Default: docs/benchmarks.

Outputs (in --out):
  core-size-sweep.png   serialize ns/op (and Ir/op) vs field size, 64 B .. 64 KiB, log-log
  core-count-sweep.png  serialize ns/op (and Ir/op) vs field count, 1 .. 16 x 512 B
  core-headline.png     serialize ns/op per system as a ratio to memcpy, muser / echo / kv8k / google16
  core-decode.png       decode + read every field of muser, ns/op per decoder
  core-results.json     every median per run, the median over runs, spread, Ir/op
It also prints Markdown tables of the headline and sweep results to stdout.

Needs matplotlib (`pip install matplotlib`); reading uses the standard library only.
"""

import argparse
import hashlib
import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADLINE = ["muser", "echo", "kv8k", "google16"]
SWEEP_SYSTEMS = ["memcpy", "prost", "ferry_copy", "ferry", "ferry_zc"]
SERIALIZERS = ["memcpy", "prost", "ferry_copy", "ferry", "ferry_zc", "flatbuf", "capnp", "rkyv"]
DECODERS = ["ferry", "prost", "flatbuf", "flatbuf_unchecked", "capnp", "rkyv"]
SIZES = [64, 256, 1024, 4096, 16384, 65536]
COUNTS = [1, 2, 4, 8, 16]
STYLE = {
    "memcpy": dict(color="black", marker="o", linestyle="-"),
    "prost": dict(color="tab:orange", marker="s", linestyle="-"),
    "ferry_copy": dict(color="tab:blue", marker="^", linestyle="--"),
    "ferry": dict(color="tab:green", marker="D", linestyle="-"),
    "ferry_zc": dict(color="tab:purple", marker="v", linestyle=":"),
    "flatbuf": dict(color="tab:brown"),
    "capnp": dict(color="tab:gray"),
    "flatbuf_unchecked": dict(color="tan"),
    "rkyv": dict(color="tab:red"),
}
# Peer anchors from shared/platform.md (medians, ns/op), measured on its reference machine.
ANCHOR_DECODE_MUSER = {"prost": 341, "flatbuf": 694, "flatbuf_unchecked": 59, "capnp": 276, "rkyv": 26}


def rel(path):
    """A path relative to the workspace root when it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def load_criterion(dirs):
    """{(op, shape, system): [median ns per run]} plus per-run detail."""
    values, detail, seen = {}, {}, set()
    for run, root in enumerate(dirs):
        for bench in sorted(root.glob("*/*/new/benchmark.json")):
            meta = json.loads(bench.read_text())
            sample = (bench.parent / "sample.json").read_bytes()
            digest = hashlib.sha256(meta["full_id"].encode() + sample).hexdigest()
            if digest in seen:
                continue  # the same measurement, copied into a later run's directory
            seen.add(digest)
            est = json.loads((bench.parent / "estimates.json").read_text())["median"]
            op, _, shape = meta["group_id"].partition("/")
            key = (op, shape, meta["function_id"])
            values.setdefault(key, []).append(est["point_estimate"])
            detail.setdefault(key, []).append(
                {
                    "run": rel(root),
                    "median_ns": est["point_estimate"],
                    "ci95_ns": [
                        est["confidence_interval"]["lower_bound"],
                        est["confidence_interval"]["upper_bound"],
                    ],
                }
            )
    return values, detail


def load_callgrind(path):
    """{(op, shape, system): Ir/op} from run-callgrind.sh output."""
    ir = {}
    if path is None or not path.exists():
        return ir
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] in ("serialize", "decode") and parts[3].isdigit():
            ir[(parts[0], parts[2], parts[1])] = int(parts[3])
    return ir


def med(values, key):
    v = values.get(key)
    return statistics.median(v) if v else None


def spread(values, key):
    """(min, max) over runs, or None."""
    v = values.get(key)
    return (min(v), max(v)) if v else None


def fmt_ns(ns):
    if ns is None:
        return "—"
    return f"{ns:,.1f}" if ns < 10_000 else f"{ns:,.0f}"


def tables(values, ir):
    out = []
    for op, base, systems in (("serialize", "memcpy", SERIALIZERS), ("decode", "prost", DECODERS)):
        out.append(f"\n### {op}\n")
        hdr = "| shape | system | ns/op (median) | runs | run-to-run range | ratio to " + base + " | Ir/op | Ir ratio |"
        out.append(hdr)
        out.append("|---|---|---:|---:|---|---:|---:|---:|")
        for shape in HEADLINE:
            b = med(values, (op, shape, base))
            bir = ir.get((op, shape, base))
            for s in systems:
                m = med(values, (op, shape, s))
                if m is None:
                    continue
                lo, hi = spread(values, (op, shape, s))
                n = len(values[(op, shape, s)])
                rng = f"{lo:.1f}–{hi:.1f} (±{(hi - lo) / 2 / m * 100:.0f} %)" if n > 1 else "—"
                i = ir.get((op, shape, s))
                ir_ratio = f"{i / bir:.2f}" if i and bir else ""
                ir_cell = f"{i:,}" if i is not None else "—"
                out.append(f"| {shape} | {s} | {fmt_ns(m)} | {n} | {rng} | {m / b:.2f} | {ir_cell} | {ir_ratio} |")
    for title, kind, points in (("size sweep (1 field, no key)", "size", SIZES), ("count sweep (n x 512 B, no key)", "count", COUNTS)):
        out.append(f"\n### serialize, {title}: ns/op (ratio to memcpy) [Ir/op]\n")
        out.append("| " + kind + " | " + " | ".join(SWEEP_SYSTEMS) + " |")
        out.append("|---:|" + "---:|" * len(SWEEP_SYSTEMS))
        for p in points:
            shape = f"{kind}-{p}"
            b = med(values, ("serialize", shape, "memcpy"))
            cells = []
            for s in SWEEP_SYSTEMS:
                m = med(values, ("serialize", shape, s))
                i = ir.get(("serialize", shape, s))
                cells.append(
                    f"{fmt_ns(m)} ({m / b:.2f}) [{i:,}]" if m is not None and i is not None
                    else (f"{fmt_ns(m)} ({m / b:.2f})" if m is not None else "—")
                )
            out.append(f"| {p:,} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot_sweep(plt, values, ir, kind, points, path):
    have_ir = any(("serialize", f"{kind}-{p}", s) in ir for p in points for s in SWEEP_SYSTEMS)
    fig, axes = plt.subplots(1, 2 if have_ir else 1, figsize=(12 if have_ir else 6.5, 4.8), squeeze=False)
    ax_t = axes[0][0]
    for s in SWEEP_SYSTEMS:
        xs, ys, los, his = [], [], [], []
        for p in points:
            key = ("serialize", f"{kind}-{p}", s)
            m = med(values, key)
            if m is None:
                continue
            lo, hi = spread(values, key)
            xs.append(p)
            ys.append(m)
            los.append(m - lo)
            his.append(hi - m)
        if xs:
            ax_t.errorbar(xs, ys, yerr=[los, his], label=s, capsize=3, **STYLE[s])
    if kind == "size":
        ax_t.axvline(512, color="tab:green", linestyle=":", linewidth=1, label="ferry hybrid threshold (512 B)")
        ax_t.set_xscale("log", base=2)
        ax_t.set_yscale("log")
        ax_t.set_xlabel("field size (bytes), one field, no key")
        ax_t.set_title("serialize time vs field size (log-log)")
    else:
        ax_t.set_xscale("log", base=2)
        ax_t.set_xlabel("number of 512 B fields, no key")
        ax_t.set_title("serialize time vs field count (512 B fields)")
    ax_t.set_xticks(points)
    ax_t.set_xticklabels([f"{p:,}" if p < 1024 else f"{p // 1024} Ki" for p in points] if kind == "size" else [str(p) for p in points])
    ax_t.set_ylabel("ns per serialize (Criterion median)")
    ax_t.grid(True, which="both", alpha=0.3)
    ax_t.legend(title="system")
    if have_ir:
        ax_i = axes[0][1]
        for s in SWEEP_SYSTEMS:
            pts = [(p, ir[("serialize", f"{kind}-{p}", s)]) for p in points if ("serialize", f"{kind}-{p}", s) in ir]
            if pts:
                ax_i.plot([p for p, _ in pts], [i for _, i in pts], label=s, **STYLE[s])
        ax_i.set_xscale("log", base=2)
        ax_i.set_yscale("log")
        ax_i.set_xticks(points)
        ax_i.set_xticklabels(ax_t.get_xticklabels())
        ax_i.set_xlabel(ax_t.get_xlabel())
        ax_i.set_ylabel("instructions per serialize (callgrind Ir/op)")
        ax_i.set_title("instruction count" + (" (≥16 KiB copies: rep movsb, 1 Ir per byte)" if kind == "size" else ""))
        ax_i.grid(True, which="both", alpha=0.3)
        ax_i.legend(title="system")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_headline(plt, values, path):
    import numpy as np

    systems = [s for s in SERIALIZERS if s != "memcpy"]
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.8 / len(systems)
    x = np.arange(len(HEADLINE))
    for j, s in enumerate(systems):
        ratios, lo, hi = [], [], []
        for shape in HEADLINE:
            b = med(values, ("serialize", shape, "memcpy"))
            m = med(values, ("serialize", shape, s))
            r = m / b
            # Spread of the per-run ratio (each run divided by its own memcpy).
            per_run = [
                a / c for a, c in zip(values[("serialize", shape, s)], values[("serialize", shape, "memcpy")])
            ]
            ratios.append(r)
            lo.append(r - min(per_run))
            hi.append(max(per_run) - r)
        pos = x - 0.4 + width * (j + 0.5)
        bars = ax.bar(pos, ratios, width, yerr=[lo, hi], capsize=2, label=s, color=STYLE[s]["color"])
        for rect, r, h in zip(bars, ratios, hi):
            ax.annotate(f"{r:.2f}", (rect.get_x() + rect.get_width() / 2, r + h), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.axhline(1.0, color="black", linewidth=1, label="memcpy floor (= 1)")
    # Issue 11's targets for ferry as ratios to the whole payload's memcpy (google16's target is
    # relative to its copied bytes and entries: see docs/benchmarks/core.md).
    ax.hlines([1.5, 0.6, 0.5], [-0.45, 0.55, 1.55], [0.45, 1.45, 2.45], colors="red", linestyles="--",
              linewidth=1.4, label="issue target for ferry (muser ≤1.5x, echo ≤0.6x, kv8k ≤0.5x)")
    ax.set_yscale("log")
    ax.set_ylim(0.3, 40)
    ax.set_xticks(x)
    labels = []
    for shape in HEADLINE:
        b = med(values, ("serialize", shape, "memcpy"))
        desc = {"muser": "24 B key + 10 x 100 B", "echo": "2 x 2048 B", "kv8k": "64 B key + 8 KiB",
                "google16": "64 B key + 16 Google sizes"}[shape]
        labels.append(f"{shape}\n{desc}\nmemcpy = {b:.1f} ns")
    ax.set_xticklabels(labels)
    ax.set_ylabel("serialize time / memcpy time (log; lower is better)")
    ax.set_title("Serialize, headline shapes: ratio to the memcpy floor (median of runs; bars: run-to-run range)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(ncol=3, fontsize=8, loc="upper right", framealpha=1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_decode(plt, values, path):
    decoders = [d for d in DECODERS if ("decode", "muser", d) in values]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ys = list(range(len(decoders)))
    meds = [med(values, ("decode", "muser", d)) for d in decoders]
    lo = [m - spread(values, ("decode", "muser", d))[0] for m, d in zip(meds, decoders)]
    hi = [spread(values, ("decode", "muser", d))[1] - m for m, d in zip(meds, decoders)]
    ax.barh(ys, meds, xerr=[lo, hi], capsize=3, color=[STYLE[d]["color"] if d != "ferry" else "tab:green" for d in decoders],
            label="this run (median; bar: run-to-run range)")
    for y, m, h in zip(ys, meds, hi):
        ax.text(m + h + 12, y - 0.25, f"{m:.0f} ns", va="center", fontsize=9)
    anchors = [(y, ANCHOR_DECODE_MUSER[d]) for y, d in zip(ys, decoders) if d in ANCHOR_DECODE_MUSER]
    ax.scatter([a for _, a in anchors], [y for y, _ in anchors], marker="x", color="red", zorder=3,
               label="peer anchor, shared/platform.md")
    ax.axvline(100, color="red", linestyle="--", linewidth=1, label="issue target for ferry: ≤100 ns")
    ax.set_yticks(ys)
    ax.set_yticklabels(decoders)
    ax.invert_yaxis()
    ax.set_xlabel("ns per decode + read key and all 10 fields (Criterion median)")
    ax.set_title("Decode muSer (24 B key + 10 x 100 B)")
    ax.set_xlim(0, max(meds + [a for _, a in anchors]) * 1.15)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--criterion", action="append", type=pathlib.Path)
    ap.add_argument("--callgrind", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "benchmarks")
    args = ap.parse_args()
    dirs = args.criterion or [ROOT / "target" / "criterion"]
    callgrind = args.callgrind
    if callgrind is None:
        default = ROOT / "target" / "criterion-core" / "callgrind.txt"
        callgrind = default if default.exists() else None

    values, detail = load_criterion(dirs)
    if not values:
        sys.exit(f"plot.py: no Criterion results under {', '.join(map(str, dirs))}")
    ir = load_callgrind(callgrind)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    args.out.mkdir(parents=True, exist_ok=True)
    plot_sweep(plt, values, ir, "size", SIZES, args.out / "core-size-sweep.png")
    plot_sweep(plt, values, ir, "count", COUNTS, args.out / "core-count-sweep.png")
    plot_headline(plt, values, args.out / "core-headline.png")
    plot_decode(plt, values, args.out / "core-decode.png")

    results = []
    for key in sorted(values):
        op, shape, system = key
        base = "memcpy" if op == "serialize" else "prost"
        b = med(values, (op, shape, base))
        m = med(values, key)
        results.append(
            {
                "id": f"{op}/{shape}/{system}",
                "median_ns": m,
                "runs": detail[key],
                "ratio_to_" + base: m / b if b else None,
                "ir_per_op": ir.get(key),
            }
        )
    try:
        import subprocess

        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    doc = {
        "commit": commit,
        "criterion_dirs": [rel(d) for d in dirs],
        "callgrind": rel(callgrind) if callgrind else None,
        "note": "median_ns is the median over runs of Criterion's per-run median; runs lists each run.",
        "results": results,
    }
    (args.out / "core-results.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(tables(values, ir))


if __name__ == "__main__":
    main()
