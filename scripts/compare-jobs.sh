#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 19 §4, one run side by side: wheel-jobs, Debian's beanstalkd (-b -f0, -b -f50, memory)
# and Debian's redis-server (AOF always, everysec; a Redis delay queue) under the same load of
# wheel-jobs-load (apps/wheel-load/jobs_load_main.cc; the logic is wheel::load's jobs_compare.h).
# The servers run in rounds whose order rotates; the table gives the medians and the goals.
# Writes OUT/compare.jsonl (every measurement as a JSON line, then the summary) and
# OUT/table.md (the goal table, also printed).
#
# Usage: scripts/compare-jobs.sh [extra `wheel-jobs-load compare` options, e.g. --rounds 5]
# Env:   BUILD (build/plain), OUT (docs/bench/raw-YYYY-MM-DD-HHMM-jobs-compare),
#        WORK (a temporary directory; the servers' data, removed afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/plain}
out=${OUT:-docs/bench/raw-$(date -u +%Y-%m-%d-%H%M)-jobs-compare}
for program in beanstalkd redis-server; do
  command -v "$program" >/dev/null ||
    { echo "compare-jobs: $program is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
cmake --build "$build" -j2 --target wheel-jobs wheel-jobs-load >&2
work=${WORK:-$(mktemp -d)}
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
: >"$out/compare.jsonl"
{
  echo "compare-jobs: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "  $("$build/apps/wheel-jobs/wheel-jobs" --version), beanstalkd $(beanstalkd -v 2>&1 | awk '{print $2}'), $(redis-server --version | awk '{print $3}')"
} | tee "$out/environment.txt" >&2
"$build/apps/wheel-load/wheel-jobs-load" compare \
  --wheel-jobs "$build/apps/wheel-jobs/wheel-jobs" \
  --beanstalkd "$(command -v beanstalkd)" \
  --redis-server "$(command -v redis-server)" \
  --work-dir "$work" --jsonl "$out/compare.jsonl" --table "$out/table.md" "$@"
