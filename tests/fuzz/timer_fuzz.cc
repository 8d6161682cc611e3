// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the timer's public API driven by a byte stream, on a wheel::ManualClock (no
// worker thread, time moves only when the input says so; see wheel/manual_clock.h). Both layouts,
// wheels of 1 to 128 buckets, ticks of 1 to 10 ms, with or without max_pending_timeouts.
//
// Input: byte 0 = layout (bit 0), log2 wheel size (bits 1-3), max pending (bits 4-5: none, 1,
// 4, 16); byte 1 = tick; then operations of 3 bytes (op, a, b):
//   op % 4 == 0  schedule, delay (a, b) in the unit op / 4 % 4 picks (1 us, 1 ms, 100 ms, 1 s:
//                up to hours, many wheel turns); bit 4: the task schedules another timeout
//                with the same delay when it runs; bit 5: a negative delay
//   op % 4 == 1  cancel timeout number a (of those scheduled so far)
//   op % 4 == 2  advance the clock by (a, b) in the unit op / 4 % 4 picks
//   op % 4 == 3  stop (bit 2: run the returned jobs, else drop them); later schedules must throw
// Checked against a model after every step: no task runs before its deadline or twice; once
// the clock has passed the end of a timeout's tick, it has run (no lateness beyond the tick);
// cancel() succeeds exactly for a timeout that neither ran nor was cancelled; is_expired() /
// is_cancelled() agree; max_pending_timeouts rejects exactly when pending_timeouts() reaches
// it; pending_timeouts() lies between the model's pending count and that plus the
// cancellations the worker may not have processed yet; stop() returns exactly the pending
// timeouts; and fired + cancelled + pending (or returned by stop()) = scheduled, always.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include "wheel/hashed_wheel_timer.h"
#include "wheel/manual_clock.h"
#include "wheel/rejected_execution_error.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::int64_t kUnitsNs[] = {1'000, 1'000'000, 100'000'000, 1'000'000'000};

struct Entry {
  wheel::TimeoutHandle handle;
  std::int64_t scheduled_ns = 0;  // the manual clock when scheduled
  std::int64_t deadline_ns = 0;   // scheduled + delay (never before the scheduling)
  int runs = 0;
  bool cancelled = false;  // cancel() returned true
  bool returned = false;   // among stop()'s jobs
  bool pending() const { return runs == 0 && !cancelled && !returned; }
};

class Model {
 public:
  Model(const std::uint8_t* data, std::size_t size) {
    wheel::TimerOptions options;
    options.layout =
        (data[0] & 1) != 0 ? wheel::TimerLayout::kHierarchical : wheel::TimerLayout::kHashed;
    options.ticks_per_wheel = std::size_t{1} << ((data[0] >> 1) & 7);
    if (options.layout == wheel::TimerLayout::kHierarchical && options.ticks_per_wheel < 2) {
      options.ticks_per_wheel = 2;
    }
    constexpr std::int64_t kMaxPending[] = {0, 1, 4, 16};
    max_pending_ = kMaxPending[(data[0] >> 4) & 3];
    options.max_pending_timeouts = max_pending_;
    tick_ns_ = (1 + data[1] % 10) * 1'000'000;
    options.tick_duration = std::chrono::nanoseconds(tick_ns_);
    timer_ = std::make_unique<wheel::HashedWheelTimer>(std::move(options), clock_);
    timer_->start();
    start_ns_ = now_ns();
    ops_ = data + 2;
    ops_size_ = size - 2;
  }

  void run() {
    for (std::size_t i = 0; i + 3 <= ops_size_ && entries_.size() < 2000; i += 3) {
      const std::uint8_t op = ops_[i];
      const std::int64_t amount = (ops_[i + 1] << 8 | ops_[i + 2]) * kUnitsNs[op / 4 % 4];
      switch (op % 4) {
        case 0:
          schedule((op & 32) != 0 ? -amount : amount, (op & 16) != 0);
          break;
        case 1:
          cancel(ops_[i + 1]);
          break;
        case 2:
          clock_.advance(std::chrono::nanoseconds(amount));
          break;
        case 3:
          stop((op & 4) != 0);
          break;
      }
      check_invariants();
    }
    stop(false);
    check_invariants();
    timer_.reset();  // tasks of jobs dropped above are destroyed: ASan sees any leak
  }

