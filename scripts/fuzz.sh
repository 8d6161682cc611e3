#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang (ASan+UBSan, -DWHEEL_FUZZ=ON) into build/fuzz and runs
# every one it finds (tests/fuzz/<name>_fuzz.cc -> build/fuzz/tests/fuzz/fuzz_<name>) for the
# given seconds, starting from its seed corpus tests/fuzz/corpus/<name>/ (new inputs go to
# build/fuzz/corpus/<name>/, the seeds stay as they are). Targets run side by side, as many at
# once as there are cores (each is one single-threaded process, so each still gets its seconds
# on a core of its own). Prints each target's executions and fails if any target crashed (the
# crashing input is left in build/fuzz/).
# Usage: scripts/fuzz.sh [seconds-per-target]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache-env.sh
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || { echo "fuzz: seconds must be a whole number >= 1" >&2; exit 2; }
scripts/install-deps.sh clang libclang-rt-14-dev  # libFuzzer's runtime comes with clang's
CXX=${CXX:-clang++} cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHEEL_FUZZ=ON \
  -DWHEEL_BUILD_TESTS=OFF -DWHEEL_BUILD_EXAMPLES=OFF "${wheel_launcher[@]}" >/dev/null
mapfile -t names < <(for f in tests/fuzz/*_fuzz.cc; do basename "$f" _fuzz.cc; done)
((${#names[@]})) || { echo "fuzz: no targets in tests/fuzz" >&2; exit 1; }
cmake --build build/fuzz -j "$(nproc)" --target "${names[@]/#/fuzz_}"
# One target's run; its output goes to build/fuzz/<name>.log.
run_target() {
  local name=$1 corpus=build/fuzz/corpus/$1
  mkdir -p "$corpus"
  (cd build/fuzz && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "tests/fuzz/fuzz_$name" -max_total_time="$seconds" -print_final_stats=1 \
    "corpus/$name" "../../tests/fuzz/corpus/$name") >"build/fuzz/$name.log" 2>&1
}
declare -A pid_of
status=0
report() {  # waits for one target and prints its line
  local name=$1 log=build/fuzz/$1.log
  if wait "${pid_of[$name]}"; then
    echo "fuzz_$name: ok, $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$') executions in ${seconds} s, corpus $(ls "build/fuzz/corpus/$name" | wc -l) new inputs"
  else
    echo "fuzz_$name: FAILED, see $log"
    tail -30 "$log" >&2
    status=1
  fi
}
running=()
for name in "${names[@]}"; do
  if ((${#running[@]} >= $(nproc))); then report "${running[0]}"; running=("${running[@]:1}"); fi
  echo "=== fuzz_$name: ${seconds} s" >&2
  run_target "$name" &
  pid_of[$name]=$!
  running+=("$name")
done
for name in "${running[@]}"; do report "$name"; done
exit $status
