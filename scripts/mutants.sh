#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mutation check: plants each known bug, one at a time, into a scratch copy of the tree (the
# working tree as it is, uncommitted edits included), builds it, and runs the tests that must
# catch it. Reports killed / survived / not applicable per mutant; exits 1 if any survived
# (or a mutant broke the build), 0 otherwise. The repository itself is never modified.
# Usage: scripts/mutants.sh [MUTANT...]   (default: all; e.g. scripts/mutants.sh M6 M7)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch=$(mktemp -d "${TMPDIR:-/tmp}/wheel-mutants.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
jobs=${JOBS:-2}

# name @ file @ perl substitution (must change the file, else "not applicable") @ test binary @
# gtest filter
mutants=(
  # issue 12's mutation list
  "M5b@net/src/idle_detector.cc@s/arm\(id, \*watch, kind, delay - idle_for\);/arm(id, *watch, kind, delay);/@net_server_hardening_test@*NotAfterAFullReArm*"
  "M6@server/src/line_protocol_handler.cc@s/for \(TimeoutHandle& h : pending->timeouts\) server_->timer\(\)\.cancel\(h\);//@net_server_hardening_test@*NotLeftToExpire*"
  "M7@server/src/line_server.cc@s/t\.max_output = o\.max_output;//@net_server_hardening_test@*MaxOutputAboveTheDefault*"
  "M7b@net/src/connection.cc@s/return abort\(CloseReason::kSlowConsumer\);/++core->counts().slow_consumers; uv_read_stop(stream); return;/@net_server_hardening_test@*SlowConsumerIsClosed*"
  "M1@timer/src/timer_wheel.cc@s/rounds < kRoundLabels \? round_label\(slot_tick\) : kFar/rounds < kRoundLabels ? round_label(rounds >= 1 ? slot_tick - mask_ - 1 : slot_tick) : kFar/@timer_layout_test@*NeverEarlyWithDelaysOfOneToSeveralTurns*"
  "M4@timer/src/timer_core.cc@s/\} while \(!pending_\.compare_exchange_weak\(count, count \+ 1, std::memory_order_relaxed\)\);/} while (false);\n  pending_.fetch_add(1, std::memory_order_relaxed);/@hashed_wheel_timer_test@*MaxPendingReservationIsOneAtomicStepUnderContention*"
  "M8@load/src/load_runner.cc@s/(case IdleClose::kLate:\s*)\+\+result_\.idle_closed_late;/\1++result_.idle_closed_on_time;/@wheel_load_test@*ServerThatClosesTooLate*"
  # issue 12's defects, planted back
  "D1-max-line@apps/wheel-server/main.cc@s/kMaxLine = std::uint64_t\{1\} << 20;/kMaxLine = UINT64_MAX;/@net_server_hardening_test@*OutOfRangeOptions*"
  "D1-framer-wrap@net/src/line_framer.cc@s/return length > max_line_;/return length + 1 > max_line_ + 1;/@net_server_hardening_test@*FramerWithoutLimit*"
  "D2-busy-port@apps/wheel-server/worker_pool.cc@s/if \(claim_fd < 0\) \{/if (false) {/@net_server_hardening_test@*BusyPort*"
  "D3-tick@apps/wheel-server/main.cc@s/kMaxTick = std::chrono::hours\(1\);/kMaxTick = milliseconds::max();/@net_server_hardening_test@*OutOfRangeOptions*"
  "D4-wheel-size@apps/wheel-server/main.cc@s/kMaxServerWheelSize = std::uint64_t\{1\} << 20;/kMaxServerWheelSize = std::uint64_t{1} << 21;/@net_server_hardening_test@*OutOfRangeOptions*"
  "D6-worker-bytes@server/src/line_protocol_handler.cc@s/delayed_bytes_ \+ text\.size\(\) > delay_limits_\.bytes_per_worker/false/@net_server_hardening_test@*DelayedTextIsBounded*"
  "D6-connection-bytes@server/src/line_protocol_handler.cc@s/pending->bytes \+ text\.size\(\) > delay_limits_\.bytes_per_connection \|\|//@net_server_hardening_test@*DelayedTextIsBounded*:*OneMebibyte*"
  "G7-emfile@net/src/acceptor.cc@s/if \(error == EMFILE \|\| error == ENFILE\) return self->reject_for_descriptors\(\);//@net_server_hardening_test@*LackOfDescriptors*"
)

selected=("$@")
wanted() {
  ((${#selected[@]} == 0)) && return 0
  local s
  for s in "${selected[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}

echo "mutants: copying the tree to $scratch" >&2
git ls-files -z --cached --others --exclude-standard | tar -C "$root" --null -T - -cf - |
  tar -C "$scratch/" -xf -
echo "mutants: baseline build" >&2
cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=$(printf '%s\n' "${mutants[@]}" | cut -d'@' -f4 | sort -u)
cmake --build "$scratch/build" -j "$jobs" --target $targets wheel-server >/dev/null

survived=0
broken=0
results=()
for m in "${mutants[@]}"; do
  IFS='@' read -r name file subst test filter <<<"$m"
  wanted "$name" || continue
  cp "$scratch/$file" "$scratch/$file.orig"
  # The substitution must change the file, or the mutant no longer applies to this code.
  perl -0pi -e "$subst" "$scratch/$file"
  if cmp -s "$scratch/$file" "$scratch/$file.orig"; then
    results+=("$name: not applicable (pattern not found in $file)")
    mv "$scratch/$file.orig" "$scratch/$file"
    continue
  fi
  echo "mutants: $name: building" >&2
  # Only the test binary (its CMake dependencies bring the programs it runs, e.g. wheel-server).
  if ! cmake --build "$scratch/build" -j "$jobs" --target "$test" >"$scratch/build.log" 2>&1; then
    results+=("$name: BUILD BROKEN (see the substitution)")
    broken=$((broken + 1))
  else
    bin=$(find "$scratch/build/tests" -maxdepth 1 -name "$test" -type f | head -1)
    if timeout 300 "$bin" --gtest_filter="$filter" >"$scratch/test.log" 2>&1; then
      results+=("$name: SURVIVED ($test $filter)")
      survived=$((survived + 1))
    else
      failed=$(grep -c '^\[  FAILED  \] .*(' "$scratch/test.log" || true)
      results+=("$name: killed ($test $filter: ${failed:-0} tests failed or timed out)")
    fi
  fi
  mv "$scratch/$file.orig" "$scratch/$file"
  touch "$scratch/$file"
  echo "mutants: ${results[-1]}" >&2  # as it happens: a long run may be cut short
done
printf '%s\n' "${results[@]}"
echo "mutants: $survived survived, $broken broke the build, ${#results[@]} tried" >&2
((survived == 0 && broken == 0))
