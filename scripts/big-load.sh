#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The big case (not in CI): 100,000 concurrent connections on this machine.
# wheel-server --workers 6 under wheel-load --processes auto, connections spread over several
# loopback source addresses, 10% active, for 60 s. The server closes idle connections after
# 30 s, so with 5,000 new connections a second all 100,000 are open together from ~20 s to
# ~30 s, and every idle close is still checked before the end.
# Prints the machine limits that matter, wheel-load's report, and the server's total RSS / PSS
# (peak, sampled each second) and CPU time. Reports: build/plain/big-load-report.json.
#
# Usage: scripts/big-load.sh [connections] [workers]   (defaults 100000 6)
# Environment: DURATION (60s), READER_IDLE (30s), ACTIVE_RATIO (0.1), CONNECT_RATE (5000),
#              BUILD (build/plain)
set -euo pipefail
cd "$(dirname "$0")/.."
connections=${1:-100000}
workers=${2:-6}
duration=${DURATION:-60s}
reader_idle=${READER_IDLE:-30s}
active_ratio=${ACTIVE_RATIO:-0.1}
connect_rate=${CONNECT_RATE:-5000}
build=${BUILD:-build/plain}

scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target wheel-server wheel-load

ulimit -n "$(ulimit -Hn)"
read -r port_lo port_hi </proc/sys/net/ipv4/ip_local_port_range
ports=$((port_hi - port_lo + 1))
# Ephemeral ports are per (source address, server address:port). The kernel's port search in
# connect() slows down as an address fills up (15,000 connections on one address: p99 connect
# lag 400 ms, the loop stalls), so keep each address to 5,000 connections, far below the range.
per_address=$((ports < 25000 ? ports / 5 : 5000))
addresses=$(((connections + per_address - 1) / per_address))
((addresses >= 2)) || addresses=2
((addresses <= 250)) || { echo "big-load: too many connections for 127.0.0.x" >&2; exit 2; }
sources="127.0.0.1-127.0.0.$addresses"
per_worker=$(($(ulimit -n) - 100))

echo "=== machine" >&2
echo "cores $(nproc); memory $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo);" \
  "open files per process $(ulimit -n) (hard $(ulimit -Hn)); fs.nr_open $(cat /proc/sys/fs/nr_open);" \
  "fs.file-max $(cat /proc/sys/fs/file-max)" >&2
echo "ip_local_port_range $port_lo-$port_hi ($ports ports per source address) -> $addresses" \
  "source addresses ($sources); somaxconn $(cat /proc/sys/net/core/somaxconn);" \
  "tcp_max_syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog);" \
  "nf_conntrack_max $(cat /proc/sys/net/netfilter/nf_conntrack_max 2>/dev/null || echo n/a)" >&2
echo "sockets in use: $(grep '^TCP:' /proc/net/sockstat)" >&2

server_out=$(mktemp)
"$build/apps/wheel-server/wheel-server" --host 127.0.0.1 --port 0 --reader-idle "$reader_idle" \
  --workers "$workers" --max-connections "$per_worker" --stats-interval 10s \
  --log-level warn >"$server_out" &
server_pid=$!
sampler_pid=""
cleanup() {
  [[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null || true
  kill -0 "$server_pid" 2>/dev/null && kill -TERM "$server_pid" && wait "$server_pid" || true
  rm -f "$server_out"
}
trap cleanup EXIT
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$server_out")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "big-load: wheel-server did not report its port" >&2; exit 1; }

# The server and its workers (its direct children).
server_pids() { echo "$server_pid" $(ps -o pid= --ppid "$server_pid"); }
# Sum of VmRSS and of Pss (shared pages split between the processes) over them, in KiB.
memory_kib() {
  local rss=0 pss=0 p v
  for p in $(server_pids); do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0); rss=$((rss + ${v:-0}))
    v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0); pss=$((pss + ${v:-0}))
  done
  echo "$rss $pss"
}
# CPU seconds (user + system) of the server processes so far.
cpu_seconds() {
  local ticks=0 p t
  for p in $(server_pids); do
    t=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0); ticks=$((ticks + ${t:-0}))
  done
  awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}'
}
sleep 0.5
read -r rss0 pss0 < <(memory_kib)
samples=$(mktemp)
(while :; do echo "$(memory_kib) $(grep '^TCP:' /proc/net/sockstat | awk '{print $3}')"; sleep 1; done >"$samples") &
sampler_pid=$!

echo "=== wheel-load: $connections connections ($active_ratio active) over $sources, $duration" >&2
status=0
start_cpu=$(cpu_seconds)
TIMEFORMAT="wheel-load (all processes): %R s wall, %U s user, %S s system"
time "$build/apps/wheel-load/wheel-load" --host 127.0.0.1 --port "$port" \
  --connections "$connections" --active-ratio "$active_ratio" --ping-interval 1s \
  --expect-idle-close "$reader_idle" --tolerance 1s --duration "$duration" \
  --connect-rate "$connect_rate" --source-addresses "$sources" --processes auto \
  --json "$build/big-load-report.json" --log-level warn || status=$?
end_cpu=$(cpu_seconds)
kill "$sampler_pid" 2>/dev/null || true
sampler_pid=""
read -r peak_rss peak_pss peak_tcp < <(awk '$1 > r {r = $1} $2 > p {p = $2} $3 > t {t = $3}
  END {print r + 0, p + 0, t + 0}' "$samples")
rm -f "$samples"
echo "=== wheel-server --workers $workers ($(server_pids | wc -w) processes)" >&2
echo "server memory at start: RSS $rss0 KiB, PSS $pss0 KiB; peak (sampled 1/s): RSS $peak_rss KiB," \
  "PSS $peak_pss KiB; peak TCP sockets in use on the machine $peak_tcp (both ends)" >&2
echo "server CPU during the run: $(awk -v a="$start_cpu" -v b="$end_cpu" 'BEGIN {printf "%.2f", b - a}') s" \
  "(user+system, all workers); total since start $end_cpu s" >&2
echo "big-load: wheel-load exit status $status (report: $build/big-load-report.json)" >&2
exit "$status"
