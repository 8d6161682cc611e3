#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one class of the project's Netty harness, building it first when its sources are newer
# than the build. JSON lines (NettyTimerBench) on stdout, diagnostics on stderr.
# Usage: bench/netty/run.sh NettyTimerBench [options]   (--help lists them)
#        bench/netty/run.sh NettyIdleServer --port 7000 --idle-ms 5000
# Env:   NETTY_BENCH_OUT (build/netty-bench), JAVA_OPTS (extra JVM flags, default none)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${NETTY_BENCH_OUT:-$(cd "$HERE/../.." && pwd)/build/netty-bench}
(($# >= 1)) || { echo "usage: $0 CLASS [options]" >&2; exit 2; }
main=$1
shift
stale=0
[[ -f $OUT/classpath.txt ]] || stale=1
for src in "$HERE"/*.java; do
  [[ $stale == 1 || $src -nt $OUT/classpath.txt ]] && stale=1
done
[[ $stale == 0 ]] || "$HERE/build.sh" "$OUT"
# shellcheck disable=SC2086  # JAVA_OPTS is a list of flags
exec java ${JAVA_OPTS:-} -cp "$(cat "$OUT/classpath.txt")" "$main" "$@"
