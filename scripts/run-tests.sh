#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what it needs, then builds and runs the whole GoogleTest
# suite three ways: plain (RelWithDebInfo), ASan+UBSan, and TSan. Fails on the first failure.
# Usage: scripts/run-tests.sh [plain] [asan] [tsan]   (default: all three)
# Environment: TEST_JOBS (tests run at once; default twice the cores: many tests wait on
# sockets, child processes and timers, not on a core).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/ccache-env.sh
configs=("$@")
((${#configs[@]})) || configs=(plain asan tsan)
jobs=$(nproc)
test_jobs=${TEST_JOBS:-$((2 * jobs))}
# Seconds of CPU used by this script's finished children (clock ticks of /proc/PID/stat).
child_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($16 + $17) / hz}' /proc/$$/stat; }
# ThreadSanitizer runs the components that share memory between threads: the timer (its
# worker, queues, periodic and drain; its manual-clock tests have no second thread), the
# logger, the heap timer, in net/ the loop timer, the idle detector and the in-process
# servers, in jobs/ the log with its sync thread, and the fleet test's many client threads
# sharing one ledger (tests/wheel_jobs_fleet_test.cc). The rest is single-threaded per process
# (libuv loops, forked workers) and runs in the other two configurations. Test binaries are labelled with their own names (tests/CMakeLists.txt).
tsan_tests=(timer_options_test timeout_test node_pool_test cycle_clock_test timer_worker_test
            timer_threads_test periodic_threads_test timer_drain_test timer_layout_test logger_test
            heap_timer_test
            net_loop_timer_test net_idle_detector_test net_tcp_server_test net_unix_socket_test
            net_server_in_process_test chat_server_test timer_tick_observer_test
            net_metrics_test net_metrics_http_test jobs_job_log_test jobs_group_commit_test
            jobs_power_loss_test jobs_server_handler_test jobs_log_thread_test wheel_jobs_fleet_test
            jobs_log_metrics_test jobs_restore_test jobs_log_dir_test jobs_log_damage_test
            jobs_front_clock_test jobs_front_session_test)
tsan_labels="^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
for cfg in "${configs[@]}"; do
  case $cfg in
    plain) sanitize="" ;;
    asan) sanitize=address ;;
    tsan) sanitize=thread ;;
    *) echo "run-tests: unknown configuration '$cfg' (plain, asan, tsan)" >&2; exit 2 ;;
  esac
  # Sanitizer builds at -O1 with line tables only (-g1), the sanitizers' recommended level:
  # the same instrumentation and symbolized reports, at less than half the compile time of
  # -O2 -g. The plain build stays at -O2 (benchmarks and the soak use it), with the line tables
  # (-g1) CMakeLists.txt gives a new build folder.
  flags=()
  [[ -n $sanitize ]] && flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
  start=$SECONDS cpu=$(child_cpu)
  echo "=== $cfg: configure and build" >&2
  cmake -S . -B "build/$cfg" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHEEL_SANITIZE="$sanitize" \
        "${wheel_launcher[@]}" "${flags[@]}" >/dev/null
  targets=()
  [[ $cfg == tsan ]] && targets=(--target "${tsan_tests[@]}")
  cmake --build "build/$cfg" -j "$jobs" "${targets[@]}"
  echo "=== $cfg: built in $((SECONDS - start)) s ($(($(child_cpu) - cpu)) s CPU), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  start=$SECONDS cpu=$(child_cpu)
  echo "=== $cfg: test" >&2
  selection=()
  [[ $cfg == tsan ]] && selection=(-L "$tsan_labels")
  # halt_on_error makes any sanitizer report fail the test that caused it.
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "build/$cfg" --output-on-failure -j "$test_jobs" "${selection[@]}"
  echo "=== $cfg: tested in $((SECONDS - start)) s ($(($(child_cpu) - cpu)) s CPU), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
