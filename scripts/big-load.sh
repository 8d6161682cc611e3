#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The big case (not in CI): N concurrent connections on this machine, 100,000 by default and
# 1,000,000 with `scripts/big-load.sh 1000000`. Builds wheel-server, wheel-load and
# wheel-big-load, which plans the run to the machine's limits (load/include/wheel/load/
# big_load_plan.h gives the formulas), runs it and measures the server's CPU and memory while all
# connections are open and idle. Reports: $BUILD/big-load-report.json, $BUILD/big-load-summary.txt.
# Usage: scripts/big-load.sh [connections] [workers]   (defaults 100000, planned)
# Environment: CONNECT_RATE (5000), ACTIVE_RATIO (0.1), READER_IDLE, DURATION, PING_INTERVAL
# (seconds; planned if unset), BUILD (build/plain)
set -euo pipefail
cd "$(dirname "$0")/.."
b=${BUILD:-build/plain}
scripts/install-deps.sh && cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
  cmake --build "$b" -j "$(nproc)" --target wheel-server wheel-load wheel-big-load >&2
exec "$b/apps/wheel-load/wheel-big-load" --server "$b/apps/wheel-server/wheel-server" \
  --load "$b/apps/wheel-load/wheel-load" --connections "${1:-100000}" ${2:+--workers "$2"} \
  --connect-rate "${CONNECT_RATE:-5000}" --active-ratio "${ACTIVE_RATIO:-0.1}" \
  ${READER_IDLE:+--reader-idle "${READER_IDLE}s"} ${DURATION:+--duration "${DURATION}s"} \
  ${PING_INTERVAL:+--ping-interval "${PING_INTERVAL}s"} \
  --report "$b/big-load-report.json" --summary "$b/big-load-summary.txt"
