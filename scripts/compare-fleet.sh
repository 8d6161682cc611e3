#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Side by side on the same redis-server (issue 20 section 3): BullMQ 6.7, the plain pattern
# (ZADD + a Lua ZRANGEBYSCORE/ZREM claim) and wheel-jobs --store redis://. Each round runs every
# peer once, in turn, on a fresh redis-server (AOF everysec) in a temporary directory on a free
# port (bench/bullmq/run-peer.js: added/s, delivered/s when all are due, the issue's workload end
# to end (N jobs added while the workers run, until all are delivered: Redis commands per
# delivered job, lateness, delivered/s), lateness at a due rate BullMQ keeps up with, Redis
# commands per second with nothing due; per phase, which part saturated first); then the fleet
# curve (2.. wheel-jobs nodes on one Redis). Prints the table of medians; the JSON lines, the
# table and the machine's state go to docs/bench/raw-DATE-fleet/ (SAVE=0: build/compare-fleet/
# only).
#
# Usage: scripts/compare-fleet.sh
# Env:   ROUNDS (3), PEERS (bullmq,plain,wheel-jobs), N (100000 jobs), LAT_N (10000 jobs),
#        LAT_RATE (1000 jobs/s added in the lateness run), IDLE_SECS (30), NODES (1,2,3),
#        CONCURRENCY (50: the jobs a worker has in flight, BullMQ's concurrency, the beanstalk
#        worker's reserve connections), MIN_DELAY_MS (1000), MAX_DELAY_MS (10000),
#        E2E_TIMEOUT_SECS (300: the end-to-end phase fails unless every job is delivered by then),
#        SAVE (1), WHEEL_JOBS (a wheel-jobs binary; default: built here in build/bench), JOBS_LOAD
#        (a wheel-jobs-load binary for the deliver-in-process row; default: built there too).
set -euo pipefail
if (($#)); then
  # Options live in the environment (above); an argument is a mistake, never a run.
  sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
  [[ $1 == --help || $1 == -h ]] && exit 0
  echo "compare-fleet.sh: takes no arguments (got '$1'); settings are environment variables" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-3}
PEERS=${PEERS:-bullmq,plain,wheel-jobs}
N=${N:-100000}
LAT_N=${LAT_N:-10000}
LAT_RATE=${LAT_RATE:-1000}
IDLE_SECS=${IDLE_SECS:-30}
NODES=${NODES:-1,2,3}
MIN_DELAY_MS=${MIN_DELAY_MS:-1000}
MAX_DELAY_MS=${MAX_DELAY_MS:-10000}
E2E_TIMEOUT_SECS=${E2E_TIMEOUT_SECS:-300}
CONCURRENCY=${CONCURRENCY:-50}
SAVE=${SAVE:-1}
OUT=$ROOT/build/compare-fleet
PEER_DIR=$ROOT/bench/bullmq
mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl "$OUT"/*.err  # no stale rounds

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a whole number from 1, not '$ROUNDS'" >&2; exit 2; }
# The other numbers are range-checked by run-peer.js (exit 2 naming the option and its range).
scripts/install-deps.sh redis-server >&2  # and node, npm; skips what is installed

# --- the peers' npm packages (bullmq, ioredis), installed once per package-lock.json
if ! cmp -s "$PEER_DIR/package-lock.json" "$PEER_DIR/node_modules/.fleet-lock" 2>/dev/null; then
  echo "compare-fleet: npm ci in bench/bullmq" >&2
  (cd "$PEER_DIR" && timeout 600 npm ci --no-audit --no-fund --ignore-scripts >&2)
  cp "$PEER_DIR/package-lock.json" "$PEER_DIR/node_modules/.fleet-lock"
fi

# --- wheel-jobs, when it has a Redis store
if [[ ,$PEERS, == *,wheel-jobs,* ]]; then
  if [[ -z ${WHEEL_JOBS:-} ]]; then
    cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DWHEEL_BUILD_TESTS=OFF >/dev/null
    cmake --build build/bench -j "$(nproc)" --target wheel-jobs >&2
    WHEEL_JOBS=$ROOT/build/bench/apps/wheel-jobs/wheel-jobs
  fi
  if [[ -z ${JOBS_LOAD:-} ]]; then
    cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DWHEEL_BUILD_TESTS=OFF >/dev/null
    cmake --build build/bench -j "$(nproc)" --target wheel-jobs-load >&2
    JOBS_LOAD=$ROOT/build/bench/apps/wheel-load/wheel-jobs-load
  fi
  if ! "$WHEEL_JOBS" --help 2>&1 | grep -q -- '--store'; then
    echo "compare-fleet: $WHEEL_JOBS has no --store option (no Redis store yet): wheel-jobs skipped" >&2
    PEERS=$(echo ",$PEERS," | sed 's/,wheel-jobs,/,/; s/^,//; s/,$//')
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stamp=$(date -u '+%Y-%m-%d-%H%M')
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "load at start: $(uptime)"
  echo "redis-server: $(redis-server --version | cut -d' ' -f3), AOF everysec, no RDB, fresh per peer and round"
  echo "node: $(node --version); bullmq $(node -p "require('$PEER_DIR/node_modules/bullmq/package.json').version");" \
    "ioredis $(node -p "require('$PEER_DIR/node_modules/ioredis/package.json').version")"
  echo "clients: one Node process per role; BullMQ its own Queue/Worker, plain ioredis pipelines," \
    "wheel-jobs bench/bullmq/beanstalk-*.js (12 put, $CONCURRENCY reserve connections over the nodes)"
  echo "wheel-jobs: $(git rev-parse --short HEAD 2>/dev/null || echo '?')${WHEEL_JOBS:+ (${WHEEL_JOBS#"$ROOT"/})}"
  echo "command: scripts/compare-fleet.sh (ROUNDS=$ROUNDS PEERS=$PEERS N=$N LAT_N=$LAT_N" \
    "LAT_RATE=$LAT_RATE IDLE_SECS=$IDLE_SECS NODES=$NODES MIN_DELAY_MS=$MIN_DELAY_MS" \
    "MAX_DELAY_MS=$MAX_DELAY_MS E2E_TIMEOUT_SECS=$E2E_TIMEOUT_SECS CONCURRENCY=$CONCURRENCY)"
} | tee "$OUT/machine.txt" >&2

common=(--n "$N" --lat-n "$LAT_N" --lat-rate "$LAT_RATE" --idle-secs "$IDLE_SECS"
        --min-delay-ms "$MIN_DELAY_MS" --max-delay-ms "$MAX_DELAY_MS"
        --e2e-timeout-secs "$E2E_TIMEOUT_SECS" --concurrency "$CONCURRENCY" --work-dir "$tmp")
IFS=, read -ra peers <<< "$PEERS"
IFS=, read -ra node_counts <<< "$NODES"
for r in $(seq 1 "$ROUNDS"); do
  for peer in "${peers[@]}"; do
    echo "compare-fleet: round $r/$ROUNDS: $peer" >&2
    args=(--peer "$peer" --round "$r" "${common[@]}")
    [[ $peer == wheel-jobs ]] && args+=(--wheel-jobs "$WHEEL_JOBS" --jobs-load "$JOBS_LOAD")
    node "$PEER_DIR/run-peer.js" "${args[@]}" > "$OUT/$peer-$r.jsonl" 2> "$OUT/$peer-$r.err" ||
      { echo "compare-fleet: $peer round $r failed:" >&2; tail -5 "$OUT/$peer-$r.err" >&2; }
  done
  if [[ ,$PEERS, == *,wheel-jobs,* ]]; then
    for k in "${node_counts[@]}"; do
      ((k > 1)) || continue  # one node is the wheel-jobs row above
      echo "compare-fleet: round $r/$ROUNDS: $k wheel-jobs nodes on one Redis" >&2
      node "$PEER_DIR/run-peer.js" --peer wheel-jobs --round "$r" --nodes "$k" "${common[@]}" \
        --wheel-jobs "$WHEEL_JOBS" > "$OUT/fleet$k-$r.jsonl" 2> "$OUT/fleet$k-$r.err" ||
        { echo "compare-fleet: $k nodes round $r failed:" >&2; tail -5 "$OUT/fleet$k-$r.err" >&2; }
    done
  fi
  echo "load after round $r: $(uptime)" | tee -a "$OUT/machine.txt" >&2
done

node "$PEER_DIR/table.js" "$OUT"/*.jsonl | tee "$OUT/table.md"
if [[ $SAVE != 0 ]]; then
  dest=docs/bench/raw-$stamp-fleet
  mkdir -p "$dest"
  cp "$OUT"/*.jsonl "$OUT/table.md" "$OUT/machine.txt" "$dest/"
  echo "compare-fleet: saved in $dest" >&2
fi
