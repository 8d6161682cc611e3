#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang (ASan+UBSan, -DWHEEL_FUZZ=ON) into build/fuzz and runs
# every one it finds (tests/fuzz/<name>_fuzz.cc -> build/fuzz/tests/fuzz/fuzz_<name>) for the
# given seconds, starting from its seed corpus tests/fuzz/corpus/<name>/ (new inputs go to
# build/fuzz/corpus/<name>/, the seeds stay as they are). Prints each target's executions and
# fails on the first crash (the crashing input is left in build/fuzz/).
# Usage: scripts/fuzz.sh [seconds-per-target]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || { echo "fuzz: seconds must be a whole number >= 1" >&2; exit 2; }
scripts/install-deps.sh clang libclang-rt-14-dev  # libFuzzer's runtime comes with clang's
CXX=${CXX:-clang++} cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHEEL_FUZZ=ON \
  -DWHEEL_BUILD_TESTS=OFF -DWHEEL_BUILD_EXAMPLES=OFF >/dev/null
mapfile -t names < <(for f in tests/fuzz/*_fuzz.cc; do basename "$f" _fuzz.cc; done)
((${#names[@]})) || { echo "fuzz: no targets in tests/fuzz" >&2; exit 1; }
cmake --build build/fuzz -j "$(nproc)" --target "${names[@]/#/fuzz_}"
status=0
for name in "${names[@]}"; do
  corpus=build/fuzz/corpus/$name
  mkdir -p "$corpus"
  log=build/fuzz/$name.log
  echo "=== fuzz_$name: ${seconds} s" >&2
  if (cd build/fuzz && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "tests/fuzz/fuzz_$name" -max_total_time="$seconds" -print_final_stats=1 \
      "corpus/$name" "../../tests/fuzz/corpus/$name") >"$log" 2>&1; then
    echo "fuzz_$name: ok, $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$') executions in ${seconds} s, corpus $(ls "$corpus" | wc -l) new inputs"
  else
    echo "fuzz_$name: FAILED, see $log"
    tail -30 "$log" >&2
    status=1
  fi
done
exit $status
