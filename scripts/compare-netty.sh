#!/usr/bin/env bash
# Builds wheel-bench and Netty's TimerBench harness, runs them alternately (Netty, ours, Netty,
# ours, ...; ROUNDS rounds, default 3) with identical arguments, then prints one table: metric,
# Netty median, wheel median, ratio, goal of issue 5, plus the heap timer's and libuv's medians
# from the same wheel-bench runs. Then one scaling run (wheel, heap, libuv at 10^3..10^7 pending)
# and, when gnuplot is installed, its plot. Raw JSON lines stay in build/compare/.
#
# Usage: scripts/compare-netty.sh [TimerBench options, e.g. --n 200000 --metrics schedule,cancel]
# Env:   ROUNDS (3), IMPLS (wheel,heap,libuv), SCALING (1; 0 skips it), SCALING_N (10^3..10^7),
#        NETTY_HARNESS (the peer harness: TimerBench.java + classpath.sh; /work/shared/peers/netty)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-3}
IMPLS=${IMPLS:-wheel,heap,libuv}
SCALING=${SCALING:-1}
SCALING_N=${SCALING_N:-1000,10000,100000,1000000,10000000}
NETTY_HARNESS=${NETTY_HARNESS:-/work/shared/peers/netty}
OUT=$ROOT/build/compare
mkdir -p "$OUT"
rm -f "$OUT"/netty-*.jsonl "$OUT"/ours-*.jsonl  # no stale rounds from an earlier run

# --- build ours
scripts/install-deps.sh python3 gnuplot-nox
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DWHEEL_BUILD_TESTS=OFF >/dev/null
cmake --build build/bench -j "$(nproc)" --target wheel-bench >&2
BENCH=$ROOT/build/bench/apps/wheel-bench/wheel-bench

# --- build the Netty harness (Debian's libnetty-java and a JDK), out of its read-only folder
[ -f "$NETTY_HARNESS/TimerBench.java" ] || { echo "no TimerBench.java in $NETTY_HARNESS" >&2; exit 1; }
need=()
[ -f /usr/share/java/netty-common.jar ] || need+=(libnetty-java)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
((${#need[@]} == 0)) || scripts/install-deps.sh "${need[@]}"
source "$NETTY_HARNESS/classpath.sh"
mkdir -p "$OUT/netty-classes"
javac -d "$OUT/netty-classes" -cp "$NETTY_CP" "$NETTY_HARNESS/TimerBench.java"

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "netty: $(dpkg-query -W -f='${Version}' libnetty-java 2>/dev/null), java $(java -version 2>&1 | head -1)"
  echo "wheel-bench: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), g++ $(g++ -dumpfullversion)"
  echo "command: scripts/compare-netty.sh $*  (ROUNDS=$ROUNDS IMPLS=$IMPLS)"
} | tee "$OUT/machine.txt" >&2

# --- A B A B ...
netty_runs=() our_runs=()
for r in $(seq 1 "$ROUNDS"); do
  echo "compare-netty: round $r/$ROUNDS: Netty" >&2
  java ${JAVA_OPTS:-} -cp "$OUT/netty-classes:$NETTY_CP" TimerBench "$@" \
    > "$OUT/netty-$r.jsonl" 2> "$OUT/netty-$r.err"
  echo "compare-netty: round $r/$ROUNDS: wheel-bench --impl $IMPLS" >&2
  "$BENCH" --impl "$IMPLS" "$@" > "$OUT/ours-$r.jsonl" 2> "$OUT/ours-$r.err"
  netty_runs+=("$OUT/netty-$r.jsonl") our_runs+=("$OUT/ours-$r.jsonl")
done
python3 scripts/bench_table.py compare "${netty_runs[@]}" -- "${our_runs[@]}" | tee "$OUT/table.md"

# --- scaling: schedule + cancel cost per operation against the pending count
if [ "$SCALING" != 0 ]; then
  echo "compare-netty: scaling run at N = $SCALING_N" >&2
  "$BENCH" --impl "$IMPLS" --metrics scaling --scaling-n "$SCALING_N" \
    > "$OUT/scaling.jsonl" 2> "$OUT/scaling.err"
  echo
  python3 scripts/bench_table.py scaling "$OUT/scaling.jsonl" --dat "$OUT/scaling.dat" \
    | tee "$OUT/scaling.md"
  if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "dat='$OUT/scaling.dat'; out='$OUT/scaling.svg'" scripts/scaling.gp \
      && echo "plot: $OUT/scaling.svg" >&2
  else
    echo "gnuplot not installed (apt-get install gnuplot-nox): no plot" >&2
  fi
fi
