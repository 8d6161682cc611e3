#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Style checks: clang-format on every C++ file (fails on a diff); with --tidy also clang-tidy
# (.clang-tidy) over the library sources, using build/plain/compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc')
clang-format --dry-run -Werror "${files[@]}"
echo "lint: clang-format clean (${#files[@]} files)" >&2
# Every source, script and build file carries the project's SPDX license line.
mapfile -t unlicensed < <(git ls-files '*.h' '*.cc' '*.java' '*.js' '*.sh' '*.py' 'CMakeLists.txt' \
  '*.cmake' | xargs grep -L 'SPDX-License-Identifier: Apache-2.0' || true)
if ((${#unlicensed[@]})); then
  echo "lint: no SPDX-License-Identifier line in: ${unlicensed[*]}" >&2
  exit 1
fi
# No merge-conflict markers left in any tracked text file (a merge committed with them once).
if git grep -nI -E '^(<<<<<<<|>>>>>>>) ' -- . ':!*.jsonl' >&2; then
  echo "lint: merge-conflict markers above" >&2
  exit 1
fi
# Every message goes through wheel::logger() (wheel/logger.h), never spdlog's default logger.
if git grep -nE 'spdlog::(trace|debug|info|warn|error|critical)\(' -- '*.h' '*.cc' >&2; then
  echo "lint: spdlog's default logger used above; log through wheel::logger()" >&2
  exit 1
fi
# No two files include each other, in every C++ folder (issue 18).
python3 scripts/check-include-cycles.py common timer net redis server jobs load apps examples bench tests
if [[ ${1:-} == --tidy ]]; then
  [[ -f build/plain/compile_commands.json ]] || { echo "lint: build plain first" >&2; exit 2; }
  mapfile -t sources < <(git ls-files 'common/src/*.cc' 'timer/src/*.cc' 'net/src/*.cc' 'load/src/*.cc')
  clang-tidy -p build/plain --quiet "${sources[@]}"
fi