 private:
  void schedule(std::int64_t delay_ns, bool chain) {
    const std::size_t index = entries_.size();
    const std::int64_t now = now_ns();
    const std::size_t reported = timer_->pending_timeouts();
    const auto task = [this, index, delay_ns, chain] {
      Entry& e = entries_[index];
      if (running_jobs_) {
        check(e.returned);  // a job stop() returned, run by its owner: any time is right
      } else {
        check(now_ns() >= e.deadline_ns);  // never early
        check(!e.cancelled && !e.returned);
      }
      check(++e.runs == 1);  // never twice
      if (chain) schedule(delay_ns, false);
    };
    Entry entry;
    entry.scheduled_ns = now;
    entry.deadline_ns = now + std::max<std::int64_t>(delay_ns, 0);
    try {
      entries_.push_back(entry);
      entries_[index].handle = timer_->new_timeout(task, std::chrono::nanoseconds(delay_ns));
      check(!stopped_);
      check(max_pending_ <= 0 || static_cast<std::int64_t>(reported) < max_pending_);
    } catch (const wheel::RejectedExecutionError&) {
      entries_.pop_back();
      check(!stopped_ && max_pending_ > 0 && static_cast<std::int64_t>(reported) >= max_pending_);
    } catch (const std::logic_error&) {
      entries_.pop_back();
      check(stopped_);
    }
  }

  void cancel(std::size_t which) {
    if (entries_.empty()) return;
    Entry& e = entries_[which % entries_.size()];
    const bool expected = e.pending();
    check(e.handle->cancel() == expected);
    if (expected) {
      e.cancelled = true;
      ++cancelled_;
    }
  }

  void stop(bool run_jobs) {
    if (stopped_) return;
    std::vector<wheel::TimerJob> jobs = timer_->stop();
    stopped_ = true;
    std::size_t pending = 0;
    for (const Entry& e : entries_) pending += e.pending() ? 1 : 0;
    check(jobs.size() == pending);
    for (const wheel::TimerJob& job : jobs) {
      const wheel::TimeoutHandle handle = job.handle();
      Entry* found = nullptr;
      for (Entry& e : entries_) {
        if (e.handle == handle) found = &e;
      }
      check(found != nullptr && found->pending() && handle->is_cancelled());
      found->returned = true;
    }
    check(timer_->pending_timeouts() == 0);
    if (run_jobs) {
      running_jobs_ = true;
      for (wheel::TimerJob& job : jobs) job();
      running_jobs_ = false;
    }
  }

  void check_invariants() {
    const std::int64_t now = now_ns();
    std::size_t fired = 0;
    std::size_t cancelled = 0;
    std::size_t returned = 0;
    std::size_t pending = 0;
    for (const Entry& e : entries_) {
      check(e.runs <= 1);
      if (e.returned) {
        ++returned;
        check(e.handle->is_cancelled() && e.runs <= 1);
      } else if (e.runs == 1) {  // ran: fired
        ++fired;
        check(e.handle->is_expired() && !e.handle->is_cancelled());
      } else if (e.cancelled) {
        ++cancelled;
        check(e.handle->is_cancelled() && !e.handle->is_expired());
      } else {
        ++pending;
        check(!e.handle->is_expired() && !e.handle->is_cancelled());
        if (!stopped_) {
          // Due in tick floor(d / tick) of the timer's clock, processed once that tick ends.
          const std::int64_t relative = e.deadline_ns - start_ns_;
          const std::int64_t fires_by = start_ns_ + (relative / tick_ns_ + 1) * tick_ns_;
          check(now < fires_by);  // never late by more than the tick
        }
      }
    }
    check(fired + cancelled + returned + pending == entries_.size());
    check(cancelled == cancelled_);
    const std::size_t reported = timer_->pending_timeouts();
    check(reported >= pending && reported <= pending + cancelled);
    if (stopped_) check(pending == 0 && reported == 0);
  }

  std::int64_t now_ns() const { return clock_.now().count(); }

  // Each input starts at 0: hours per step cannot add up to overflow. Declared before the
  // timer, so it outlives it.
  wheel::ManualClock clock_;
  std::unique_ptr<wheel::HashedWheelTimer> timer_;
  std::int64_t max_pending_ = 0;
  std::int64_t tick_ns_ = 0;
  std::int64_t start_ns_ = 0;
  const std::uint8_t* ops_ = nullptr;
  std::size_t ops_size_ = 0;
  std::vector<Entry> entries_;
  std::size_t cancelled_ = 0;
  bool stopped_ = false;
  bool running_jobs_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  Model(data, size).run();
  return 0;
}
