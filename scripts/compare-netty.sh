#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs Netty's HashedWheelTimer (through the project's harness, bench/netty/) and wheel-bench
# alternately with identical arguments (Netty, ours, Netty, ours, ...; ROUNDS rounds), then prints
# one table of medians: Netty, the hashed wheel ("wheel") and the hierarchical layout ("hier")
# with their ratios to Netty and goals, the heap timer and libuv from the same wheel-bench runs.
# Each round also runs the longdelay metric (worker CPU with LONG_N timeouts of 1 min .. 24 h
# pending, ticks LONG_TICKS) and the upper-level lateness. Then one scaling run of both harnesses
# (10^3..10^7 pending: schedule/cancel ns per operation, worker us per tick) and, with gnuplot,
# its plot. Raw JSON lines stay in build/compare/.
#
# Usage: scripts/compare-netty.sh [options for both harnesses, e.g. --n 200000 --ticks 1]
# Env:   ROUNDS (3), IMPLS (wheel,hier,heap,libuv), LONG (1; 0 skips longdelay/upperlateness),
#        LONG_N (1000000,10000000), LONG_TICKS (1,10), LONG_SECS (10), SCALING (1; 0 skips it),
#        SCALING_N (10^3..10^7), SCALING_SECS (2),
#        NETTY_HARNESS: "ours" (default, bench/netty/) or "peer" (the shared reference harness
#        ../shared/peers/netty relative to the repository root; it has no scaling or
#        upperlateness), JAVA_OPTS (extra JVM flags).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-3}
IMPLS=${IMPLS:-wheel,hier,heap,libuv}
LONG=${LONG:-1}
LONG_N=${LONG_N:-1000000,10000000}
LONG_TICKS=${LONG_TICKS:-1,10}
LONG_SECS=${LONG_SECS:-10}
SCALING=${SCALING:-1}
SCALING_N=${SCALING_N:-1000,10000,100000,1000000,10000000}
SCALING_SECS=${SCALING_SECS:-2}
NETTY_HARNESS=${NETTY_HARNESS:-ours}
OUT=$ROOT/build/compare
mkdir -p "$OUT"
rm -f "$OUT"/netty-*.jsonl "$OUT"/ours-*.jsonl "$OUT"/scaling*.jsonl  # no stale rounds

# --- build ours
scripts/install-deps.sh python3 gnuplot-nox >&2
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DWHEEL_BUILD_TESTS=OFF >/dev/null
cmake --build build/bench -j "$(nproc)" --target wheel-bench >&2
BENCH=$ROOT/build/bench/apps/wheel-bench/wheel-bench

# --- build the Netty harness; netty ARGS... runs it
case $NETTY_HARNESS in
  ours)
    bench/netty/build.sh "$OUT/netty-ours"
    NETTY_CP=$(cat "$OUT/netty-ours/classpath.txt")
    netty() { java ${JAVA_OPTS:-} -cp "$NETTY_CP" NettyTimerBench "$@"; }
    ;;
  peer)
    PEER=../shared/peers/netty  # relative to the repository root
    [[ -f $PEER/TimerBench.java ]] || { echo "no $PEER/TimerBench.java" >&2; exit 1; }
    bench/netty/build.sh "$OUT/netty-ours" # installs libnetty-java and a JDK when missing
    source "$PEER/classpath.sh"
    mkdir -p "$OUT/netty-peer"
    javac -d "$OUT/netty-peer" -cp "$NETTY_CP" "$PEER/TimerBench.java"
    netty() { java ${JAVA_OPTS:-} -cp "$OUT/netty-peer:$NETTY_CP" TimerBench "$@"; }
    ;;
  *) echo "NETTY_HARNESS must be ours or peer, not '$NETTY_HARNESS'" >&2; exit 2 ;;
