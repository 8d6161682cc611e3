// SPDX-License-Identifier: Apache-2.0
// IdleDetector and IdleWatch (wheel/net/idle_detector.h): Netty's IdleStateHandler semantics
// on a LoopTimer, without sockets. The loop runs on the test thread.
#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "wheel/net/idle_detector.h"

namespace wheel::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Seen {
  std::uint64_t id;
  IdleEvent event;
  std::uint64_t at_ms;  // loop time
};

class IdleDetectorTest : public ::testing::Test, public IdleDetector::Owner {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    TimerOptions o;
    o.tick_duration = 1ms;
    o.ticks_per_wheel = 256;
    timer_ = std::make_unique<LoopTimer>(&loop_, o);
    ASSERT_EQ(uv_timer_init(&loop_, &poll_), 0);
    uv_timer_start(
        &poll_, [](uv_timer_t*) {}, 1, 1);
  }
  void TearDown() override {
    for (auto& [id, w] : watches_) detector().unwatch(*w);
    timer_->close();
    uv_close(reinterpret_cast<uv_handle_t*>(&poll_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  IdleDetector& detector(IdleDetector::Options o = {}) {
    if (!detector_) detector_ = std::make_unique<IdleDetector>(*timer_, *this, o);
    return *detector_;
  }
  IdleWatch& add(std::uint64_t id) {
    return *watches_.emplace(id, std::make_unique<IdleWatch>()).first->second;
  }
  std::uint64_t now() { return uv_now(&loop_); }

  // Runs the loop until `done()` or `limit` of wall time; returns done().
  template <class Done>
  bool run_until(Done done, std::chrono::milliseconds limit = 10s) {
    const auto deadline = Clock::now() + limit;
    while (!done() && Clock::now() < deadline) uv_run(&loop_, UV_RUN_ONCE);
    return done();
  }
  void run_for(std::chrono::milliseconds d) {
    run_until([] { return false; }, d);
  }

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
  uv_timer_t poll_;  // keeps the loop turning so run_until() can check its condition
  std::unique_ptr<LoopTimer> timer_;
  std::unique_ptr<IdleDetector> detector_;
  std::map<std::uint64_t, std::unique_ptr<IdleWatch>> watches_;
  std::vector<Seen> seen_;
  std::function<void(std::uint64_t, IdleEvent)> on_idle_hook_;
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

TEST_F(IdleDetectorTest, ReaderIdleFiresAfterItsTimeThenRepeatsAsNotFirst) {
  IdleWatch& w = add(7);
  const std::uint64_t start = now();
  detector().watch(7, w, IdleTimes{50ms, 0ms, 0ms});
  ASSERT_TRUE(run_until([&] { return seen_.size() >= 2; }));
  EXPECT_EQ(seen_[0].id, 7u);
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kReader);
  EXPECT_TRUE(seen_[0].event.first);
  EXPECT_GE(seen_[0].at_ms - start, 50u);
  EXPECT_FALSE(seen_[1].event.first) << "no activity in between";
  EXPECT_GE(seen_[1].at_ms - seen_[0].at_ms, 50u - 1) << "re-armed for the full time";
  // Activity makes the next event a first one again.
  w.record_read(now());
  const std::size_t before = seen_.size();
  ASSERT_TRUE(run_until([&] { return seen_.size() > before; }));
  EXPECT_TRUE(seen_.back().event.first);
}

TEST_F(IdleDetectorTest, ActivityPostponesTheEventByTheRemainingTime) {
  IdleWatch& w = add(2);
  detector().watch(2, w, IdleTimes{0ms, 80ms, 0ms});
  std::uint64_t last_write = now();
  for (int i = 0; i < 6; ++i) {  // a write every ~30 ms for ~180 ms: never 80 ms silent
    run_for(30ms);
    last_write = now();
    w.record_write(last_write);
  }
  ASSERT_TRUE(run_until([&] { return !seen_.empty(); }));
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kWriter);
  EXPECT_GE(seen_[0].at_ms - last_write, 80u) << "no earlier than its time after the last write";
}

// Reads postpone reader-idle and writes do not (a reader-idle timer that looked at the last
// write would fire here while the reads go on).
TEST_F(IdleDetectorTest, ReadsPostponeReaderIdleAndWritesDoNot) {
  IdleWatch& w = add(9);
  detector().watch(9, w, IdleTimes{80ms, 0ms, 0ms});
  std::uint64_t last_read = now();
  for (int i = 0; i < 6 && seen_.empty(); ++i) {  // a read every ~30 ms for ~180 ms
    run_for(30ms);
    if (!seen_.empty()) break;  // a stall longer than 80 ms: a genuine idle period
    last_read = now();
    w.record_read(last_read);
  }
  ASSERT_TRUE(run_until([&] { return !seen_.empty(); }));
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kReader);
  EXPECT_GE(seen_[0].at_ms - last_read, 80u) << "no earlier than its time after the last read";

  // Writes alone leave the reader idle: the next event comes while they go on.
  const std::size_t before = seen_.size();
  for (int i = 0; i < 1000 && seen_.size() == before; ++i) {
    run_for(10ms);
    w.record_write(now());
  }
  EXPECT_GT(seen_.size(), before) << "writes postponed reader-idle";
}

