#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job: installs what it needs, builds the five programs it runs (through
# ccache when installed: scripts/ccache-env.sh), runs the timer example, then two demos:
# 1. idle disconnects: wheel-server (reader-idle 5 s) under wheel-load (10,000 connections,
#    half of them sending PING every second, 15 s);
# 2. durable jobs: `wheel-jobs-load demo` (load/include/wheel/load/jobs_demo.h): wheel-jobs
#    --dir in a temporary directory, 10,000 jobs delayed 1-5 s put over 8 connections, kill -9
#    halfway through the puts, restart, then every acknowledged job reserved, none early.
# Prints both reports and exits 0 only when both passed (wheel-load: every connection behaved
# as expected; the jobs demo: nothing acknowledged lost or early).
# stdout carries only the example's lines and the reports; package installation and the build
# write to build/plain/demo-build.log (its tail goes to stderr when the build fails), progress
# lines to stderr. Measured times: docs/load-testing.md. wheel-load's JSON report:
# build/plain/demo-report.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/plain
log=build/plain/demo-build.log
: >"$log"
# Seconds of CPU used by this script's finished children (clock ticks of /proc/PID/stat).
child_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($16 + $17) / hz}' /proc/$$/stat; }
start=$SECONDS cpu=$(child_cpu)
echo "=== installing packages and building (log: $log)" >&2
scripts/install-deps.sh >>"$log" 2>&1 || { tail -n 40 "$log" >&2; exit 1; }
source scripts/ccache-env.sh  # after install-deps: it installs ccache
# The same build directory and settings as `scripts/run-tests.sh plain`, so each reuses what
# the other built; only the programs this script runs are built.
if ! { cmake -S . -B build/plain -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHEEL_SANITIZE= \
         "${wheel_launcher[@]}" &&
       cmake --build build/plain -j "$(nproc)" \
         --target wheel-example wheel-server wheel-load wheel-jobs wheel-jobs-load
     } >>"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "run-demo: the build failed (the whole log: $log)" >&2
  exit 1
fi
echo "=== built in $((SECONDS - start)) s ($(($(child_cpu) - cpu)) s CPU), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

echo "=== the timer example" >&2
build/plain/examples/wheel-example

connections=10000
# Each side holds ~10,000 sockets: lift the soft open-file limit to the hard one. If even that
# is too small, wheel-load splits itself (--processes auto) and the server gets more workers.
ulimit -n "$(ulimit -Hn)"
per_process=$(($(ulimit -n) - 100))
workers=$(((connections + per_process - 1) / per_process))

echo "=== demo: wheel-server --reader-idle 5s under wheel-load, $connections connections" >&2
server_out=$(mktemp)
build/plain/apps/wheel-server/wheel-server --host 127.0.0.1 --port 0 --reader-idle 5s \
  --workers "$workers" --max-connections "$per_process" --log-level warn >"$server_out" &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" || true
  fi
  rm -f "$server_out"
}
trap stop_server EXIT

port=""
for _ in $(seq 100); do  # up to 10 s for "listening on HOST:PORT"
  port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$server_out")
  [[ -n $port ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $port ]]; then
  echo "run-demo: wheel-server did not report its port" >&2
  exit 1
fi

status=0
build/plain/apps/wheel-load/wheel-load --host 127.0.0.1 --port "$port" \
  --connections "$connections" --active-ratio 0.5 --ping-interval 1s \
  --expect-idle-close 5s --tolerance 1s --duration 15s --connect-rate 5000 \
  --source-addresses 127.0.0.1-127.0.0.8 --processes auto \
  --json build/plain/demo-report.json --log-level warn || status=$?
stop_server
trap - EXIT
echo "run-demo: wheel-load exit status $status (report: build/plain/demo-report.json)" >&2

echo "=== demo: wheel-jobs --dir, 10,000 delayed jobs, kill -9 partway, restart, reserve all" >&2
jobs_status=0
build/plain/apps/wheel-load/wheel-jobs-load demo \
  --wheel-jobs build/plain/apps/wheel-jobs/wheel-jobs --jobs 10000 --connections 8 \
  --delay-min 1 --delay-max 5 || jobs_status=$?
echo "run-demo: wheel-jobs-load demo exit status $jobs_status" >&2
((status != 0)) && exit "$status"
exit "$jobs_status"
