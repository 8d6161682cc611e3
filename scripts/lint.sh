#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Style checks: clang-format on every C++ file (fails on a diff), license lines, conflict markers,
# Lua syntax, the docs' links (scripts/check-doc-links.py), include cycles; with --tidy also
# clang-tidy (.clang-tidy) over the library sources, using build/plain/compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc')
clang-format --dry-run -Werror "${files[@]}"
echo "lint: clang-format clean (${#files[@]} files)" >&2
# Every source, script and build file carries the project's SPDX license line.
# Vendored third-party files (*/vendor/*) keep their own license (jobs/console/web/vendor).
mapfile -t unlicensed < <(git ls-files '*.h' '*.cc' '*.java' '*.js' '*.sh' '*.py' 'CMakeLists.txt' \
  '*.cmake' '*.lua' ':!*/vendor/*' | xargs grep -L 'SPDX-License-Identifier: Apache-2.0' || true)
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
# Lua lives in .lua files (issue 31), embedded at build time (cmake/WheelEmbedLua.cmake), never
# in C++ strings: each file parses as Lua 5.1 (Redis's Lua), and each script of a folder with a
# prologue.lua parses as Redis loads it, after the prologue (jobs/fleet/src/redis_scripts.cc).
if git grep -nF 'redis.call' -- '*.h' '*.cc' >&2; then
  echo "lint: Lua in C++ above; put it in a .lua file (cmake/WheelEmbedLua.cmake)" >&2
  exit 1
fi
command -v luac5.1 >/dev/null || { echo "lint: luac5.1 missing (scripts/install-deps.sh)" >&2; exit 2; }
mapfile -t lua < <(git ls-files '*.lua')
for f in "${lua[@]}"; do
  luac5.1 -p "$f"
  prologue="$(dirname "$f")/prologue.lua"
  if [[ -f $prologue && $f != "$prologue" ]]; then
    if ! out=$(cat "$prologue" "$f" | luac5.1 -p - 2>&1); then
      echo "lint: $f after $prologue: $out" >&2
      exit 1
    fi
  fi
done
echo "lint: luac5.1 -p clean (${#lua[@]} .lua files)" >&2
# Every link in the docs leads somewhere, and no page points at an issue the reader cannot see.
python3 scripts/check-doc-links.py
# No two files include each other, in every C++ folder (issue 18).
python3 scripts/check-include-cycles.py common timer net redis server jobs load apps examples bench tests
if [[ ${1:-} == --tidy ]]; then
  [[ -f build/plain/compile_commands.json ]] || { echo "lint: build plain first" >&2; exit 2; }
  mapfile -t sources < <(git ls-files 'common/src/*.cc' 'timer/src/*.cc' 'net/src/*.cc' 'load/src/*.cc')
  clang-tidy -p build/plain --quiet "${sources[@]}"
fi
