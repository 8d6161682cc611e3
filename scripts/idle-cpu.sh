#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Server CPU per second while N connections sit idle (not in CI): wheel-server --workers W
# --reader-idle 120s --tick T under wheel-load --active-ratio 0 (nothing is ever sent, no close
# is expected within the run). Once every connection is open, samples the server's CPU time
# (all processes) over a quiet window and prints ms of CPU per second of wall time.
#
# Usage: scripts/idle-cpu.sh [connections] [tick] [workers]   (defaults 100000 1ms 6)
# Env:   WINDOW (20 s), BUILD (build/plain)
set -euo pipefail
cd "$(dirname "$0")/.."
connections=${1:-100000}
tick=${2:-1ms}
workers=${3:-6}
window=${WINDOW:-20}
build=${BUILD:-build/plain}
ulimit -n "$(ulimit -Hn)"
connect_rate=5000
connect_s=$(((connections + connect_rate - 1) / connect_rate))
duration=$((connect_s + 10 + window + 5))
per_worker=$(($(ulimit -n) - 100))
addresses=$(((connections + 4999) / 5000))
((addresses >= 2)) || addresses=2

server_out=$(mktemp)
"$build/apps/wheel-server/wheel-server" --host 127.0.0.1 --port 0 --reader-idle 120s \
  --tick "$tick" --workers "$workers" --max-connections "$per_worker" --stats-interval 0 \
  --log-level warn >"$server_out" &
server_pid=$!
trap 'kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; rm -f "$server_out"' EXIT
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$server_out")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "idle-cpu: no port" >&2; exit 1; }
cpu_ticks() {
  local t=0 p v
  for p in "$server_pid" $(ps -o pid= --ppid "$server_pid"); do
    v=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0); t=$((t + ${v:-0}))
  done
  echo "$t"
}
"$build/apps/wheel-load/wheel-load" --host 127.0.0.1 --port "$port" --connections "$connections" \
  --active-ratio 0 --expect-idle-close 0 --duration "${duration}s" --connect-rate "$connect_rate" \
  --source-addresses "127.0.0.1-127.0.0.$addresses" --processes auto --log-level warn \
  >/dev/null 2>&1 &
load_pid=$!
sleep $((connect_s + 10))  # every connection open, the accept burst over
t0=$(cpu_ticks)
sleep "$window"
t1=$(cpu_ticks)
wait "$load_pid" || true
awk -v a="$t0" -v b="$t1" -v w="$window" -v hz="$(getconf CLK_TCK)" -v n="$connections" \
  -v tick="$tick" -v workers="$workers" 'BEGIN {
  printf "idle-cpu: %d idle connections, --tick %s, --workers %d: server CPU %.1f ms per second (%d s window)\n",
    n, tick, workers, (b - a) * 1000 / hz / w, w }'
