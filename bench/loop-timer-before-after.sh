#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Before/after of a LoopTimer change in one run (issue 18, part 1): two wheel-server binaries
# ("before" and "after"), the same wheel-load for both, alternated round by round. For each
# server and each connection count: every connection idle (--active-ratio 0), closed by the
# server after its reader-idle time and checked on time by wheel-load. Measures
#   - threads per worker process (/proc/PID/task, the worker processes; with one worker, the
#     server process itself), once every connection is open;
#   - server CPU (all processes) per second over the quiet window: every connection open and
#     idle, no close due yet (from 5 s after the ramp to 5 s before the first close), and over
#     the whole run (accepts and closes included);
#   - idle-close lateness p50 / p99 / max from wheel-load's JSON report.
# Then scripts/idle-compare.sh (10,000 connections, half active, Netty's IdleStateHandler
# server beside ours) once per round for each server, Netty once per round.
# Loopback only; each run is bounded by wheel-load's --duration.
#
# Usage: bench/loop-timer-before-after.sh BEFORE_SERVER AFTER_SERVER WHEEL_LOAD
# Env:   ROUNDS (2), SIZES ("10000 100000"), OUT (build/loop-timer-before-after),
#        CONNECT_RATE (5000), IDLE_COMPARE (1; 0 skips the Netty comparison)
set -euo pipefail
(($# == 3)) || { echo "usage: $0 BEFORE_SERVER AFTER_SERVER WHEEL_LOAD" >&2; exit 2; }
before=$(realpath "$1") after=$(realpath "$2") load=$(realpath "$3")
for b in "$before" "$after" "$load"; do
  [[ -x $b ]] || { echo "loop-timer-before-after: $b is not a program" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-2}
sizes=${SIZES:-"10000 100000"}
out=${OUT:-build/loop-timer-before-after}
rate=${CONNECT_RATE:-5000}
mkdir -p "$out"
ulimit -n "$(ulimit -Hn)"
per_worker=$(($(ulimit -n) - 100))

server_pids() { echo "$1" $(ps -o pid= --ppid "$1"); }
# CPU time of the server's processes so far, in ns: schedstat of every thread (finer than the
# 10 ms ticks of /proc/PID/stat, which a quiet window of idle connections hardly moves).
cpu_ns() {
  local p
  for p in $(server_pids "$1"); do cat /proc/"$p"/task/*/schedstat 2>/dev/null || true; done |
    awk '{t += $1} END {printf "%.0f", t}'
}
# Threads of each worker process, comma-separated: the children, or the server when it has none.
worker_threads() {
  local kids p list=""
  kids=$(ps -o pid= --ppid "$1" | tr -d ' ')
  for p in ${kids:-$1}; do list+="${list:+,}$(ls "/proc/$p/task" | wc -l)"; done
  echo "$list"
}

run_one() {  # NAME BINARY CONNECTIONS ROUND
  local name=$1 bin=$2 n=$3 round=$4
  local ramp=$(((n + rate - 1) / rate))
  local idle=$((ramp + 18)) workers=$(((n + per_worker - 1) / per_worker))
  ((workers == 1)) || workers=$((workers + workers / 5 + 1))  # SO_REUSEPORT spreads unevenly
  local duration=$((idle + ramp + 8)) addresses=$(((n + 4999) / 5000))
  ((addresses >= 2)) || addresses=2
  local tag="$name-$n-r$round" log
  log="$out/$tag.server.log"
  "$bin" --host 127.0.0.1 --port 0 --reader-idle "${idle}s" --workers "$workers" \
    --max-connections "$per_worker" --stats-interval 0 --log-level warn >"$log" 2>&1 &
  local pid=$! port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$log" | head -1)
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { echo "loop-timer-before-after: $tag: no port" >&2; kill "$pid"; return 1; }
  local t_all0 t0 t1 t_all1 threads status=0
  t_all0=$(cpu_ns "$pid")
  "$load" --host 127.0.0.1 --port "$port" --connections "$n" --active-ratio 0 \
    --expect-idle-close "${idle}s" --tolerance 1s --duration "${duration}s" --connect-rate "$rate" \
    --source-addresses "127.0.0.1-127.0.0.$addresses" --processes auto --json "$out/$tag.json" \
    --log-level warn >"$out/$tag.report" 2>&1 &
  local load_pid=$!
  sleep $((ramp + 5))
  threads=$(worker_threads "$pid")
  t0=$(cpu_ns "$pid")
  sleep $((idle - ramp - 10))
  t1=$(cpu_ns "$pid")
  wait "$load_pid" || status=$?
  t_all1=$(cpu_ns "$pid")
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  python3 - "$out/$tag.json" "$name" "$n" "$round" "$workers" "$threads" "$t0" "$t1" \
    "$((idle - ramp - 10))" "$t_all0" "$t_all1" "$duration" "$status" "$idle" <<'PY' | tee -a "$out/runs.jsonl"
import json, sys
(path, name, n, rnd, workers, threads, t0, t1, window, a0, a1, duration, status,
 idle) = sys.argv[1:]
try:
    r = json.load(open(path))
    late = r["idle"]["lateness_ms"]
    est, on_time = r["connections_established"], r["idle"]["closed_on_time"]
except (OSError, ValueError, KeyError):
    late, est, on_time = {"p50": None, "p99": None, "max": None}, None, None
print(json.dumps({
    "server": name, "connections": int(n), "round": int(rnd), "workers": int(workers),
    "reader_idle_s": int(idle), "threads_per_worker": [int(t) for t in threads.split(",")],
    "idle_cpu_ms_per_s": (int(t1) - int(t0)) / 1e6 / int(window),
    "run_cpu_s": (int(a1) - int(a0)) / 1e9, "run_s": int(duration),
    "established": est, "closed_on_time": on_time,
    "lateness_ms": {k: late[k] for k in ("p50", "p99", "max")}, "wheel_load_exit": int(status)}))
PY
}

# scripts/idle-compare.sh reads Netty's server from $NETTY/run-idle-server.sh: the project's
# own harness (bench/netty) stands in for it.
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
printf '#!/usr/bin/env bash\nexec %q NettyIdleServer "$@"\n' "$PWD/bench/netty/run.sh" \
  >"$shim/run-idle-server.sh"
chmod +x "$shim/run-idle-server.sh"
mkdir -p "$shim/build/apps/wheel-load"
ln -s "$load" "$shim/build/apps/wheel-load/wheel-load"

echo "loop-timer-before-after: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
  order=(before after)
  ((r % 2 == 0)) && order=(after before)
  for n in $sizes; do
    for s in "${order[@]}"; do
      bin=$before
      [[ $s == after ]] && bin=$after
      run_one "$s" "$bin" "$n" "$r"
    done
  done
  if [[ ${IDLE_COMPARE:-1} == 1 ]]; then
    for s in "${order[@]}" netty; do
      bin=$before order_cmp="tick1 tick100"
      [[ $s == after ]] && bin=$after
      [[ $s == netty ]] && order_cmp=netty
      SERVER=$bin ORDER=$order_cmp BUILD="$shim/build" NETTY="$shim" scripts/idle-compare.sh \
        2>&1 | sed "s/^| tick/| $s tick/" | tee -a "$out/idle-compare-r$r.md"
      for f in build/compare-idle/*.json; do mv "$f" "$out/idle-compare-$s-r$r-$(basename "$f")"; done
    done
  fi
done

python3 - "$out/runs.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")
print("| connections | server | threads per worker process | server CPU while idle (ms/s) | "
      "server CPU, whole run (s) | idle-close lateness p50 / p99 / max (ms) | closed on time / established | rounds |")
print("|---:|---|---:|---:|---:|---|---|---:|")
for n in sorted({r["connections"] for r in rows}):
    for s in ("before", "after"):
        g = [r for r in rows if r["connections"] == n and r["server"] == s]
        if not g:
            continue
        threads = sorted({t for r in g for t in r["threads_per_worker"]})
        lat = " / ".join(f"{med([r['lateness_ms'][k] for r in g]):.1f}" for k in ("p50", "p99", "max"))
        print(f"| {n} | {s} | {','.join(map(str, threads))} | {med([r['idle_cpu_ms_per_s'] for r in g]):.3f} "
              f"| {med([r['run_cpu_s'] for r in g]):.2f} | {lat} "
              f"| {med([r['closed_on_time'] for r in g]):.0f} / {med([r['established'] for r in g]):.0f} | {len(g)} |")
PY
