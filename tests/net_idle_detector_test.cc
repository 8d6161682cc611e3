// SPDX-License-Identifier: Apache-2.0
// IdleDetector and IdleWatch (wheel/net/idle_detector.h): Netty's IdleStateHandler semantics
// on a LoopTimer, without sockets. The timer runs on a ManualClock: the test moves time by hand,
// so every event is checked at its exact time (tick 1 ms: an event is due at its time and seen
// at most one tick later) and nothing depends on the scheduler. One smoke test runs a real loop.
#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "wheel/manual_clock.h"
#include "wheel/net/idle_detector.h"

namespace wheel::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Seen {
  std::uint64_t id;
  IdleEvent event;
  std::uint64_t at_ms;  // the timer's time
};

TimerOptions fine_tick() {
  TimerOptions o;
  o.tick_duration = 1ms;
  o.ticks_per_wheel = 256;
  return o;
}

// The owner of the watches, and the loop. Subclasses make the timer.
class IdleDetectorFixture : public ::testing::Test, public IdleDetector::Owner {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    for (auto& [id, w] : watches_) detector().unwatch(*w);
    if (timer_) timer_->close();
    uv_run(&loop_, UV_RUN_DEFAULT);  // finishes the closes
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  IdleDetector& detector(IdleDetector::Options o = {}) {
    if (!detector_) detector_ = std::make_unique<IdleDetector>(*timer_, *this, o);
    return *detector_;
  }
  IdleWatch& add(std::uint64_t id) {
    return *watches_.emplace(id, std::make_unique<IdleWatch>()).first->second;
  }
  std::uint64_t now() { return timer_->now_ms(); }

  // IdleDetector::Owner
  IdleWatch* find_watch(std::uint64_t id) override {
    const auto it = watches_.find(id);
    return it == watches_.end() ? nullptr : it->second.get();
  }
  void on_idle(std::uint64_t id, IdleEvent event) override {
    seen_.push_back({id, event, now()});
    if (on_idle_hook_) on_idle_hook_(id, event);
  }

  uv_loop_t loop_;
  ManualClock clock_;  // before timer_: outlives it
  std::unique_ptr<LoopTimer> timer_;
  std::unique_ptr<IdleDetector> detector_;
  std::map<std::uint64_t, std::unique_ptr<IdleWatch>> watches_;
  std::vector<Seen> seen_;
  std::function<void(std::uint64_t, IdleEvent)> on_idle_hook_;
};

class IdleDetectorTest : public IdleDetectorFixture {
 protected:
  void SetUp() override {
    IdleDetectorFixture::SetUp();
    timer_ = std::make_unique<LoopTimer>(&loop_, clock_, fine_tick());
  }
  // Moves the clock by `by`, a millisecond at a time, so each event is seen at its own time.
  void advance(std::chrono::milliseconds by) {
    for (std::int64_t i = 0; i < by.count(); ++i) clock_.advance(1ms);
  }
};

TEST_F(IdleDetectorTest, ReadsAndWritesPerformZeroTimerOperations) {
  IdleWatch& w = add(1);
  detector().watch(1, w, IdleTimes{1h, 1h, 1h});
  const auto scheduled = timer_->timeouts_scheduled();
  const auto cancels = timer_->cancel_calls();
  EXPECT_EQ(scheduled, 3u) << "one timeout per enabled kind";
  for (int i = 0; i < 100'000; ++i) {
    w.record_read(now());
    w.record_write(now());
    w.record_output_progress(now());
  }
  EXPECT_EQ(timer_->timeouts_scheduled(), scheduled);
  EXPECT_EQ(timer_->cancel_calls(), cancels);
  EXPECT_EQ(timer_->pending_timeouts(), 3u);
}

