#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak, two parts:
# 1. wheel-server --workers 2 under back-to-back rounds of a mixed wheel-load for the given
#    minutes, then checks the server's memory, descriptors, counters (its /metrics against the
#    clients' sums), shutdown and logs. The program wheel-soak does all of it; what it checks is
#    written in load/include/wheel/load/soak.h and `wheel-soak --help`.
# 2. kill -9 of wheel-jobs, the given number of rounds (tests/wheel_jobs_crash_test.cc: SIGKILL
#    under a mixed load, restart on the same directory, check every acknowledged change; what
#    it checks is written in tests/support/crash_model.h, the figures it prints in docs/jobs.md).
# Usage: scripts/soak.sh [minutes] [crash-rounds]   (defaults 1 and 40; CI runs `1`; 0 skips a
# part; the 1,000-round kill -9 soak is `scripts/soak.sh 0 1000`)
# Environment: BUILD (build/plain), ROUND (30, seconds), TOLERANCE (3s), RSS_SLACK_PCT (25),
# KEEP (a directory to keep the logs and reports in; default: a temporary one, removed on
# success), WHEEL_CRASH_SEED (the kill -9 rounds' random choices; default random, printed)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/plain}
minutes=${1:-1}
crash_rounds=${2:-40}
[[ $minutes =~ ^[0-9]+$ && $crash_rounds =~ ^[0-9]+$ ]] ||
  { echo "soak: minutes and crash-rounds are whole numbers, got '$minutes' '$crash_rounds'" >&2; exit 2; }
if ((minutes > 0)); then
  [[ -x $build/apps/wheel-load/wheel-soak && -x $build/apps/wheel-server/wheel-server ]] ||
    { echo "soak: build wheel-soak and wheel-server in $build first" >&2; exit 2; }
  "$build/apps/wheel-load/wheel-soak" --server "$build/apps/wheel-server/wheel-server" \
    --minutes "$minutes" --round "${ROUND:-30}s" --tolerance "${TOLERANCE:-3s}" \
    --rss-slack-pct "${RSS_SLACK_PCT:-25}" ${KEEP:+--keep "$KEEP"}
fi
if ((crash_rounds > 0)); then
  [[ -x $build/tests/wheel_jobs_crash_test ]] ||
    { echo "soak: build wheel_jobs_crash_test (and wheel-jobs) in $build first" >&2; exit 2; }
  WHEEL_CRASH_ROUNDS=$crash_rounds "$build/tests/wheel_jobs_crash_test" \
    --gtest_filter='WheelJobsCrash.*' --gtest_brief=1
fi
