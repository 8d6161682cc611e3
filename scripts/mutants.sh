#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mutation check: plants each known bug, one at a time, into a scratch copy of the tree (the
# working tree as it is, uncommitted edits included), rebuilds only the test binary that must
# catch it, and runs that WHOLE binary under a time limit. A mutant is killed when the binary
# fails or exceeds the limit; it survives when the binary passes. The repository itself is
# never modified.
#
# Usage: scripts/mutants.sh [--list] [MUTANT...]   (default: all; e.g. scripts/mutants.sh M3 J5)
#   A MUTANT may be a full name (M2-cancel-after-expiry) or its id before the first '-' (M2).
# Environment: JOBS (build parallelism, 2), MUTANT_TIMEOUT (seconds per test run; default
#   3 x the unmutated run + 60), CMAKE_CXX_COMPILER_LAUNCHER (ccache is used when installed).
# Exit: 0 when every mutant is killed; 1 when one survived or broke the build; 2 when a
# substitution no longer matches the code, a name is unknown, or an unmutated binary fails.
set -euo pipefail
# The whole script is one block, read before it runs: editing this file (e.g. a `git merge`)
# while a long run goes on cannot change what that run executes.
{
cd "$(dirname "$0")/.."
root=$PWD
jobs=${JOBS:-2}

# name @ file @ perl substitution (run with -0, so it sees the whole file) @ test binary.
# Every substitution must change its file: one that no longer matches stops the script.
mutants=(
  # The twelve classic mutants (issue 12's list and the five its suite already caught).
  "M1@timer/src/hashed_layout.cc@s/rounds < kRoundLabels \? round_label\(slot_tick\) : kFar/rounds < kRoundLabels ? round_label(rounds >= 1 ? slot_tick - mask_ - 1 : slot_tick) : kFar/@timer_layout_test"
  'M2-cancel-after-expiry@timer/src/timeout.cc@s/if \(!is_periodic\(\)\) return false;/if (!is_periodic()) return true;/@timeout_test'
  'M3-pending-twice@timer/src/timer_core.cc@s/(if \(max_pending_ <= 0\) \{\n\s+pending_\.fetch_add\()1,/${1}2,/@timer_cancel_test'
  "M4@timer/src/timer_core.cc@s/\} while \(!pending_\.compare_exchange_weak\(count, count \+ 1, std::memory_order_relaxed\)\);/} while (false);\n  pending_.fetch_add(1, std::memory_order_relaxed);/@timer_threads_test"
  'M5-reader-idle-write-time@net/src/idle_detector.cc@s/(case IdleKind::kReader:\n\s+last = watch->)last_read_ms_;/${1}last_write_ms_;/@net_idle_detector_test'
  "M5b@net/src/idle_detector.cc@s/arm\(id, \*watch, kind, delay - idle_for\);/arm(id, *watch, kind, delay);/@net_server_hardening_test"
  'M6@server/src/line_protocol_handler.cc@s/for \(const net::LoopTimer::Handle h : pending->timeouts\) server_->timer\(\)\.cancel\(h\);//@net_server_hardening_test'
  "M7@server/src/line_server.cc@s/t\.max_output = o\.max_output;//@net_server_hardening_test"
  'M7b@net/src/connection.cc@s/return abort\(CloseReason::kSlowConsumer\);/(void)0;  \/\/ logged, then queued anyway/@net_server_hardening_test'
  'M8@load/src/runner_lines.cc@s/(case IdleClose::kLate:\s*)\+\+late;/${1}++on_time;/@wheel_load_test'
  'M9-max-pending-off-by-one@timer/src/timer_core.cc@s/if \(count >= max_pending_\) \{/if (count > max_pending_) {/@timer_cancel_test'
  'M10-early-close-on-time@load/src/runner_lines.cc@s/(case IdleClose::kEarly:\s*)\+\+early;/${1}++on_time;/@wheel_load_test'
  # issue 12's defects, planted back
  "D1-max-line@apps/wheel-server/main.cc@s/kMaxLine = std::uint64_t\{1\} << 20;/kMaxLine = UINT64_MAX;/@net_server_hardening_test"
  "D1-framer-wrap@net/src/line_framer.cc@s/return length > max_line_;/return length + 1 > max_line_ + 1;/@net_server_hardening_test"
  'D2-busy-port@apps/wheel-server/worker_pool.cc@s/if \(claim_fd_ < 0\) \{/if (false) {/@net_server_hardening_test'
  "D3-tick@apps/wheel-server/main.cc@s/kMaxTick = std::chrono::hours\(1\);/kMaxTick = milliseconds::max();/@net_server_hardening_test"
  "D4-wheel-size@apps/wheel-server/main.cc@s/kMaxServerWheelSize = std::uint64_t\{1\} << 20;/kMaxServerWheelSize = std::uint64_t{1} << 21;/@net_server_hardening_test"
  "D6-worker-bytes@server/src/line_protocol_handler.cc@s/delayed_bytes_ \+ text\.size\(\) > delay_limits_\.bytes_per_worker/false/@net_server_hardening_test"
  "D6-connection-bytes@server/src/line_protocol_handler.cc@s/pending->bytes \+ text\.size\(\) > delay_limits_\.bytes_per_connection \|\|//@net_server_hardening_test"
  "G7-emfile@net/src/acceptor.cc@s/if \(error == EMFILE \|\| error == ENFILE\) return self->reject_for_descriptors\(\);//@net_server_hardening_test"
  # issue 19: beanstalkd's protocol parser and replies (jobs/)
  "J1-line-limit@jobs/beanstalk/src/beanstalk_protocol.cc@s/if \\(line_size_ == kMaxLineBytes - 1\\)/if (line_size_ == kMaxLineBytes)/@jobs_beanstalk_protocol_test"
  "J2-number-overflow@jobs/beanstalk/src/beanstalk_command_line.cc@s/if \\(value > \\(max - digit\\) \\/ 10\\) return false;//@jobs_beanstalk_protocol_test"
  "J3-tube-length@jobs/model/src/tube_name.cc@s/name\\.size\\(\\) > kMaxTubeNameBytes/name.size() > kMaxTubeNameBytes + 1/@jobs_beanstalk_protocol_test"
  "J4-tube-hyphen@jobs/model/src/tube_name.cc@s/ \\|\\| name\\.front\\(\\) == '-'//@jobs_beanstalk_protocol_test"
  "J5-job-too-big-limit@jobs/beanstalk/src/beanstalk_protocol.cc@s/if \\(announced > max_job_size_\\)/if (announced >= max_job_size_)/@jobs_beanstalk_protocol_test"
  "J6-discard-crlf@jobs/beanstalk/src/beanstalk_protocol.cc@s/discard_left_ = std::uint64_t\\{announced\\} \\+ 2;/discard_left_ = std::uint64_t{announced};/@jobs_beanstalk_protocol_test"
  "J7-trailer-cr@jobs/beanstalk/src/beanstalk_protocol.cc@s/trailer_\\[0\\] == '\\\\r' && //@jobs_beanstalk_protocol_test"
  "J8-decimals@jobs/beanstalk/src/beanstalk_command_line.cc@s/if \\(\\+\\+decimals > 3\\)/if (++decimals > 4)/@jobs_beanstalk_protocol_test"
  "J9-split-crlf@jobs/beanstalk/src/beanstalk_protocol.cc@s/(RequestParser::feed_discard_line.*?)line_ends_in_cr_ = \\(c == '\\\\r'\\);/\$1line_ends_in_cr_ = (c == '\\\\r') && i + 1 < bytes.size();/s@jobs_beanstalk_protocol_test"
  "J9b-split-crlf-line@jobs/beanstalk/src/beanstalk_protocol.cc@s/(line_\\[line_size_\\+\\+\\] = c;\\n\\s+)line_ends_in_cr_ = \\(c == '\\\\r'\\);/\$1line_ends_in_cr_ = (c == '\\\\r') && i + 1 < bytes.size();/@jobs_beanstalk_protocol_test"
  "J9c-split-crlf-overflow@jobs/beanstalk/src/beanstalk_protocol.cc@s/(line_size_ = 0;\\n\\s+)line_ends_in_cr_ = \\(c == '\\\\r'\\);/\$1line_ends_in_cr_ = false;/@jobs_beanstalk_protocol_test"
  "J10-body-reserve@jobs/beanstalk/src/beanstalk_protocol.cc@s/body\\.reserve\\(std::min<std::size_t>\\(body_needed_, std::max\\(want, 2 \\* body\\.capacity\\(\\)\\)\\)\\);/body.reserve(body_needed_);/@jobs_beanstalk_protocol_test"
  "J11-one-request-per-feed@jobs/beanstalk/src/beanstalk_protocol.cc@s/while \\(step\\.consumed < bytes\\.size\\(\\) && !step\\.request\\)/while (step.consumed < bytes.size())/@jobs_beanstalk_protocol_test"
  "J12-stats-key@jobs/beanstalk/src/beanstalk_stats.cc@s/  y\\.number\\(\"cmd-touch\", c\\.touch\\);\\n//@jobs_beanstalk_reply_test"
  "J13-ok-length@jobs/beanstalk/src/beanstalk_reply.cc@s/append_word_and_number\\(out, \"OK\", yaml\\.size\\(\\)\\);/append_word_and_number(out, \"OK\", yaml.size() + 2);/@jobs_beanstalk_reply_test"
  "J14-version-quotes@jobs/beanstalk/src/beanstalk_stats.cc@s/y\\.quoted\\(\"version\", s\\.version\\);/y.raw(\"version\", s.version);/@jobs_beanstalk_yaml_conformance_test"
  "J15-tube-quotes@jobs/beanstalk/src/beanstalk_stats.cc@s/y\\.raw\\(\"tube\", s\\.tube\\);/y.quoted(\"tube\", s.tube);/@jobs_beanstalk_yaml_conformance_test"
  "J16-stats-order@jobs/beanstalk/src/beanstalk_stats.cc@s/(  y\\.number\\(\"cmd-reserve\", c\\.reserve\\);\\n)(  y\\.number\\(\"cmd-reserve-with-timeout\", c\\.reserve_with_timeout\\);\\n)/\$2\$1/@jobs_beanstalk_yaml_conformance_test"
  # issue 19: one per durability guarantee of the jobs log
  'K1-no-fsync@jobs/log/src/syncer.cc@s/if \(\(ec = f->sync\(\)\)\) break;/(void)f;  \/\/ fdatasync skipped/@jobs_power_loss_test'
  'K2-ack-before-sync@jobs/log/src/syncer.cc@s/(note_written\(.*?)written_lsn_ = lsn;/${1}written_lsn_ = lsn;\n  durable_lsn_ = lsn;/s@jobs_group_commit_test'
  'K3-crc-unchecked@jobs/log/src/log_reader.cc@s/if \(crc32c::value\(p \+ 4, 5 \+ std::size_t\{len\}\) != stored\)/if (false \&\& crc32c::value(p + 4, 5 + std::size_t{len}) != stored)/@jobs_log_format_test'
  'K4-id-lease-ignored@jobs/log/src/job_log_recovery.cc@s/d->next_id = std::max\(\{leased, replay\.id_limit, replay\.max_id \+ 1\}\);/d->next_id = replay.max_id + 1;/@jobs_job_log_test'
  'K5-compaction-drops-live@jobs/log/src/job_log_compaction.cc@s/it->second\.offset != rec\.offset\) \{/it->second.offset == rec.offset) {/@jobs_compaction_test'
  # issue 36: the directory's lock, damage told from a torn tail, the id lease file
  'I1-no-dir-lock@jobs/log/src/job_log_recovery.cc@s/if \(!d->lock_dir\(&problem\)\) return fail\(problem\);//@jobs_log_dir_test'
  'I2-start-record-torn@jobs/log/src/job_log_recovery.cc@s/first \? data\.size\(\) > log::kHeaderSize \+ codec::kSegmentStartSize/first ? false/@jobs_log_damage_test'
  'I3-segment-gap-ignored@jobs/log/src/job_log_recovery.cc@s/if \(numbers\[i\] == numbers\[i - 1\] \+ 1\) continue;/continue;/@jobs_log_damage_test'
  'I4-lease-file-ignored@jobs/log/src/job_log_recovery.cc@s/std::max\(\{leased, /std::max({/@jobs_log_damage_test'
  # issue 36: the output bound (a client that pipelines read-only commands and reads nothing),
  # in the one front of both backends (issue 31): the bound itself, and the resume at half
  'O1-output-bound@jobs/server/src/beanstalk_front.cc@s/if \(c != nullptr && backlog\(conn\) >= options_\.max_queued_output\) \{/if (false) {/@jobs_output_bound_test'
  'O2-output-resume@jobs/server/src/beanstalk_front.cc@s/c->notify_output_below\(low - owed\);/(void)owed;/@jobs_output_bound_test'
  'O3-line-output-bound@server/src/line_protocol_handler.cc@s/if \(c\.queued_output\(\) >= max_output \/ 2\) \{/if (false) {/@net_server_in_process_test'
  'O4-lines-read-on-when-paused@net/src/reactor.cc@s/return !c\.closing\(\) && !c\.input_paused\(\);/return !c.closing();/@net_backpressure_test'
)

if [[ ${1:-} == --list || ${1:-} == -l ]]; then
  for m in "${mutants[@]}"; do
    IFS='@' read -r name file _ test <<<"$m"
    printf '%-28s %-42s %s\n' "$name" "$file" "$test"
  done
  exit 0
fi

# The selection: full names or ids (the part before the first '-').
chosen=()
for m in "${mutants[@]}"; do
  name=${m%%@*}
  if (($# == 0)); then
    chosen+=("$m")
    continue
  fi
  for s in "$@"; do
    if [[ $s == "$name" || $s == "${name%%-*}" ]]; then
      chosen+=("$m")
      break
    fi
  done
done
for s in "$@"; do
  if ! printf '%s\n' "${mutants[@]}" | cut -d'@' -f1 | grep -qx -e "$s" -e "$s-.*"; then
    echo "mutants: unknown mutant '$s' (see scripts/mutants.sh --list)" >&2
    exit 2
  fi
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/wheel-mutants.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
started=$(date +%s)

echo "mutants: copying the tree to $scratch" >&2
git ls-files -z --cached --others --exclude-standard | tar -C "$root" --null -T - -cf - |
  tar -C "$scratch/" -xf -

# Every substitution must still apply to today's code, checked before anything is built.
stale=0
for m in "${chosen[@]}"; do
  IFS='@' read -r name file subst test <<<"$m"
  if [[ ! -f $scratch/$file ]]; then
    echo "mutants: $name: $file does not exist" >&2
    stale=$((stale + 1))
  elif ! perl -0p -e "$subst" "$scratch/$file" >"$scratch/probe" ||
    cmp -s "$scratch/probe" "$scratch/$file"; then
    echo "mutants: $name: the substitution no longer matches $file" >&2
    stale=$((stale + 1))
  fi
done
if ((stale > 0)); then
  echo "mutants: $stale substitution(s) no longer apply: update them to the code" >&2
  exit 2
fi

if [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]] && command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
# Paths hashed relative to the scratch copy, and the same build/plain layout as a checkout's:
# the baseline build then hits the cache entries of any earlier plain build of the same code.
export CCACHE_BASEDIR=$scratch CCACHE_NOHASHDIR=true
build=$scratch/build/plain
targets=$(printf '%s\n' "${chosen[@]}" | cut -d'@' -f4 | sort -u)
echo "mutants: baseline build of" $targets >&2
cmake -S "$scratch" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs" --target $targets >"$scratch/build.log" 2>&1 || {
  tail -30 "$scratch/build.log" >&2
  echo "mutants: the unmutated tree does not build" >&2
  exit 2
}

binary() { find "$build/tests" -maxdepth 1 -name "$1" -type f | head -1; }

# Each binary must pass unmutated (else every mutant would look killed); its run time sets
# the limit of its mutated runs.
declare -A limit
for test in $targets; do
  t0=$(date +%s)
  # The tests find their programs and data relative to the binary's directory.
  if ! (cd "$build/tests" && timeout 900 "$(binary "$test")" >"$scratch/$test.base" 2>&1); then
    tail -20 "$scratch/$test.base" >&2
    echo "mutants: $test fails unmutated: fix that first" >&2
    exit 2
  fi
  limit[$test]=${MUTANT_TIMEOUT:-$((3 * ($(date +%s) - t0) + 60))}
  echo "mutants: $test passes unmutated in $(($(date +%s) - t0)) s (limit ${limit[$test]} s)" >&2
done

killed=0
survived=0
broken=0
results=()
for m in "${chosen[@]}"; do
  IFS='@' read -r name file subst test <<<"$m"
  cp "$scratch/$file" "$scratch/$file.orig"
  perl -0pi -e "$subst" "$scratch/$file"
  echo "mutants: $name: building $test" >&2
  # Only the test binary (its CMake dependencies bring the programs it runs, e.g. wheel-server).
  if ! cmake --build "$build" -j "$jobs" --target "$test" >"$scratch/build.log" 2>&1; then
    grep -m3 'error' "$scratch/build.log" >&2 || true
    results+=("$name: BUILD BROKEN ($file: see the substitution)")
    broken=$((broken + 1))
  else
    t0=$(date +%s)
    set +e
    (cd "$build/tests" && timeout -k 10 "${limit[$test]}" "$(binary "$test")") \
      >"$scratch/test.log" 2>&1
    rc=$?
    set -e
    took=$(($(date +%s) - t0))
    if ((rc == 0)); then
      results+=("$name: SURVIVED ($test passed in $took s)")
      survived=$((survived + 1))
    elif ((rc == 124 || rc == 137)); then
      results+=("$name: killed by timeout ($test ran over ${limit[$test]} s)")
      killed=$((killed + 1))
    else
      failed=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$scratch/test.log" || true)
      first=$(grep -m1 '^\[  FAILED  \] ' "$scratch/test.log" | sed 's/^\[  FAILED  \] //' || true)
      results+=("$name: killed ($test: ${failed:-0} failed, e.g. ${first:-exit $rc}; $took s)")
      killed=$((killed + 1))
    fi
  fi
  mv "$scratch/$file.orig" "$scratch/$file"
  touch "$scratch/$file"
  echo "mutants: ${results[-1]}" >&2 # as it happens: a long run may be cut short
done
# Rebuild nothing here: the scratch copy is removed on exit.
printf '%s\n' "${results[@]}"
total=${#results[@]}
echo "killed/total: $killed/$total ($survived survived, $broken broke the build;" \
  "$(($(date +%s) - started)) s)"
((survived == 0 && broken == 0))
exit
}
