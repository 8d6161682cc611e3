#!/usr/bin/env bash
# Style checks: clang-format on every C++ file (fails on a diff); with --tidy also clang-tidy
# (.clang-tidy) over the library sources, using build/plain/compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc')
clang-format --dry-run -Werror "${files[@]}"
echo "lint: clang-format clean (${#files[@]} files)" >&2
if [[ ${1:-} == --tidy ]]; then
  [[ -f build/plain/compile_commands.json ]] || { echo "lint: build plain first" >&2; exit 2; }
  mapfile -t sources < <(git ls-files 'timer/src/*.cc' 'net/src/*.cc' 'load/src/*.cc')
  clang-tidy -p build/plain --quiet "${sources[@]}"
fi
