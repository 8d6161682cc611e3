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
  # issue 19: beanstalkd's protocol parser and replies (jobs/)
  "J1-line-limit@jobs/src/beanstalk_protocol.cc@s/if \\(line_size_ == kMaxLineBytes - 1\\)/if (line_size_ == kMaxLineBytes)/@jobs_beanstalk_protocol_test@*224Bytes*"
  "J2-number-overflow@jobs/src/beanstalk_command_line.cc@s/if \\(value > \\(max - digit\\) \\/ 10\\) return false;//@jobs_beanstalk_protocol_test@*Limits*"
  "J3-tube-length@jobs/src/beanstalk_command_line.cc@s/name\\.size\\(\\) > kMaxTubeNameBytes/name.size() > kMaxTubeNameBytes + 1/@jobs_beanstalk_protocol_test@*TubeNames*"
  "J4-tube-hyphen@jobs/src/beanstalk_command_line.cc@s/ \\|\\| name\\.front\\(\\) == '-'//@jobs_beanstalk_protocol_test@*TubeNames*"
  "J5-job-too-big-limit@jobs/src/beanstalk_protocol.cc@s/if \\(announced > max_job_size_\\)/if (announced >= max_job_size_)/@jobs_beanstalk_protocol_test@*JobTooBig*"
  "J6-discard-crlf@jobs/src/beanstalk_protocol.cc@s/discard_left_ = std::uint64_t\\{announced\\} \\+ 2;/discard_left_ = std::uint64_t{announced};/@jobs_beanstalk_protocol_test@*JobTooBig*"
  "J7-trailer-cr@jobs/src/beanstalk_protocol.cc@s/trailer_\\[0\\] == '\\\\r' && //@jobs_beanstalk_protocol_test@*ExpectedCrlf*"
  "J8-decimals@jobs/src/beanstalk_command_line.cc@s/if \\(\\+\\+decimals > 3\\)/if (++decimals > 4)/@jobs_beanstalk_protocol_test@*Decimals*"
  "J9-split-crlf@jobs/src/beanstalk_protocol.cc@s/(RequestParser::feed_discard_line.*?)line_ends_in_cr_ = \\(c == '\\\\r'\\);/\$1line_ends_in_cr_ = (c == '\\\\r') && i + 1 < bytes.size();/s@jobs_beanstalk_protocol_test@*LongLine*"
  "J9b-split-crlf-line@jobs/src/beanstalk_protocol.cc@s/(line_\\[line_size_\\+\\+\\] = c;\\n\\s+)line_ends_in_cr_ = \\(c == '\\\\r'\\);/\$1line_ends_in_cr_ = (c == '\\\\r') && i + 1 < bytes.size();/@jobs_beanstalk_protocol_test@*Chunked*"
  "J9c-split-crlf-overflow@jobs/src/beanstalk_protocol.cc@s/(line_size_ = 0;\\n\\s+)line_ends_in_cr_ = \\(c == '\\\\r'\\);/\$1line_ends_in_cr_ = false;/@jobs_beanstalk_protocol_test@*TooLongAtItsCarriage*"
  "J10-body-reserve@jobs/src/beanstalk_protocol.cc@s/body\\.reserve\\(std::min<std::size_t>\\(body_needed_, std::max\\(want, 2 \\* body\\.capacity\\(\\)\\)\\)\\);/body.reserve(body_needed_);/@jobs_beanstalk_protocol_test@*GrowsWithTheBytes*"
  "J11-one-request-per-feed@jobs/src/beanstalk_protocol.cc@s/while \\(step\\.consumed < bytes\\.size\\(\\) && !step\\.request\\)/while (step.consumed < bytes.size())/@jobs_beanstalk_protocol_test@*FeedStops*:*Chunked*"
  "J12-stats-key@jobs/src/beanstalk_stats.cc@s/  y\\.number\\(\"cmd-touch\", c\\.touch\\);\\n//@jobs_beanstalk_reply_test@*ServerStats*"
  "J13-ok-length@jobs/src/beanstalk_reply.cc@s/append_word_and_number\\(out, \"OK\", yaml\\.size\\(\\)\\);/append_word_and_number(out, \"OK\", yaml.size() + 2);/@jobs_beanstalk_reply_test@*Ok*"
  "J14-version-quotes@jobs/src/beanstalk_stats.cc@s/y\\.quoted\\(\"version\", s\\.version\\);/y.raw(\"version\", s.version);/@jobs_beanstalk_yaml_conformance_test@*Stats*"
  "J15-tube-quotes@jobs/src/beanstalk_stats.cc@s/y\\.raw\\(\"tube\", s\\.tube\\);/y.quoted(\"tube\", s.tube);/@jobs_beanstalk_yaml_conformance_test@*StatsJob*"
  "J16-stats-order@jobs/src/beanstalk_stats.cc@s/(  y\\.number\\(\"cmd-reserve\", c\\.reserve\\);\\n)(  y\\.number\\(\"cmd-reserve-with-timeout\", c\\.reserve_with_timeout\\);\\n)/\$2\$1/@jobs_beanstalk_yaml_conformance_test@*Stats*"
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