TEST_F(IdleDetectorTest, ReaderIdleFiresAtItsTimeThenRepeatsAsNotFirst) {
  IdleWatch& w = add(7);
  detector().watch(7, w, IdleTimes{50ms, 0ms, 0ms});
  advance(49ms);
  EXPECT_TRUE(seen_.empty()) << "before its time";
  advance(2ms);
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].id, 7u);
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kReader);
  EXPECT_TRUE(seen_[0].event.first);
  EXPECT_GE(seen_[0].at_ms, 50u);
  EXPECT_LE(seen_[0].at_ms, 51u);
  advance(51ms);
  ASSERT_EQ(seen_.size(), 2u) << "re-armed for the full time";
  EXPECT_FALSE(seen_[1].event.first) << "no activity in between";
  EXPECT_GE(seen_[1].at_ms - seen_[0].at_ms, 50u);
  EXPECT_LE(seen_[1].at_ms - seen_[0].at_ms, 51u);
  // Activity makes the next event a first one again, its full time after the read.
  advance(10ms);
  const std::uint64_t read_at = now();
  w.record_read(read_at);
  advance(49ms);
  EXPECT_EQ(seen_.size(), 2u);
  advance(2ms);
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_TRUE(seen_[2].event.first);
  EXPECT_LE(seen_[2].at_ms - read_at, 51u);
}

TEST_F(IdleDetectorTest, ActivityPostponesTheEventByTheRemainingTime) {
  IdleWatch& w = add(2);
  detector().watch(2, w, IdleTimes{0ms, 80ms, 0ms});
  for (int i = 0; i < 6; ++i) {  // a write every 30 ms for 180 ms: never 80 ms silent
    advance(30ms);
    w.record_write(now());
  }
  EXPECT_TRUE(seen_.empty()) << "writes postponed writer-idle";
  const std::uint64_t last_write = now();
  advance(79ms);
  EXPECT_TRUE(seen_.empty()) << "no earlier than its time after the last write";
  advance(2ms);
  ASSERT_EQ(seen_.size(), 1u) << "no later than one tick after it";
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kWriter);
  EXPECT_GE(seen_[0].at_ms - last_write, 80u);
}

// Reads postpone reader-idle and writes do not (a reader-idle timer that looked at the last
// write would never fire here).
TEST_F(IdleDetectorTest, ReadsPostponeReaderIdleAndWritesDoNot) {
  IdleWatch& w = add(9);
  detector().watch(9, w, IdleTimes{80ms, 0ms, 0ms});
  for (int i = 0; i < 6; ++i) {  // a read every 30 ms for 180 ms
    advance(30ms);
    w.record_read(now());
  }
  EXPECT_TRUE(seen_.empty()) << "reads postponed reader-idle";
  const std::uint64_t last_read = now();
  for (int i = 0; i < 9; ++i) {  // writes alone, every 10 ms
    advance(10ms);
    w.record_write(now());
  }
  ASSERT_EQ(seen_.size(), 1u) << "writes postponed reader-idle";
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kReader);
  EXPECT_GE(seen_[0].at_ms - last_read, 80u);
  EXPECT_LE(seen_[0].at_ms - last_read, 81u);
}

TEST_F(IdleDetectorTest, AllIdleCountsEitherDirectionAndZeroDisablesAKind) {
  IdleWatch& w = add(3);
  detector().watch(3, w, IdleTimes{0ms, 0ms, 60ms});
  for (int i = 0; i < 4; ++i) {  // a read or a write every 30 ms
    advance(30ms);
    if (i % 2 == 0)
      w.record_read(now());
    else
      w.record_write(now());
  }
  EXPECT_TRUE(seen_.empty()) << "reads and writes both postpone all-idle";
  const std::uint64_t last = now();
  advance(61ms);
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kAll);
  EXPECT_GE(seen_[0].at_ms - last, 60u);
  advance(200ms);
  for (const Seen& s : seen_) EXPECT_EQ(s.event.kind, IdleKind::kAll) << "0 disables a kind";
}

TEST_F(IdleDetectorTest, UnwatchCancelsAndLateTimeoutsAreStale) {
  IdleWatch& a = add(10);
  IdleWatch& b = add(11);
  detector().watch(10, a, IdleTimes{30ms, 0ms, 0ms});
  detector().watch(11, b, IdleTimes{30ms, 0ms, 0ms});
  detector().unwatch(a);
  EXPECT_FALSE(a.watched());
  EXPECT_EQ(timer_->cancel_calls(), 1u);
  // b's owner forgets it without unwatching: its timeout fires for an unknown id.
  auto forgotten = std::move(watches_[11]);
  watches_.erase(11);
  advance(150ms);
  EXPECT_TRUE(seen_.empty());
  EXPECT_EQ(detector().stale_timeouts(), 1u);
  detector().unwatch(*forgotten);
}

