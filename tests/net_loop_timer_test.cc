// SPDX-License-Identifier: Apache-2.0
// LoopTimer (wheel/net/loop_timer.h): a LoopWheel driven by the loop. Tasks run on the loop
// thread; new_timeout/cancel on the loop thread, post_timeout/cancel_posted from others; no
// wake-up while nothing is pending; the expiry budget lets I/O in between slices of a burst;
// close leaves no handle open, runs nothing after it, and destroys pending tasks on the loop
// thread. Waits are for events, bounded by generous deadlines. On a ManualClock the test moves
// time itself and nothing waits.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "wheel/manual_clock.h"
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

// Runs `loop` on this thread until `done()` or 10 s; returns done(). A 1 ms poll timer keeps
// the loop turning meanwhile.
template <class Done>
bool run_until(uv_loop_t* loop, Done done) {
  uv_timer_t poll;
  uv_timer_init(loop, &poll);
  uv_timer_start(
      &poll, [](uv_timer_t*) {}, 1, 1);
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

TEST_F(LoopTimerTest, LoopThreadTimeoutsRunOnTheLoopNeverEarly) {
  LoopTimer timer(&loop_, fine_tick());
  std::vector<int> order;
  const auto start = Clock::now();
  Clock::time_point ran_at;
  timer.new_timeout(
      [&] {
        order.push_back(2);
        ran_at = Clock::now();
      },
      30ms);
  timer.new_timeout([&] { order.push_back(1); }, 5ms);
  EXPECT_EQ(timer.pending_timeouts(), 2u);
  EXPECT_TRUE(run_until(&loop_, [&] { return order.size() == 2; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GE(ran_at - start, 30ms) << "never before its delay";
  EXPECT_EQ(timer.timeouts_scheduled(), 2u);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  timer.close();
}

TEST_F(LoopTimerTest, PostedTimeoutsFromAnotherThreadRunOnTheLoopThread) {
  LoopTimer timer(&loop_, fine_tick());
  std::atomic<int> ran{0};
  std::thread::id ran_on;
  std::thread other([&] {
    const LoopTimer::PostedTimeout id = timer.post_timeout(
        [&] {
          ran_on = std::this_thread::get_id();
          ran.fetch_add(1);
        },
        5ms);
    EXPECT_TRUE(id);
  });
  other.join();
  EXPECT_TRUE(run_until(&loop_, [&] { return ran.load() == 1; }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  timer.close();
}

TEST_F(LoopTimerTest, ACancelledTimeoutNeverRuns) {
  LoopTimer timer(&loop_, fine_tick());
  bool cancelled_ran = false, later_ran = false;
  const LoopTimer::Handle h = timer.new_timeout([&] { cancelled_ran = true; }, 20ms);
  timer.new_timeout([&] { later_ran = true; }, 60ms);
  EXPECT_TRUE(timer.cancel(h));
  EXPECT_FALSE(timer.cancel(h)) << "only the call that cancelled returns true";
  EXPECT_EQ(timer.cancel_calls(), 2u);
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_TRUE(run_until(&loop_, [&] { return later_ran; }));
  EXPECT_FALSE(cancelled_ran);
  timer.close();
}

TEST_F(LoopTimerTest, CancelPostedFromAnotherThreadStopsIt) {
  LoopTimer timer(&loop_, fine_tick());
  std::atomic<bool> cancelled_ran{false}, marker_ran{false};
  std::thread other([&] {
    const auto id = timer.post_timeout([&] { cancelled_ran = true; }, 30ms);
    timer.cancel_posted(id);  // queued behind the schedule: applied in order
    timer.post_timeout([&] { marker_ran = true; }, 60ms);
  });
  other.join();
  EXPECT_TRUE(run_until(&loop_, [&] { return marker_ran.load(); }));
  EXPECT_FALSE(cancelled_ran.load());
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  timer.close();
}

TEST_F(LoopTimerTest, CancelPostedOnTheLoopThreadWorksToo) {
  LoopTimer timer(&loop_, fine_tick());
  bool ran = false;
  const auto id = timer.post_timeout([&] { ran = true; }, 1ms);
  timer.cancel_posted(id);
  bool marker = false;
  timer.new_timeout([&] { marker = true; }, 20ms);
  EXPECT_TRUE(run_until(&loop_, [&] { return marker; }));
  EXPECT_FALSE(ran);
  timer.close();
}

// The uv timer sleeps until the next due tick, and with nothing pending it is stopped: the
// loop's poll timeout says so.
TEST_F(LoopTimerTest, NothingPendingMeansNoArmedTimer) {
  LoopTimer timer(&loop_, fine_tick());
  const LoopTimer::Handle h = timer.new_timeout([] {}, 1h);
  uv_run(&loop_, UV_RUN_NOWAIT);  // (before its first turn a loop reports a timeout of 0)
  // The only timer in the loop is ours, armed for an hour away.
  EXPECT_GE(uv_backend_timeout(&loop_), 59 * 60 * 1000);
  timer.cancel(h);
  bool ran = false;
  timer.new_timeout([&] { ran = true; }, 1ms);
  EXPECT_TRUE(run_until(&loop_, [&] { return ran; }));
  // Pending nothing: no timer left armed, so the loop would block forever (-1) but for the
  // async handle, which is not a timer.
  EXPECT_EQ(uv_backend_timeout(&loop_), -1);
  timer.close();
}

// A burst of due timeouts runs at most max_tasks_per_turn per loop turn, and the loop polls for
// I/O between the slices: a pipe that becomes readable while the burst runs is read before the
// burst ends.
TEST_F(LoopTimerTest, TheBudgetSplitsABurstAcrossTurnsAndLetsIoIn) {
  LoopTimerOptions budget;
  budget.max_tasks_per_turn = 100;
  LoopTimer timer(&loop_, fine_tick(), budget);
  int fds[2];
  ASSERT_EQ(uv_pipe(fds, 0, 0), 0);
  uv_pipe_t reader;
  ASSERT_EQ(uv_pipe_init(&loop_, &reader, 0), 0);
  ASSERT_EQ(uv_pipe_open(&reader, fds[0]), 0);
  struct State {
    int ran = 0;
    int ran_when_read = -1;
    int wrote_at = -1;
    int write_fd = -1;
  } st;
  st.write_fd = fds[1];
  reader.data = &st;
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&reader),
      [](uv_handle_t*, std::size_t, uv_buf_t* buf) {
        static char space[64];
        *buf = uv_buf_init(space, sizeof space);
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t*) {
        auto* state = static_cast<State*>(s->data);
        if (n > 0 && state->ran_when_read < 0) state->ran_when_read = state->ran;
      });
  constexpr int kBurst = 1000;
  for (int i = 0; i < kBurst; ++i) {
    timer.new_timeout(
        [&st] {
          // The first task makes the pipe readable: the read must come before the last task.
          if (st.ran++ == 0) {
            st.wrote_at = st.ran;
            ASSERT_EQ(write(st.write_fd, "x", 1), 1);
          }
        },
        2ms);
  }
  // Each new_timeout() reads the clock, so on a slow build the burst spreads over several
  // ticks. Let every deadline pass before the loop turns: one burst of 1,000 due tasks
  // whatever that spread (a late wake-up here only makes it more so).
  const auto all_due = std::chrono::steady_clock::now() + 5ms;
  while (std::chrono::steady_clock::now() < all_due) std::this_thread::sleep_for(1ms);
  // Per turn: count the tasks run; a prepare handle runs once per loop iteration.
  uv_prepare_t prepare;
  uv_prepare_init(&loop_, &prepare);
  struct Turns {
    int* ran;
    int last = 0;
    int max_per_turn = 0;
    int turns_with_tasks = 0;
  } turns{&st.ran};
  prepare.data = &turns;
  uv_prepare_start(&prepare, [](uv_prepare_t* p) {
    auto* t = static_cast<Turns*>(p->data);
    const int now = *t->ran;
    if (now > t->last) {
      t->max_per_turn = std::max(t->max_per_turn, now - t->last);
      ++t->turns_with_tasks;
    }
    t->last = now;
  });
  EXPECT_TRUE(run_until(&loop_, [&] { return st.ran == kBurst && st.ran_when_read >= 0; }));
  EXPECT_EQ(st.ran, kBurst);
  EXPECT_LE(turns.max_per_turn, 100) << "a turn ran more than the budget";
  EXPECT_GE(turns.turns_with_tasks, kBurst / 100);
  EXPECT_GE(timer.budget_cuts(), 9u);
  EXPECT_GE(st.ran_when_read, 1);
  EXPECT_LT(st.ran_when_read, kBurst) << "the read waited for the whole burst";
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&reader), nullptr);
  close(fds[1]);
  timer.close();
  uv_run(&loop_, UV_RUN_DEFAULT);  // the handles on this stack finish closing here
}

TEST_F(LoopTimerTest, CloseDestroysPendingDueAndPostedTasksUnrunOnTheLoopThread) {
  auto pending_died = std::make_shared<std::thread::id>();
  auto posted_died = std::make_shared<std::thread::id>();
  {
    LoopTimer timer(&loop_, fine_tick());
    timer.new_timeout(ThreadOfDeath(pending_died), 1h);
    std::thread other([&] { timer.post_timeout(ThreadOfDeath(posted_died), 0ms); });
    other.join();  // posted, not yet taken in: the loop has not run
    timer.close();
    EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
    std::thread late(
        [&] { EXPECT_FALSE(timer.post_timeout([] { ADD_FAILURE() << "must not run"; }, 0ms)); });
    late.join();
    timer.close();  // idempotent
  }                 // destroyed right after close(): the loop frees the handles later
  EXPECT_EQ(*pending_died, std::this_thread::get_id());
  EXPECT_EQ(*posted_died, std::this_thread::get_id());
}

TEST_F(LoopTimerTest, DestructorClosesAndTheLoopEnds) {
  auto timer = std::make_unique<LoopTimer>(&loop_, fine_tick());
  timer->new_timeout([] { ADD_FAILURE() << "must not run"; }, 1h);
  timer.reset();
  // TearDown: uv_run returns (no handle left) and uv_loop_close succeeds.
}

TEST_F(LoopTimerTest, OnAManualClockTimeoutsRunWhenTheClockPassesTheirTick) {
  ManualClock clock(5s);
  LoopTimer timer(&loop_, clock, fine_tick());
  EXPECT_EQ(timer.now_ms(), 5000u) << "the clock's reading, not the loop's";
  std::vector<std::uint64_t> ran_at;
  timer.new_timeout([&] { ran_at.push_back(timer.now_ms()); }, 10ms);
  timer.new_timeout([&] { ran_at.push_back(timer.now_ms()); }, 3s);
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_TRUE(ran_at.empty()) << "the loop alone runs nothing: the clock has not moved";
  clock.advance(10ms);
  EXPECT_TRUE(ran_at.empty()) << "its tick has not passed";
  clock.advance(1ms);  // no uv_run: advance() runs the turn
  ASSERT_EQ(ran_at.size(), 1u);
  EXPECT_EQ(ran_at[0], 5011u);
  clock.advance(1h);
  ASSERT_EQ(ran_at.size(), 2u);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_EQ(timer.fresh_now_ms(), 5000u + 3'600'011u);
  timer.close();
}

// The hooks bracket each turn's tasks: a task sees `before` done and `after` not yet.
TEST_F(LoopTimerTest, TurnHooksRunAroundEachTurnsTasks) {
  ManualClock clock;
  LoopTimer timer(&loop_, clock, fine_tick());
  std::vector<std::string> events;
  timer.set_turn_hooks({[&] { events.push_back("before"); }, [&] { events.push_back("after"); }});
  timer.new_timeout([&] { events.push_back("a"); }, 2ms);
  timer.new_timeout([&] { events.push_back("b"); }, 2ms);
  timer.new_timeout([&] { events.push_back("c"); }, 5ms);
  clock.advance(3ms);
  EXPECT_EQ(events, (std::vector<std::string>{"before", "a", "b", "after"}));
  events.clear();
  timer.set_turn_hooks({});  // empty hooks are allowed
  clock.advance(3ms);
  EXPECT_EQ(events, (std::vector<std::string>{"c"}));
  timer.close();
}

TEST_F(LoopTimerTest, OnAManualClockCloseDetachesFromTheClock) {
  ManualClock clock;
  int runs = 0;
  {
    LoopTimer timer(&loop_, clock, fine_tick());
    timer.new_timeout([&] { ++runs; }, 5ms);
  }                   // destroyed unclosed: the destructor closes and detaches
  clock.advance(1s);  // would touch the destroyed timer (ASan) if it were still attached
  EXPECT_EQ(runs, 0);
}

TEST_F(LoopTimerTest, InvalidOptionsThrow) {
  TimerOptions bad;
  bad.ticks_per_wheel = 0;
  EXPECT_THROW(LoopTimer(&loop_, bad), std::invalid_argument);
  LoopTimerOptions zero;
  zero.max_tasks_per_turn = 0;
  EXPECT_THROW(LoopTimer(&loop_, fine_tick(), zero), std::invalid_argument);
}

}  // namespace
}  // namespace wheel::net
