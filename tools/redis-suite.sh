#!/usr/bin/env bash
# Runs Redis 7.0.15's own test suite (vendor/redis-tests) against `ferry redis` and against
# redis-server, one fresh server per unit, in the suite's external mode, and prints a Markdown
# table: unit, then passed/run (and skipped) for each server.
#
#   tools/redis-suite.sh [--units ci|all|"unit/a unit/b ..."] [--tags TAGS] [--check FILE]
#                        [--ferry-only]
#
# --units: `ci` (default) is the set CI runs (bounded to a few minutes), `all` every vendored
# unit (docs/redis-suite.md lists both). --tags TAGS: passed to the harness's --tags (e.g.
# `-needs:repl` leaves out the tests that read the replication stream). --check FILE: exit 1 if ferry passes fewer tests in
# total than the floor FILE records on its `ferry-floor: N` line (a regression floor).
# --ferry-only: no reference run against redis-server (its cells read `-`): what CI's check
# needs, in half the time.
#
# Each unit runs `tclsh tests/test_helper.tcl --host 127.0.0.1 --port P --singledb
# --ignore-encoding --ignore-digest --single unit/X` under `timeout` (FERRY_SUITE_UNIT_SECONDS,
# default 120). A unit that ends in an exception (the harness stops the unit at an error
# outside a test) or a timeout is marked `aborted`: its counts are the tests it finished.
#
# One run at a time: the harness listens on a fixed port for its test client.
# Needs tclsh, redis-server and redis-cli; builds `ferry` (target/debug) with cargo, or uses
# $FERRY_BIN.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUITE="$ROOT/vendor/redis-tests"
UNIT_SECONDS="${FERRY_SUITE_UNIT_SECONDS:-120}"

# The units CI runs (about 140 s for both servers on a 2-core machine, debug ferry).
CI_UNITS="unit/type/string unit/type/incr unit/type/list unit/type/hash unit/type/set unit/type/zset
unit/keyspace unit/expire unit/protocol unit/info-command unit/querybuf unit/quit unit/scan unit/multi
unit/pubsub unit/other unit/introspection unit/introspection-2"
# Every vendored unit (the issue's list): CI's, plus list-2 and list-3 (slow: 60 s for 13
# tests), geo (90 s for both servers, most of it its fuzz tests) and those whose tests are all
# tagged external:skip (auth, limits, pubsubshard, info).
ALL_UNITS="$CI_UNITS unit/type/list-2 unit/type/list-3 unit/geo unit/auth unit/limits unit/pubsubshard unit/info"

units=$CI_UNITS
check=""
tags=()
reference=1
while (($#)); do
    case $1 in
    --units)
        case $2 in
        ci) units=$CI_UNITS ;;
        all) units=$ALL_UNITS ;;
        *) units=$2 ;;
        esac
        shift 2
        ;;
    --tags)
        tags=(--tags "$2")
        shift 2
        ;;
    --check)
        check=$2
        shift 2
        ;;
    --ferry-only)
        reference=0
        shift
        ;;
    *)
        echo "redis-suite: unknown option $1 (see the head of $0)" >&2
        exit 2
        ;;
    esac
done

for tool in tclsh redis-server redis-cli timeout python3; do
    command -v "$tool" >/dev/null || {
        echo "redis-suite: $tool is not installed" >&2
        exit 2
    }
done
if [[ -z ${FERRY_BIN:-} ]]; then
    cargo build -q --manifest-path "$ROOT/Cargo.toml" -p ferry-cli --bin ferry
    FERRY_BIN="$ROOT/target/debug/ferry"
