#!/usr/bin/env python3
"""Prints Criterion results of the ferry-bench targets as a table with ratios.

    python3 crates/ferry-bench/report.py [CRITERION_DIR]

CRITERION_DIR defaults to <workspace>/target/criterion. Every group is one shape
(`serialize/<shape>`, `decode/<shape>`) and every function one system; each row shows the
median time and its ratio to the group's `memcpy` floor (serialize) or to `prost` (decode).
Standard library only, so it runs on a fresh machine.
"""

import json
import pathlib
import sys

BASELINE = {"serialize": "memcpy", "decode": "prost"}


def load(root):
    rows = {}
    for bench in sorted(root.glob("*/*/new/benchmark.json")):
        meta = json.loads(bench.read_text())
        estimates = json.loads((bench.parent / "estimates.json").read_text())
        group, function = meta["group_id"], meta["function_id"]
        rows.setdefault(group, {})[function] = estimates["median"]["point_estimate"]
    return rows


def order(group):
    # Headline shapes first, then sweeps by their numeric parameter.
    op, _, shape = group.partition("/")
    kind, _, n = shape.partition("-")
    headline = ["muser", "echo", "kv8k", "google16"]
    rank = headline.index(shape) if shape in headline else len(headline)
    sweep = {"size": 0, "count": 1}.get(kind, 2)
    return (op != "serialize", rank, sweep, int(n) if n.isdigit() else 0)


def main():
    default = pathlib.Path(__file__).resolve().parents[2] / "target" / "criterion"
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else default
    rows = load(root)
    if not rows:
        sys.exit(f"report.py: no Criterion results under {root}")
    print(f"{'group':<24} {'system':<18} {'median':>12} {'ratio':>8}")
    for group in sorted(rows, key=order):
        base_name = BASELINE.get(group.partition("/")[0])
        base = rows[group].get(base_name)
        functions = sorted(rows[group], key=lambda f: (f != base_name, f))
        for function in functions:
            ns = rows[group][function]
            ratio = f"{ns / base:.2f}" if base else ""
            time = f"{ns:.1f} ns" if ns < 10_000 else f"{ns / 1000:.2f} us"
            print(f"{group:<24} {function:<18} {time:>12} {ratio:>8}")
        print()


if __name__ == "__main__":
    main()
