#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs console-browser.js (Debian's chromium, headless, through playwright-core) against one
# wheel-jobs started here with its web console on free loopback ports, in a temporary directory,
# in one of its modes, and stops it (and the redis-server of the redis mode) afterwards.
# Usage: tests/console/run-browser-test.sh WORK_DIR MODE BINARY
#   WORK_DIR  where node_modules goes (npm ci from package-lock.json when missing or stale) and
#             the screenshots (WORK_DIR/artifacts/MODE/*.png), kept as the test's artifacts
#   MODE      memory, dir (--dir on a temporary directory) or redis (--store on a redis-server
#             started here)
#   BINARY    the wheel-jobs program
# Every wait is bounded; exit 0 = passed, 77 = skipped (no chromium), anything else = failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/npm-ci-once.sh
source "$here/../support/npm-ci-once.sh"
(($# == 3)) || { echo "usage: $0 WORK_DIR MODE BINARY" >&2; exit 2; }
work=$1 mode=$2 binary=$3
chromium=${WHEEL_CHROMIUM:-/usr/bin/chromium}
[[ -x $binary ]] || { echo "no wheel-jobs program '$binary'" >&2; exit 1; }
if [[ ! -x $chromium ]]; then
  echo "SKIP: no chromium at $chromium (scripts/install-deps.sh installs Debian's)" >&2
  exit 77
fi
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "node and npm are needed (scripts/install-deps.sh installs them)" >&2; exit 1; }

npm_ci_once "$here" "$work"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  node -e 'const s = require("net").createServer();
           s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}
wait_port() {  # PID PORT: up to 10 s
  for _ in $(seq 100); do
    kill -0 "$1" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

extra=()
case $mode in
  memory) ;;
  dir) extra=(--dir "$tmp/jobs") ;;
  redis)
    command -v redis-server >/dev/null || { echo "SKIP: no redis-server" >&2; exit 77; }
    rport=$(free_port)
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
      >"$tmp/redis.log" 2>&1 &
    pids+=($!)
    wait_port "${pids[-1]}" "$rport" || { cat "$tmp/redis.log" >&2; exit 1; }
    extra=(--store "redis://127.0.0.1:$rport") ;;
  *) echo "MODE must be memory, dir or redis, not '$mode'" >&2; exit 2 ;;
esac

up=0
for attempt in 1 2 3; do  # a port found free may be taken before the server binds it
  port=$(free_port) hport=$(free_port)
  "$binary" --port "$port" --http-port "$hport" "${extra[@]}" >"$tmp/server.log" 2>&1 &
  pid=$!
  if wait_port "$pid" "$port" && wait_port "$pid" "$hport"; then up=1; pids+=("$pid"); break; fi
  echo "attempt $attempt: wheel-jobs did not start:" >&2
  cat "$tmp/server.log" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
((up)) || exit 1
echo "wheel-jobs ($mode) on 127.0.0.1:$port, console on http://127.0.0.1:$hport/" >&2

artifacts="$work/artifacts/$mode"
rm -rf "$artifacts"
status=0
NODE_PATH="$work/node_modules" timeout 180 node "$here/console-browser.js" "$port" "$hport" \
  "$artifacts" "$mode" || status=$?
if ((status != 0)); then
  echo "browser test failed (exit $status) in mode $mode; server log:" >&2
  cat "$tmp/server.log" >&2
fi
echo "screenshots: $artifacts" >&2
exit $status