TEST_F(IdleDetectorTest, AllIdleCountsEitherDirectionAndZeroDisablesAKind) {
  IdleWatch& w = add(3);
  detector().watch(3, w, IdleTimes{0ms, 0ms, 60ms});
  for (int i = 0; i < 4; ++i) {
    run_for(30ms);
    if (i % 2 == 0)
      w.record_read(now());
    else
      w.record_write(now());
  }
  ASSERT_TRUE(run_until([&] { return !seen_.empty(); }));
  for (const Seen& s : seen_) EXPECT_EQ(s.event.kind, IdleKind::kAll);
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
  run_for(150ms);
  EXPECT_TRUE(seen_.empty());
  EXPECT_EQ(detector().stale_timeouts(), 1u);
  detector().unwatch(*forgotten);
}

TEST_F(IdleDetectorTest, OnIdleMayUnwatchWhatItWasToldAbout) {
  IdleWatch& w = add(4);
  on_idle_hook_ = [&](std::uint64_t, IdleEvent) { detector().unwatch(w); };
  detector().watch(4, w, IdleTimes{20ms, 20ms, 0ms});
  run_for(200ms);
  EXPECT_EQ(seen_.size(), 1u) << "unwatch in on_idle cancelled the re-armed timeouts";
}

// netty#8912: a slow reader that drains its output is not writer-idle with observe_output.
TEST_F(IdleDetectorTest, DrainingOutputIsWriteActivityOnlyWhenObserved) {
  detector(IdleDetector::Options{true});
  IdleWatch& observed = add(5);
  detector().watch(5, observed, IdleTimes{0ms, 80ms, 0ms});
  for (int i = 0; i < 6; ++i) {
    run_for(30ms);
    observed.record_output_progress(now());
  }
  EXPECT_TRUE(seen_.empty()) << "draining output kept it from being writer-idle";
}

TEST_F(IdleDetectorTest, DrainingOutputIsNotActivityByDefault) {
  IdleWatch& plain = add(6);
  detector().watch(6, plain, IdleTimes{0ms, 80ms, 0ms});
  for (int i = 0; i < 6; ++i) {
    run_for(30ms);
    plain.record_output_progress(now());
  }
  ASSERT_TRUE(run_until([&] { return !seen_.empty(); }));
  EXPECT_EQ(seen_[0].event.kind, IdleKind::kWriter);
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

TEST(IdleKindName, EachKindAndAnOutOfRangeValue) {
  EXPECT_STREQ(to_string(IdleKind::kReader), "reader");
  EXPECT_STREQ(to_string(IdleKind::kWriter), "writer");
  EXPECT_STREQ(to_string(IdleKind::kAll), "all");
  EXPECT_STREQ(to_string(static_cast<IdleKind>(3)), "?");
}

}  // namespace
}  // namespace wheel::net
