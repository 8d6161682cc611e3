#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A compiler (and linker) launcher that appends each compile's CPU and wall time to a log, to
# find where a cold build's CPU goes (docs/testing.md). Lines: "USER SYS WALL OUTPUT" (seconds).
#   cmake -S . -B build/m -DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/scripts/compile-cpu.sh" \
#         -DCMAKE_CXX_LINKER_LAUNCHER="$PWD/scripts/compile-cpu.sh" ...
#   COMPILE_CPU_LOG=/tmp/cpu.log cmake --build build/m -j 2
#   sort -rn /tmp/cpu.log | head   # the heaviest files
# Through ccache instead (its misses only): CCACHE_PREFIX="$PWD/scripts/compile-cpu.sh".
set -euo pipefail
out="?" prev=""
for arg in "$@"; do
  [[ $prev == -o ]] && out=$arg
  prev=$arg
done
exec /usr/bin/time -a -o "${COMPILE_CPU_LOG:-/tmp/compile-cpu.log}" -f "%U %S %e $out" "$@"