TEST_F(IdleDetectorTest, OnIdleMayUnwatchWhatItWasToldAbout) {
  IdleWatch& w = add(4);
  on_idle_hook_ = [&](std::uint64_t, IdleEvent) { detector().unwatch(w); };
  detector().watch(4, w, IdleTimes{20ms, 20ms, 0ms});
  advance(200ms);
  EXPECT_EQ(seen_.size(), 1u) << "unwatch in on_idle cancelled the re-armed timeouts";
  EXPECT_EQ(timer_->pending_timeouts(), 0u);
}

// netty#8912: a slow reader that drains its output is not writer-idle with observe_output.
TEST_F(IdleDetectorTest, DrainingOutputIsWriteActivityOnlyWhenObserved) {
  detector(IdleDetector::Options{true});
  IdleWatch& observed = add(5);
  detector().watch(5, observed, IdleTimes{0ms, 80ms, 0ms});
  for (int i = 0; i < 6; ++i) {
    advance(30ms);
    observed.record_output_progress(now());
  }
  EXPECT_TRUE(seen_.empty()) << "draining output kept it from being writer-idle";
}

TEST_F(IdleDetectorTest, DrainingOutputIsNotActivityByDefault) {
  IdleWatch& plain = add(6);
  detector().watch(6, plain, IdleTimes{0ms, 80ms, 0ms});
  for (int i = 0; i < 3; ++i) {
    advance(30ms);
    plain.record_output_progress(now());
  }
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kWriter);
  EXPECT_LE(seen_[0].at_ms, 81u) << "80 ms after the watch began, progress or not";
}

TEST_F(IdleDetectorTest, BadTimesAndIdsThrow) {
  IdleWatch& w = add(8);
  EXPECT_THROW(detector().watch(8, w, IdleTimes{-1ms, 0ms, 0ms}), std::invalid_argument);
  EXPECT_THROW(detector().watch(8, w, IdleTimes{kMaxIdleTime + 1ms, 0ms, 0ms}),
               std::invalid_argument);
  EXPECT_THROW(detector().watch(std::uint64_t{1} << 62, w, IdleTimes{}), std::invalid_argument);
  detector().watch(8, w, IdleTimes{kMaxIdleTime, 0ms, 0ms});
  EXPECT_THROW(detector().watch(8, w, IdleTimes{}), std::logic_error);
}

// The same detector on a real libuv loop and the steady clock: an event comes, not before its
// time. Bounds are generous: the scheduler may be slow.
class IdleDetectorRealLoopTest : public IdleDetectorFixture {};

TEST_F(IdleDetectorRealLoopTest, ReaderIdleFiresOnARunningLoop) {
  timer_ = std::make_unique<LoopTimer>(&loop_, fine_tick());
  IdleWatch& w = add(1);
  const std::uint64_t start = now();
  detector().watch(1, w, IdleTimes{50ms, 0ms, 0ms});
  uv_timer_t poll;  // keeps the loop turning so the wait can check its condition
  ASSERT_EQ(uv_timer_init(&loop_, &poll), 0);
  uv_timer_start(
      &poll, [](uv_timer_t*) {}, 1, 1);
  const auto deadline = Clock::now() + 10s;
  while (seen_.empty() && Clock::now() < deadline) uv_run(&loop_, UV_RUN_ONCE);
  uv_close(reinterpret_cast<uv_handle_t*>(&poll), nullptr);
  uv_run(&loop_, UV_RUN_NOWAIT);  // the close completes while `poll` is on this stack
  ASSERT_FALSE(seen_.empty());
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kReader);
  EXPECT_TRUE(seen_[0].event.first);
  EXPECT_GE(seen_[0].at_ms - start, 50u);
}

TEST(IdleKindName, EachKindAndAnOutOfRangeValue) {
  EXPECT_STREQ(to_string(IdleKind::kReader), "reader");
  EXPECT_STREQ(to_string(IdleKind::kWriter), "writer");
  EXPECT_STREQ(to_string(IdleKind::kAll), "all");
  EXPECT_STREQ(to_string(static_cast<IdleKind>(3)), "?");
}

}  // namespace
}  // namespace wheel::net
