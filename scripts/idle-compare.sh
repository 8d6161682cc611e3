#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Idle-close lateness, CPU and RSS side by side in one run: wheel-server at --tick 1ms, at
# --tick 100ms, and the Netty IdleServer of ../shared/peers/netty (IdleStateHandler), each under
# wheel-load with the README demo's settings (10,000 connections, half active, PING 1 s, expect
# the idle close at 5 s, 15 s). Servers run one after the other, in the order given by ORDER.
# Prints one table; the wheel-load reports stay in build/compare-idle/.
#
# Usage: scripts/idle-compare.sh        Env: CONNECTIONS (10000), ORDER (tick1 tick100 netty),
#        BUILD (build/plain), SERVER (a wheel-server binary; default BUILD's), NETTY (../shared/peers/netty, relative to the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
connections=${CONNECTIONS:-10000}
order=${ORDER:-"tick1 tick100 netty"}
build=${BUILD:-build/plain}
netty=${NETTY:-../shared/peers/netty}
out=build/compare-idle
mkdir -p "$out"
ulimit -n "$(ulimit -Hn)"

# "listening on HOST:PORT" (ours) or the port given (Netty's line differs): waits for the port.
wait_port() {
  local file=$1 pid=$2 port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$file" | head -1)
    [[ -n $port ]] && { echo "$port"; return; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

run_one() {
  local name=$1 log="$out/$1.server.log" pid port
  case $name in
    tick1 | tick100)
      "${SERVER:-$build/apps/wheel-server/wheel-server}" --host 127.0.0.1 --port 0 --reader-idle 5s \
        --tick "${name#tick}ms" --max-connections 20000 --stats-interval 0 --log-level warn \
        >"$log" 2>&1 &
      pid=$!
      port=$(wait_port "$log" "$pid")
      ;;
    netty)
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      "$netty/run-idle-server.sh" --host 127.0.0.1 --port "$port" --idle-ms 5000 >"$log" 2>&1 &
      pid=$!
      for _ in $(seq 300); do  # the JVM takes a few seconds to listen
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
      done
      ;;
  esac
  local status=0
  "$build/apps/wheel-load/wheel-load" --host 127.0.0.1 --port "$port" \
    --connections "$connections" --active-ratio 0.5 --ping-interval 1s \
    --expect-idle-close 5s --tolerance 1s --duration 15s --connect-rate 5000 \
    --source-addresses 127.0.0.1-127.0.0.8 --processes auto --json "$out/$name.json" \
    --log-level warn >"$out/$name.report" 2>&1 || status=$?
  local cpu hwm
  cpu=$(cpu_s "$pid") hwm=$(hwm_mb "$pid")
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  python3 - "$out/$name.json" "$name" "$cpu" "$hwm" "$status" <<'PY'
import json, sys
path, name, cpu, hwm, status = sys.argv[1:]
r = json.load(open(path))
late = r["idle"]["lateness_ms"]
print(f"| {name} | {r['connections_established']} / {r['idle']['closed_on_time']} / "
      f"{r['active']['survived']} | {late['p50']:.1f} / {late['p99']:.1f} / {late['max']:.1f} "
      f"| {cpu} | {hwm} | {status} |")
PY
}

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "| server | established / idle closed on time / active survived | idle-close lateness p50 / p99 / max (ms) | server CPU, process life (s) | peak RSS (MB) | wheel-load exit |"
  echo "|---|---|---|---:|---:|---:|"
  for name in $order; do run_one "$name"; done
} | tee "$out/table.md"
