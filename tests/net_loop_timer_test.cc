// SPDX-License-Identifier: Apache-2.0
// LoopTimer (wheel/net/loop_timer.h): tasks run on the loop's thread; schedule and cancel from
// any thread; close leaves no handle open, runs no job after it, and destroys pending tasks on
// the loop thread.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "wheel/net/loop_timer.h"

namespace wheel::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TimerOptions fine_tick() {
  TimerOptions o;
  o.tick_duration = 1ms;
  o.ticks_per_wheel = 64;
  return o;
}

// Runs `loop` on this thread until `done()` or 10 s; returns done().
template <class Done>
bool run_until(uv_loop_t* loop, Done done) {
  uv_timer_t poll;
  uv_timer_init(loop, &poll);
  uv_timer_start(
      &poll, [](uv_timer_t*) {}, 1, 1);  // wakes the loop to check done()
  const auto deadline = Clock::now() + 10s;
  while (!done() && Clock::now() < deadline) uv_run(loop, UV_RUN_ONCE);
  uv_close(reinterpret_cast<uv_handle_t*>(&poll), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);
  return done();
}

// Records the thread its destructor runs on.
struct ThreadOfDeath {
  std::shared_ptr<std::thread::id> died_on;
  explicit ThreadOfDeath(std::shared_ptr<std::thread::id> where) : died_on(std::move(where)) {}
  ThreadOfDeath(ThreadOfDeath&& o) noexcept = default;
  ~ThreadOfDeath() {
    if (died_on) *died_on = std::this_thread::get_id();  // moved-from copies hold nothing
  }
  void operator()() const { ADD_FAILURE() << "must not run"; }
};

class LoopTimerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    uv_run(&loop_, UV_RUN_DEFAULT);  // finishes closing; returns only when no handle is open
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle was left open";
  }
  uv_loop_t loop_;
};

TEST_F(LoopTimerTest, TasksRunOnTheLoopThreadEvenWhenScheduledFromAnother) {
  LoopTimer timer(&loop_, fine_tick());
  std::atomic<int> ran{0};
  std::thread::id ran_on;
  std::thread other([&] {
    timer.new_timeout(
        [&] {
          ran_on = std::this_thread::get_id();
          ran.fetch_add(1);
        },
        5ms);
  });
  other.join();
  EXPECT_TRUE(run_until(&loop_, [&] { return ran.load() == 1; }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(timer.timeouts_scheduled(), 1u);
  timer.close();
}

TEST_F(LoopTimerTest, ACancelledTimeoutNeverRuns) {
  LoopTimer timer(&loop_, fine_tick());
  bool cancelled_ran = false, later_ran = false;
  TimeoutHandle h = timer.new_timeout([&] { cancelled_ran = true; }, 20ms);
  timer.new_timeout([&] { later_ran = true; }, 60ms);
  EXPECT_TRUE(timer.cancel(h));
  EXPECT_FALSE(timer.cancel(h)) << "only the call that cancelled returns true";
  EXPECT_EQ(timer.cancel_calls(), 2u);
  EXPECT_TRUE(run_until(&loop_, [&] { return later_ran; }));
  EXPECT_FALSE(cancelled_ran);
  timer.close();
}

TEST_F(LoopTimerTest, CloseDestroysPendingAndQueuedTasksUnrunOnTheLoopThread) {
  auto pending_died = std::make_shared<std::thread::id>();
  auto queued_died = std::make_shared<std::thread::id>();
  {
    LoopTimer timer(&loop_, fine_tick());
    timer.new_timeout(ThreadOfDeath(pending_died), 1h);
    // Expires at once but the loop does not run: its job waits in the queue.
    TimeoutHandle queued = timer.new_timeout(ThreadOfDeath(queued_died), 0ms);
    const auto deadline = Clock::now() + 10s;
    while (!queued->is_expired() && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(queued->is_expired());
    // close() from a thread that is not the test's would be a misuse; the test thread is the
    // loop thread here.
    timer.close();
    EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
    timer.close();  // idempotent
  }                 // destroyed right after close(): the loop frees the async handle later
  EXPECT_EQ(*pending_died, std::this_thread::get_id());
  EXPECT_EQ(*queued_died, std::this_thread::get_id());
}

TEST_F(LoopTimerTest, DestructorClosesAndTheLoopEnds) {
  auto timer = std::make_unique<LoopTimer>(&loop_, fine_tick());
  timer->new_timeout([] { ADD_FAILURE() << "must not run"; }, 1h);
  timer.reset();
  // TearDown: uv_run returns (no handle left) and uv_loop_close succeeds.
}

TEST_F(LoopTimerTest, InvalidOptionsThrowTheTimersError) {
  TimerOptions bad;
  bad.ticks_per_wheel = 0;
  EXPECT_THROW(LoopTimer(&loop_, bad), std::invalid_argument);
}

}  // namespace
}  // namespace wheel::net
