#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what it needs, then builds and runs the whole GoogleTest
# suite three ways: plain (RelWithDebInfo), ASan+UBSan, and TSan. Fails on the first failure.
# Usage: scripts/run-tests.sh [plain] [asan] [tsan]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
configs=("$@")
((${#configs[@]})) || configs=(plain asan tsan)
jobs=$(nproc)
for cfg in "${configs[@]}"; do
  case $cfg in
    plain) sanitize="" ;;
    asan) sanitize=address ;;
    tsan) sanitize=thread ;;
    *) echo "run-tests: unknown configuration '$cfg' (plain, asan, tsan)" >&2; exit 2 ;;
  esac
  echo "=== $cfg: configure and build" >&2
  cmake -S . -B "build/$cfg" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHEEL_SANITIZE="$sanitize" >/dev/null
  cmake --build "build/$cfg" -j "$jobs"
  echo "=== $cfg: test" >&2
  # halt_on_error makes any sanitizer report fail the test that caused it.
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "build/$cfg" --output-on-failure -j "$jobs"
done
