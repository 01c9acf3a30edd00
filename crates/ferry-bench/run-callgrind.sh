#!/usr/bin/env bash
# Instructions per operation for every benchmark case, counted by callgrind.
#
#   crates/ferry-bench/run-callgrind.sh            # every case `ferry-callgrind list` prints
#   crates/ferry-bench/run-callgrind.sh 'muser'    # only cases matching an extended regex
#   N_SMALL=1000 N_LARGE=11000 crates/ferry-bench/run-callgrind.sh
#
# Each case runs twice under callgrind, with N_SMALL and N_LARGE iterations; process start,
# shape setup and the first (buffer-sizing) call are the same in both runs, so
#   Ir/op = (Ir(N_LARGE) - Ir(N_SMALL)) / (N_LARGE - N_SMALL).
# Serialize rows also show the ratio to the memcpy floor of the same shape.
# Counts are deterministic; this machine has no hardware counters (see shared/platform.md).
# Bulk memcpy (>~8 KiB, rep movsb) and memset (>~2 KiB, rep stosb) count one Ir per byte
# under callgrind: see README.md before reading large-payload rows.
set -euo pipefail

filter="${1:-.}"
n_small="${N_SMALL:-100}"
n_large="${N_LARGE:-1100}"
(( n_large > n_small )) || { echo "N_LARGE must exceed N_SMALL" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "run-callgrind.sh: valgrind not found (apt-get install valgrind)" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The bench profile: optimized like `cargo bench`, with debug info for callgrind_annotate.
bin="$(cargo build --quiet --profile bench --manifest-path "$here/Cargo.toml" \
        --bin ferry-callgrind --message-format=json \
      | sed -n 's/.*"executable":"\([^"]*ferry-callgrind\)".*/\1/p' | tail -n 1)"
[[ -x "$bin" ]] || { echo "run-callgrind.sh: could not build ferry-callgrind" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

instructions() { # op system shape iterations -> total Ir of the run
    local out="$tmp/callgrind.out"
    valgrind --quiet --tool=callgrind --callgrind-out-file="$out" "$bin" "$@" >/dev/null
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

declare -A floor
printf '%-10s %-18s %-12s %12s %9s\n' op system shape "Ir/op" "x memcpy"
while read -r op system shape; do
    small="$(instructions "$op" "$system" "$shape" "$n_small")"
    large="$(instructions "$op" "$system" "$shape" "$n_large")"
    per_op=$(( (large - small) / (n_large - n_small) ))
    ratio=""
    if [[ "$op" == serialize ]]; then
        [[ "$system" == memcpy ]] && floor[$shape]="$per_op"
        [[ -n "${floor[$shape]:-}" ]] && ratio="$(awk -v a="$per_op" -v b="${floor[$shape]}" 'BEGIN { printf "%.2f", a / b }')"
    fi
    printf '%-10s %-18s %-12s %12d %9s\n' "$op" "$system" "$shape" "$per_op" "$ratio"
done < <("$bin" list | grep -E -- "$filter")