fi

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start KIND PORT: starts a fresh server (ferry or redis) on PORT in the background and waits
# until it answers PING (at most 10 s).
start() {
    local kind=$1 port=$2
    # A fresh, empty directory per server: a dump.rdb a unit left (DEBUG RELOAD, SAVE) must
    # not be loaded by the next unit's server.
    rm -rf "$WORK/$kind-dir"
    mkdir -p "$WORK/$kind-dir"
    if [[ $kind == ferry ]]; then
        "$FERRY_BIN" redis --port "$port" --enable-debug-command --dir "$WORK/$kind-dir" \
            >"$WORK/server.log" 2>&1 &
    else
        redis-server --port "$port" --bind 127.0.0.1 --dir "$WORK/$kind-dir" --save '' \
            --appendonly no --enable-debug-command yes >"$WORK/server.log" 2>&1 &
    fi
    SERVER_PID=$!
    local deadline=$((SECONDS + 10))
    until [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; do
        if ((SECONDS > deadline)) || ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "redis-suite: $kind did not start on port $port:" >&2
            cat "$WORK/server.log" >&2
            exit 1
        fi
        sleep 0.05
    done
}

stop() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# run_unit KIND UNIT: prints "passed run skipped aborted" for UNIT against a fresh KIND server;
# the harness's output is kept in $WORK/KIND-UNIT.log.
run_unit() {
    local kind=$1 unit=$2 port log status=0
    port=$(free_port)
    log="$WORK/$kind-${unit//\//_}.log"
    start "$kind" "$port"
    (cd "$SUITE" && timeout "$UNIT_SECONDS" tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" \
        --singledb --ignore-encoding --ignore-digest --single "$unit" --timeout "$UNIT_SECONDS" "${tags[@]}") \
        >"$log" 2>&1 || status=$?
    stop
    # The harness colours its tags when writing to a terminal: strip escapes before counting.
    sed -i 's/\x1b\[[0-9;]*m//g' "$log"
    # A harness that never started its test client ran nothing (its own listener's port,
    # 21079, taken by another run of the suite, say): an error, not a unit with no tests.
    if ! grep -q '^\[ready\]:' "$log"; then
        echo "redis-suite: the harness did not start for $unit against $kind (one run at a time):" >&2
        cat "$log" >&2
        exit 1
    fi
    local ok err skip aborted=""
    ok=$(grep -c '^\[ok\]:' "$log" || true)
    err=$(grep -c '^\[err\]:' "$log" || true)
    skip=$(grep -cE '^\[(skip|ignore)\]:' "$log" || true)
    if ((status == 124)); then
        aborted=timeout
    elif grep -q '^\[exception\]:' "$log"; then
        aborted=exception
    fi
    if [[ -n ${FERRY_SUITE_LOGS:-} ]]; then
        mkdir -p "$FERRY_SUITE_LOGS" && cp "$log" "$FERRY_SUITE_LOGS/"
    fi
    echo "$ok $((ok + err)) $skip $aborted"
}

# cell PASSED RUN SKIPPED ABORTED: one table cell.
cell() {
    local s="$1/$2"
    (($3)) && s+=" ($3 skipped)"
    [[ -n ${4:-} ]] && s+=" $4"
    echo "$s"
}

echo "| unit | ferry redis passed/run | redis-server 7.0.15 passed/run | seconds (ferry, redis) |"
echo "|---|---|---|---|"
f_pass=0 f_run=0 r_pass=0 r_run=0
for unit in $units; do
    t0=$SECONDS
    # Assigned first, so that a failed run stops the script (set -e).
    res=$(run_unit ferry "$unit")
    read -r fp fr fs fa <<<"$res"
    t1=$SECONDS
    if ((reference)); then
        res=$(run_unit redis "$unit")
        read -r rp rr rs ra <<<"$res"
        reference_cell=$(cell "$rp" "$rr" "$rs" "${ra:-}")
    else
        rp=0 rr=0 reference_cell=-
    fi
    t2=$SECONDS
    echo "| $unit | $(cell "$fp" "$fr" "$fs" "${fa:-}") | $reference_cell | $((t1 - t0)), $((t2 - t1)) |"
    f_pass=$((f_pass + fp)) f_run=$((f_run + fr)) r_pass=$((r_pass + rp)) r_run=$((r_run + rr))
done
echo "| **total** | **$f_pass/$f_run** | **$r_pass/$r_run** | $SECONDS |"

if [[ -n $check ]]; then
    floor=$(sed -n 's/^ferry-floor: \([0-9][0-9]*\).*/\1/p' "$check" | head -1)
    if [[ -z $floor ]]; then
        echo "redis-suite: no 'ferry-floor: N' line in $check" >&2
        exit 2
    fi
    if ((f_pass < floor)); then
        echo "redis-suite: ferry redis passed $f_pass tests, below the floor of $floor in $check" >&2
        exit 1
    fi
    echo "ferry redis passed $f_pass tests (floor $floor)"
fi
