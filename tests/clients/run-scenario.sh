#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs scenario.js (an unmodified npm beanstalkd client) against one server started here on a
# free loopback port, in a temporary directory, and stops it afterwards.
# Usage: tests/clients/run-scenario.sh WORK_DIR KIND BINARY
#   WORK_DIR  where node_modules goes (npm ci from package-lock.json when missing or stale)
#   KIND      beanstalkd (the reference: Debian's beanstalkd) or wheel-jobs (adds --extensions)
#   BINARY    the server program; for wheel-jobs an empty or missing one skips (exit 77)
# Every wait is bounded; exit 0 = the scenario passed, 77 = skipped, anything else = failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/npm-ci-once.sh
source "$here/../support/npm-ci-once.sh"
(($# == 3)) || { echo "usage: $0 WORK_DIR KIND BINARY" >&2; exit 2; }
work=$1 kind=$2 binary=$3

case $kind in
  beanstalkd) ;;
  wheel-jobs)
    if [[ -z $binary || ! -x $binary ]]; then
      echo "SKIP: no wheel-jobs program yet (set by the wheel-jobs target); the scenario runs" \
           "against it once it is built" >&2
      exit 77
    fi ;;
  *) echo "KIND must be beanstalkd or wheel-jobs, not '$kind'" >&2; exit 2 ;;
esac
[[ -x $binary ]] || { echo "no server program '$binary' (scripts/install-deps.sh installs beanstalkd)" >&2; exit 1; }
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "node and npm are needed (scripts/install-deps.sh installs them)" >&2; exit 1; }

npm_ci_once "$here" "$work"

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  node -e 'const s = require("net").createServer();
           s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# A port found free may be taken before the server binds it: try a few.
for attempt in 1 2 3; do
  port=$(free_port)
  case $kind in
    beanstalkd) (cd "$tmp" && exec "$binary" -l 127.0.0.1 -p "$port") >"$tmp/server.log" 2>&1 & ;;
    wheel-jobs) (cd "$tmp" && exec "$binary" --host 127.0.0.1 --port "$port") >"$tmp/server.log" 2>&1 & ;;
  esac
  server_pid=$!
  up=0
  for _ in $(seq 100); do  # up to 10 s
    kill -0 "$server_pid" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  ((up)) && break
  echo "attempt $attempt: $kind did not start on port $port:" >&2
  cat "$tmp/server.log" >&2
  cleanup_pid=$server_pid server_pid=""
  kill -KILL "$cleanup_pid" 2>/dev/null || true
  wait "$cleanup_pid" 2>/dev/null || true
done
((up)) || { echo "$kind did not start" >&2; exit 1; }
echo "$kind ($binary) on 127.0.0.1:$port" >&2

extra=()
[[ $kind == wheel-jobs ]] && extra=(--extensions)
status=0
NODE_PATH="$work/node_modules" timeout 120 node "$here/scenario.js" "$port" "${extra[@]}" || status=$?
if ((status != 0)); then
  echo "scenario failed (exit $status) against $kind; server log:" >&2
  cat "$tmp/server.log" >&2
fi
exit $status