esac

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "load at start: $(uptime)"
  echo "netty: $(dpkg-query -W -f='${Version}' libnetty-java 2>/dev/null), harness $NETTY_HARNESS," \
    "java $(java -version 2>&1 | head -1)"
  echo "wheel-bench: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), g++ $(g++ -dumpfullversion)"
  echo "command: scripts/compare-netty.sh $*  (ROUNDS=$ROUNDS IMPLS=$IMPLS LONG=$LONG" \
    "LONG_N=$LONG_N LONG_TICKS=$LONG_TICKS LONG_SECS=$LONG_SECS SCALING=$SCALING)"
} | tee "$OUT/machine.txt" >&2

# --- A B A B ...
long_args=(--long-ticks "$LONG_TICKS" --long-secs "$LONG_SECS")
netty_runs=() our_runs=()
for r in $(seq 1 "$ROUNDS"); do
  echo "compare-netty: round $r/$ROUNDS: Netty" >&2
  netty "$@" > "$OUT/netty-$r.jsonl" 2> "$OUT/netty-$r.err"
  echo "compare-netty: round $r/$ROUNDS: wheel-bench --impl $IMPLS" >&2
  "$BENCH" --impl "$IMPLS" "$@" > "$OUT/ours-$r.jsonl" 2> "$OUT/ours-$r.err"
  if [[ $LONG != 0 ]]; then
    extra=upperlateness
    [[ $NETTY_HARNESS == peer ]] && extra=""
    IFS=, read -ra counts <<< "$LONG_N"
    for n in "${counts[@]}"; do
      metrics=longdelay${extra:+,$extra}
      echo "compare-netty: round $r/$ROUNDS: $metrics at N=$n, Netty then ours" >&2
      netty --metrics "$metrics" --long-n "$n" "${long_args[@]}" \
        >> "$OUT/netty-$r.jsonl" 2>> "$OUT/netty-$r.err"
      "$BENCH" --impl "$IMPLS" --metrics "$metrics" --long-n "$n" "${long_args[@]}" \
        >> "$OUT/ours-$r.jsonl" 2>> "$OUT/ours-$r.err"
      extra=""  # the upper-level lateness once per round
    done
  fi
  netty_runs+=("$OUT/netty-$r.jsonl") our_runs+=("$OUT/ours-$r.jsonl")
  echo "compare-netty: load after round $r: $(uptime)" | tee -a "$OUT/machine.txt" >&2
done
python3 scripts/bench_table.py compare "${netty_runs[@]}" -- "${our_runs[@]}" | tee "$OUT/table.md"

# --- scaling: schedule + cancel cost per operation and worker cost per tick against pending N
if [[ $SCALING != 0 ]]; then
  scaling_args=(--metrics scaling --scaling-n "$SCALING_N" --scaling-secs "$SCALING_SECS")
  files=()
  if [[ $NETTY_HARNESS == ours ]]; then
    echo "compare-netty: scaling run at N = $SCALING_N: Netty" >&2
    netty "${scaling_args[@]}" > "$OUT/scaling-netty.jsonl" 2> "$OUT/scaling-netty.err"
    files+=("$OUT/scaling-netty.jsonl")
  fi
  echo "compare-netty: scaling run at N = $SCALING_N: wheel-bench --impl $IMPLS" >&2
  "$BENCH" --impl "$IMPLS" "${scaling_args[@]}" > "$OUT/scaling.jsonl" 2> "$OUT/scaling.err"
  files+=("$OUT/scaling.jsonl")
  echo
  python3 scripts/bench_table.py scaling "${files[@]}" --dat "$OUT/scaling.dat" \
    | tee "$OUT/scaling.md"
  if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "dat='$OUT/scaling.dat'; out='$OUT/scaling.svg'" scripts/scaling.gp \
      && echo "plot: $OUT/scaling.svg" >&2
  else
    echo "gnuplot not installed (apt-get install gnuplot-nox): no plot" >&2
  fi
fi
echo "compare-netty: load at the end: $(uptime)" | tee -a "$OUT/machine.txt" >&2
