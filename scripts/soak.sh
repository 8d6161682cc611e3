#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak: wheel-server --workers 2 under back-to-back rounds of a mixed wheel-load for the given
# minutes, then checks the server's memory, descriptors, counters (its /metrics against the
# clients' sums), shutdown and logs. The program wheel-soak does all of it; what it checks is
# written in load/include/wheel/load/soak.h and `wheel-soak --help`.
# Usage: scripts/soak.sh [minutes]   (default 1; CI runs 1)
# Environment: BUILD (build/plain), ROUND (30, seconds), TOLERANCE (3s), RSS_SLACK_PCT (25),
# KEEP (a directory to keep the logs and reports in; default: a temporary one, removed on success)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/plain}
[[ -x $build/apps/wheel-load/wheel-soak && -x $build/apps/wheel-server/wheel-server ]] ||
  { echo "soak: build wheel-soak and wheel-server in $build first" >&2; exit 2; }
exec "$build/apps/wheel-load/wheel-soak" --server "$build/apps/wheel-server/wheel-server" \
  --minutes "${1:-1}" --round "${ROUND:-30}s" --tolerance "${TOLERANCE:-3s}" \
  --rss-slack-pct "${RSS_SLACK_PCT:-25}" ${KEEP:+--keep "$KEEP"}
