// SPDX-License-Identifier: Apache-2.0
// Tests of wheel::bench::HeapTimer, the binary-heap baseline of wheel-bench: a benchmark against
// a broken baseline would be worthless, so it gets the same kind of checks as the wheel.
#include "heap_timer.h"
#include "support/wait_until.h"
#include "support/worker_hold.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace wheel::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Scheduled out of order; must run in deadline order and never before the deadline. The test
// does not assume the scheduler is prompt: each deadline is known only to lie between the clock
// read before and after new_timeout() (plus the delay), and a stall of the test thread can
// legitimately reorder the deadlines themselves, so the firing order is checked against those
// bounds rather than against the delays.
TEST(HeapTimerTest, RunsTasksInDeadlineOrderNeverEarly) {
  HeapTimer timer;
  struct Record {
    Clock::time_point earliest, latest;  // bounds of the deadline the timer computed
    Clock::time_point fired;
  };
  std::vector<Record> records(6);
  std::mutex mutex;
  std::vector<int> order;
  for (int i : {5, 1, 4, 2, 3}) {
    const auto delay = i * 50ms;
    records[i].earliest = Clock::now() + delay;
    timer.new_timeout(
        [&, i] {
          const auto now = Clock::now();
          std::lock_guard lock(mutex);
          records[i].fired = now;
          order.push_back(i);
        },
        delay);
    records[i].latest = Clock::now() + delay;
  }
  ASSERT_TRUE(wheel_test::wait_until([&] {
    std::lock_guard lock(mutex);
    return order.size() == 5;
  }));
  std::lock_guard lock(mutex);
  for (int i : order) EXPECT_GE(records[i].fired, records[i].earliest) << "timeout " << i;
  for (std::size_t k = 1; k < order.size(); ++k) {
    // The one that ran first cannot have a deadline provably later than the next one's.
    EXPECT_LE(records[order[k - 1]].earliest, records[order[k]].latest)
        << "timeout " << order[k - 1] << " ran before " << order[k];
  }
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST(HeapTimerTest, CancelPreventsRunAndSucceedsOnce) {
  HeapTimer timer;
  // The worker is held while the 50 ms timeout is scheduled and cancelled: otherwise a stall of
  // this thread longer than 50 ms would let it expire first.
  wheel_test::WorkerHold hold(timer, 0ms);
  ASSERT_TRUE(hold.holding());
  std::atomic<int> runs{0};
  auto handle = timer.new_timeout([&] { ++runs; }, 50ms);
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_TRUE(handle->cancel());
  EXPECT_FALSE(handle->cancel());
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_FALSE(handle->is_expired());
  EXPECT_EQ(timer.pending_timeouts(), 0u);  // synchronous removal
  hold.release();
  // Deadline order: once a later timeout has run, the cancelled one would have run before it.
  std::atomic<bool> later_ran{false};
  timer.new_timeout([&] { later_ran = true; }, 100ms);
  ASSERT_TRUE(wheel_test::wait_until([&] { return later_ran.load(); }));
  EXPECT_EQ(runs.load(), 0);
}

TEST(HeapTimerTest, CancelAfterExpiryFails) {
  HeapTimer timer;
  std::atomic<int> runs{0};
  auto handle = timer.new_timeout([&] { ++runs; }, 1ms);
  ASSERT_TRUE(wheel_test::wait_until([&] { return runs.load() == 1; }));
  EXPECT_TRUE(handle->is_expired());
  EXPECT_FALSE(handle->cancel());
}

TEST(HeapTimerTest, CancelFromTheMiddleKeepsHeapOrder) {
  HeapTimer timer;
  std::mutex mutex;
  std::vector<int> fired;
  std::vector<HeapTimeoutHandle> handles;
  std::mt19937 rng(7);
  std::vector<int> delays(200);
  // Bounds of each deadline: the clock read before and after new_timeout(), plus the delay (a
  // stall of this thread in between moves the timer's reading, and so the order).
  std::vector<Clock::time_point> earliest(200), latest(200);
  for (int i = 0; i < 200; ++i) delays[i] = 20 + static_cast<int>(rng() % 200);
  // The worker is held while they are scheduled and half cancelled: a stall of this thread
  // could otherwise let the first ones (20 ms) expire before their cancel().
  wheel_test::WorkerHold hold(timer, 0ms);
  ASSERT_TRUE(hold.holding());
  for (int i = 0; i < 200; ++i) {
    const auto delay = std::chrono::milliseconds(delays[i]);
    earliest[i] = Clock::now() + delay;
    handles.push_back(timer.new_timeout(
        [&, i] {
          std::lock_guard lock(mutex);
          fired.push_back(i);
        },
        delay));
    latest[i] = Clock::now() + delay;
  }
  for (int i = 0; i < 200; i += 2) EXPECT_TRUE(handles[i]->cancel());
  EXPECT_EQ(timer.pending_timeouts(), 100u);
  hold.release();
  ASSERT_TRUE(wheel_test::wait_until([&] { return timer.pending_timeouts() == 0; }));
  ASSERT_TRUE(wheel_test::wait_until([&] {
    std::lock_guard lock(mutex);
    return fired.size() == 100;
  }));
  std::lock_guard lock(mutex);
  for (std::size_t k = 0; k < fired.size(); ++k) {
    EXPECT_EQ(fired[k] % 2, 1);
    // The one that ran first cannot have a deadline provably later than the next one's.
    if (k > 0) {
      EXPECT_LE(earliest[fired[k - 1]], latest[fired[k]])
          << "timeout " << fired[k - 1] << " ran before " << fired[k];
    }
  }
}

TEST(HeapTimerTest, StopReturnsUnrunTimeoutsMarkedCancelled) {
  HeapTimer timer;
  auto a = timer.new_timeout([] {}, 1h);
  auto b = timer.new_timeout([] {}, 1h);
  EXPECT_TRUE(b->cancel());
  const auto left = timer.stop();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], a);
  EXPECT_TRUE(a->is_cancelled());
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
}

TEST(HeapTimerTest, HandleOutlivesTimer) {
  HeapTimeoutHandle handle;
  {
    HeapTimer timer;
    handle = timer.new_timeout([] {}, 1h);
  }
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_FALSE(handle->cancel());
}

TEST(HeapTimerTest, EmptyTaskThrows) {
  HeapTimer timer;
  EXPECT_THROW(timer.new_timeout(std::function<void()>(), 1ms), std::invalid_argument);
}

TEST(HeapTimerTest, TaskMaySchedule) {
  HeapTimer timer;
  std::atomic<int> second{0};
  timer.new_timeout([&] { timer.new_timeout([&] { ++second; }, 1ms); }, 1ms);
  EXPECT_TRUE(wheel_test::wait_until([&] { return second.load() == 1; }));
}

TEST(HeapTimerTest, ManyThreadsScheduleAndCancelRacingExpiry) {
  HeapTimer timer;
  std::atomic<int> runs{0};
  std::atomic<int> cancelled{0};
  constexpr int kThreads = 4, kPerThread = 5'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kPerThread; ++i) {
        auto h = timer.new_timeout([&] { ++runs; }, std::chrono::microseconds(rng() % 2000));
        if (rng() % 2 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
          if (h->cancel()) ++cancelled;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(wheel_test::wait_until(
      [&] { return runs.load() + cancelled.load() == kThreads * kPerThread; }));
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(runs.load() + cancelled.load(), kThreads * kPerThread);  // each exactly one
}

}  // namespace
}  // namespace wheel::bench
