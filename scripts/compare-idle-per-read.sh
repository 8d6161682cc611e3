#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost of an idle timeout per read, N simulated connections (no sockets; see
# bench/idle-per-read/per_read_driver.h): our IdleDetector on a LoopTimer ("wheel"), libuv's
# uv_timer_again per read ("libuv"), Boost.Asio's steady_timer::expires_after per read ("asio";
# needs libboost-dev at build time) and Netty's IdleStateHandler ("netty", bench/netty). One
# process per implementation and round; the order turns every round so that a noisy stretch of
# the machine does not land on one implementation only. Prints a table of medians over the rounds
# with each one's ratio to wheel; the JSON lines (with "round" added) go to OUT/per-read.jsonl.
#
# Usage: scripts/compare-idle-per-read.sh [extra wheel-idle-bench/NettyIdlePerRead options]
# Env:   ROUNDS (3), IMPLS ("wheel libuv asio netty"), BUILD (build/plain), OUT (BUILD/per-read),
#        BEFORE (another wheel-idle-bench binary, measured as "wheel-before" in the same rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
impls=(${IMPLS:-wheel libuv asio netty})
build=${BUILD:-build/plain}
out=${OUT:-$build/per-read}
[[ $rounds =~ ^[0-9]+$ ]] && ((rounds >= 1 && rounds <= 100)) ||
  { echo "compare-idle-per-read: ROUNDS must be 1 to 100, not '$rounds'" >&2; exit 2; }
[[ -n ${BEFORE:-} ]] && impls+=(wheel-before)
bin=$build/bench/idle-per-read/wheel-idle-bench
cmake --build "$build" -j2 --target wheel-idle-bench >&2
for impl in "${impls[@]}"; do
  case $impl in
    wheel | libuv | asio) ;;
    netty) bench/netty/build.sh >/dev/null 2>&1 || { echo "compare-idle-per-read: bench/netty/build.sh failed" >&2; exit 1; } ;;
    wheel-before) [[ -x $BEFORE ]] || { echo "compare-idle-per-read: BEFORE=$BEFORE is not a program" >&2; exit 2; } ;;
    *) echo "compare-idle-per-read: unknown implementation '$impl' (wheel libuv asio netty)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
jsonl=$out/per-read.jsonl
: >"$jsonl"
echo "compare-idle-per-read: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds of ${impls[*]}" >&2

run_one() {
  case $1 in
    wheel | libuv | asio) "$bin" --impl "$1" "${@:3}" ;;
    wheel-before) "$BEFORE" --impl wheel "${@:3}" ;;
    netty) bench/netty/run.sh NettyIdlePerRead "${@:3}" ;;
  esac | python3 -c '
import json, sys
label, rnd = sys.argv[1], int(sys.argv[2])
for line in sys.stdin:
    r = json.loads(line)
    r["impl"] = label
    r["round"] = rnd
    print(json.dumps(r))' "$1" "$2"
}

k=${#impls[@]}
for ((r = 1; r <= rounds; r++)); do
  for ((j = 0; j < k; j++)); do
    impl=${impls[$(((j + r - 1) % k))]}
    echo "round $r: $impl" >&2
    run_one "$impl" "$r" "$@" >>"$jsonl"
  done
done

python3 - "$jsonl" "${impls[@]}" <<'PY'
import json, statistics, sys
path, impls = sys.argv[1], sys.argv[2:]
rows = [json.loads(l) for l in open(path)]
def med(impl, metric, key):
    v = [r[key] for r in rows if r["impl"] == impl and r["metric"] == metric and r.get(key) is not None]
    return statistics.median(v) if v else None
# Every CPU column is the loop thread's (process_* in the raw lines is the whole process's).
cols = [("ns_per_read", "value", "ns per read (CPU, paced)", 1),
        ("tight_ns_per_read", "value", "ns per read (CPU, back to back)", 1),
        ("bytes_per_conn", "value", "bytes per connection (RSS)", 1),
        ("bytes_per_conn_after_reads", "value", "bytes per connection after the reads", 1),
        ("idle_cpu_ms_per_s", "value", "loop thread CPU while idle (ms/s)", 3),
        ("idle_cpu_ms_per_s", "wakeups_per_s", "loop wake-ups while idle (per s)", 2)]
n = rows[0]["n"] if rows else 0
print(f"n = {n} connections, median of {max(r['round'] for r in rows)} rounds; (x) = ratio to wheel")
print("| impl | " + " | ".join(c[2] for c in cols) + " |")
print("|---|" + "---:|" * len(cols))
for impl in impls:
    cells = []
    for metric, key, _, digits in cols:
        v, w = med(impl, metric, key), med("wheel", metric, key)
        if v is None:
            cells.append("-")
        elif impl == "wheel" or not w:
            cells.append(f"{v:.{digits}f}")
        else:
            cells.append(f"{v:.{digits}f} ({v / w:.2f}x)")
    print(f"| {impl} | " + " | ".join(cells) + " |")
late = [r for r in rows if r["metric"] == "idle_cpu_ms_per_s" and r.get("idle_events")]
for r in late:
    print(f"warning: {r['impl']} round {r['round']}: {r['idle_events']} deadlines passed in the idle phase (setup too slow for --idle-ms)")
for r in rows:
    if r["metric"] == "idle_cpu_ms_per_s" and not r.get("clean", True):
        print(f"warning: {r['impl']} round {r['round']}: the idle window reached the end of the phase (machine too busy)")
    if r["metric"] == "idle_cpu_ms_per_s" and r.get("secs_asked") and r["secs"] < 0.9 * r["secs_asked"]:
        print(f"note: {r['impl']} round {r['round']}: idle window {r['secs']} s of {r['secs_asked']} asked (slow setup)")
slow = [r for r in rows if r["metric"] == "ns_per_read" and r["rate_done"] < 0.95 * r["rate_asked"]]
for r in slow:
    print(f"note: {r['impl']} round {r['round']}: {r['rate_done']:.0f} reads/s of {r['rate_asked']} asked (could not keep up)")
PY
