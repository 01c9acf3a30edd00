#!/bin/bash
# Long fuzzing: every target of fuzz/ (or the ones named) until it has run RUNS inputs (default
# 10 M) or spent MINUTES (default 30), whichever comes first, from the committed seeds plus the
# local corpus. Prints one markdown row per target for docs/fuzzing.md: executions, time, rate,
# corpus size and the outcome. Exits non-zero if any target crashed (its reproducers are in
# fuzz/artifacts/TARGET/).
#
#     tools/fuzz-long.sh                       # every target, 10 M runs or 30 min each
#     RUNS=1000000 MINUTES=5 tools/fuzz-long.sh resp rpc_frames
#     SANITIZER=none tools/fuzz-long.sh        # without AddressSanitizer (faster)
#
# Needs the nightly toolchain and cargo-fuzz, as .ci/run's fuzz smoke does.
set -u
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10000000}
MINUTES=${MINUTES:-30}
# cargo-fuzz's sanitizer: address (its default, and CI's smoke), or none. Without it a memory
# error in unsafe code is found only if it panics or crashes; safe Rust's checks all stay.
SANITIZER=${SANITIZER:-address}
LOGS=target/fuzz-long
mkdir -p "$LOGS"

if (($# > 0)); then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi

echo "| target | executions | seconds | exec/s | corpus files | outcome |"
echo "|---|---:|---:|---:|---:|---|"
failed=0
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target" "fuzz/seeds/$target"
    if ! cargo +nightly fuzz build --sanitizer "$SANITIZER" "$target" >"$LOGS/$target.build.log" 2>&1; then
        echo "| $target | | | | | build failed: $LOGS/$target.build.log |"
        failed=1
        continue
    fi
    log="$LOGS/$target.log"
    start=$SECONDS
    if cargo +nightly fuzz run --sanitizer "$SANITIZER" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -runs="$RUNS" -max_total_time=$((MINUTES * 60)) -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1; then
        outcome="0 crashes"
    else
        outcome="**failed**: see $log and fuzz/artifacts/$target/"
        failed=1
    fi
    # libFuzzer's final statistics: `stat::number_of_executed_units: N`.
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    seconds=$((SECONDS - start))
    corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
    rate=$(( ${runs:-0} / (seconds > 0 ? seconds : 1) ))
    echo "| $target | ${runs:-?} | $seconds | $rate | $corpus | $outcome |"
done
exit "$failed"
