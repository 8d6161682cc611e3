#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job: installs what it needs, builds, runs the timer example, then the
# idle-disconnect demo: wheel-server (reader-idle 5 s) under wheel-load (10,000 connections, half
# of them sending PING every second, 15 s). Prints wheel-load's report, stops the server and
# exits with wheel-load's status (0 only when every connection behaved as expected).
# stdout carries only the example's lines and the report; package installation and the build
# write to build/plain/demo-build.log (its tail goes to stderr when the build fails), progress
# lines to stderr. Measured times: docs/load-testing.md. The JSON report:
# build/plain/demo-report.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/plain
log=build/plain/demo-build.log
: >"$log"
echo "=== installing packages and building (log: $log)" >&2
if ! { scripts/install-deps.sh &&
       cmake -S . -B build/plain -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build/plain -j "$(nproc)" --target wheel-example wheel-server wheel-load
     } >>"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "run-demo: the build failed (the whole log: $log)" >&2
  exit 1
fi

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
exit "$status"
