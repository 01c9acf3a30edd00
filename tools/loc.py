#!/usr/bin/env python3
"""Non-test lines of Rust under the given folders, the count ferry-bench's size is measured by.

Every line of every `.rs` file, except files under `tests/`, `benches/`, `target/` or `fuzz/`
and `#[cfg(test)]` items (from the attribute to the item's closing brace). `--code` also
leaves out blank lines and comment lines (`//`, `///`, `//!`).

    python3 tools/loc.py crates/ferry-bench
    python3 tools/loc.py --code crates/ferry-bench crates/ferry-launch
"""
import os
import sys

SKIPPED_DIRS = {"tests", "benches", "target", "fuzz"}


def count(path, code_only):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    n, i = 0, 0
    while i < len(lines):
        line = lines[i].strip()
        if line == "#[cfg(test)]":
            # Skip the item the attribute applies to: to its matching brace, or its `;`.
            depth, started, i = 0, False, i + 1
            while i < len(lines):
                depth += lines[i].count("{") - lines[i].count("}")
                started = started or "{" in lines[i]
                if (started and depth <= 0) or (not started and lines[i].rstrip().endswith(";")):
                    break
                i += 1
        elif not (code_only and (not line or line.startswith("//"))):
            n += 1
        i += 1
    return n


def main(args):
    code_only = "--code" in args
    total = 0
    for root in (a for a in args if a != "--code"):
        sub = 0
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            sub += sum(count(os.path.join(folder, f), code_only) for f in files if f.endswith(".rs"))
        print(f"{sub:7d} {root}")
        total += sub
    print(f"{total:7d} total")


if __name__ == "__main__":
    main(sys.argv[1:])
