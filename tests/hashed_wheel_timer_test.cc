// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer: scheduling, timing, counting, stop, idling and the executor hand-off
// (behaviours 1, 2, 5, 6, 8 to 12; options are in timer_options_test, handles in timeout_test).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>
#include <wheel/manual_clock.h>

#include "support/timer_layouts.h"
#include "support/timer_test_support.h"

namespace {

using namespace std::chrono_literals;
using wheel::HashedWheelTimer;
using wheel::Timeout;
using wheel::TimeoutHandle;
using wheel::TimerOptions;
using wheel::testing::Clock;
using wheel::testing::outcome_of;
using wheel::testing::wait_until;

// Counts live instances, so a test can see when a task's captures are destroyed.
struct Tracked {
  explicit Tracked(std::atomic<int>* l) : live(l) { ++*live; }
  Tracked(const Tracked& o) : live(o.live) { ++*live; }
  ~Tracked() { --*live; }
  std::atomic<int>* live;
};

// Every test runs once per layout (TimerOptions::layout).
class HashedWheelTimerTest : public ::testing::TestWithParam<wheel::TimerLayout> {
 protected:
  TimerOptions options_with(std::chrono::milliseconds tick, std::size_t buckets = 512,
                            std::string name = "wheel-timer") const {
    TimerOptions options;
    options.tick_duration = tick;
    options.ticks_per_wheel = buckets;
    options.thread_name = std::move(name);
    options.layout = GetParam();
    return options;
  }
};

// ---------------------------------------------------------------- 1. the wheel and its rounds

TEST_P(HashedWheelTimerTest, TimeoutBeyondOneRevolutionWaitsItsRounds) {
  // 4 buckets of 10 ms: a 95 ms delay goes round the wheel twice before it is due.
  HashedWheelTimer timer(options_with(10ms, 4));
  const auto start = Clock::now();
  std::atomic<Clock::rep> fired_at{0};
  timer.new_timeout([&] { fired_at = (Clock::now() - start).count(); }, 95ms);
  ASSERT_TRUE(wait_until([&] { return fired_at.load() != 0; }));
  EXPECT_GE(Clock::duration(fired_at.load()), 95ms);
}

TEST_P(HashedWheelTimerTest, ManyDelaysAcrossManyRoundsAllFireInDeadlineOrder) {
  HashedWheelTimer timer(options_with(1ms, 8));
  std::mutex mutex;
  std::vector<int> order;
  for (int delay : {70, 5, 33, 17, 50, 9, 41}) {
    timer.new_timeout(
        [&, delay] {
          std::lock_guard lock(mutex);
          order.push_back(delay);
        },
        std::chrono::milliseconds(delay));
  }
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return order.size() == 7;
  }));
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

// ---------------------------------------------------------------- 2. scheduling from anywhere

TEST_P(HashedWheelTimerTest, NewTimeoutIsSafeFromManyThreads) {
  HashedWheelTimer timer(options_with(1ms));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5'000;
  std::atomic<int> runs{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      std::minstd_rand random(t);
      for (int i = 0; i < kPerThread; ++i) {
        timer.new_timeout([&] { ++runs; }, std::chrono::microseconds(random() % 20'000));
      }
    });
  }
  for (auto& producer : producers) producer.join();
  EXPECT_TRUE(wait_until([&] { return runs == kThreads * kPerThread; }));
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
}

TEST_P(HashedWheelTimerTest, TaskCanScheduleAndCancelOnTheWorker) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> chain{0};
  std::atomic<bool> victim_ran{false};
  TimeoutHandle victim = timer.new_timeout([&] { victim_ran = true; }, 200ms);
  std::function<void(Timeout&)> step = [&](Timeout& self) {
    if (++chain < 5) {
      self.timer().new_timeout(step, 1ms);
    } else {
      EXPECT_TRUE(victim->cancel());
    }
  };
  timer.new_timeout(step, 1ms);
  ASSERT_TRUE(wait_until([&] { return chain == 5 && timer.pending_timeouts() == 0; }));
  std::this_thread::sleep_for(250ms);
  EXPECT_FALSE(victim_ran);
  EXPECT_TRUE(victim->is_cancelled());
}

TEST_P(HashedWheelTimerTest, TaskCancellingANeighbourOfTheSameBucketIsSafe) {
  HashedWheelTimer timer(options_with(50ms));
  std::atomic<int> runs{0};
  std::vector<TimeoutHandle> handles(10);
  // All land on the same tick; the first to run tries to cancel the others, which were
  // already handed to run (expire first, then invoke), so every cancel fails.
  std::atomic<int> cancels_won{0};
  std::latch all_scheduled(1);
  for (auto& handle : handles) {
    handle = timer.new_timeout(
        [&] {
          all_scheduled.wait();  // the handles vector is complete
          if (runs++ == 0) {
            for (auto& other : handles) cancels_won += other->cancel();
          }
        },
        10ms);
  }
  all_scheduled.count_down();
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  EXPECT_EQ(runs + cancels_won, 10);
  EXPECT_EQ(cancels_won, 0);
}

TEST_P(HashedWheelTimerTest, TwoHundredThousandTimeoutsPassTheHundredThousandPerTickCap) {
  // One tick moves at most 100,000 new timeouts into the wheel, so 200,000 zero-delay timeouts
  // fire in two batches, one tick apart. They are scheduled from a task on the worker, so all
  // of them are queued before the next tick's transfer however slow the machine (TSan); the
  // check is then on order, not time: the first 100,000 (in submission order) all run before
  // any of the others.
  HashedWheelTimer timer(options_with(100ms));
  constexpr int kCount = 200'000;
  std::vector<int> run_order(kCount, -1);
  std::atomic<int> next{0};
  std::atomic<int> runs{0};  // counted after run_order is written, so reading it syncs
  timer.new_timeout(
      [&] {
        // All due at the same instant (the delays shrink as scheduling takes time), so the
        // tick a timeout fires on depends only on the transfer that moved it.
        const auto due = Clock::now();
        for (int i = 0; i < kCount; ++i) {
          timer.new_timeout(
              [&, i] {
                run_order[i] = next.fetch_add(1);
                runs.fetch_add(1, std::memory_order_release);
              },
              due - Clock::now());
        }
      },
      0ms);
  ASSERT_TRUE(wait_until([&] { return runs.load(std::memory_order_acquire) == kCount; }, 60s));
  const int last_of_first = *std::max_element(run_order.begin(), run_order.begin() + 100'000);
  const int first_of_rest = *std::min_element(run_order.begin() + 100'000, run_order.end());
  EXPECT_LT(last_of_first, first_of_rest) << "all were transferred in one tick: no cap";
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
}

// ---------------------------------------------------------------- 5. never early, about a tick
// late

TEST_P(HashedWheelTimerTest, NeverFiresBeforeItsFullDelay) {
  HashedWheelTimer timer(options_with(10ms));
  constexpr int kCount = 2'000;
  std::vector<Clock::duration> lateness(kCount);
  std::atomic<int> runs{0};
  std::minstd_rand random(7);
  for (int i = 0; i < kCount; ++i) {
    const auto delay = std::chrono::microseconds(random() % 300'000);
    const auto due = Clock::now() + delay;
    timer.new_timeout(
        [&, i, due] {
          lateness[i] = Clock::now() - due;
          ++runs;
        },
        delay);
  }
  ASSERT_TRUE(wait_until([&] { return runs == kCount; }));
  const auto [earliest, latest] = std::minmax_element(lateness.begin(), lateness.end());
  EXPECT_GE(*earliest, 0ns) << "a timeout fired early";
  // About one tick late; the bound is generous because tests must not flake on a busy machine.
  EXPECT_LT(*latest, 2s);
}

// ---------------------------------------------------------------- 6. counting and the limit

TEST_P(HashedWheelTimerTest, PendingCountsUntilRunOrCancellationIsProcessed) {
  HashedWheelTimer timer(options_with(1ms));
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 10; ++i) handles.push_back(timer.new_timeout([] {}, 1h));
  std::latch release(1);
  std::atomic<bool> running{false};
  timer.new_timeout(
      [&] {
        running = true;
        release.wait();
      },
      1ms);
  EXPECT_EQ(timer.pending_timeouts(), 11u);
  ASSERT_TRUE(wait_until([&] { return running.load(); }));
  EXPECT_EQ(timer.pending_timeouts(), 11u) << "a running task still counts until it returns";
  release.count_down();
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 10; }));
  for (int i = 0; i < 4; ++i) handles[i]->cancel();
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 6; }));
}

TEST_P(HashedWheelTimerTest, PendingIsExactAfterCancelsRaceTheirBucketsTick) {
  // netty#14959: a timeout cancelled while the worker visits its bucket was subtracted twice.
  // Here the count must come back to exactly the number still scheduled.
  HashedWheelTimer timer(options_with(1ms, 4));
  for (int round = 0; round < 20; ++round) {
    std::vector<TimeoutHandle> handles;
    for (int i = 0; i < 500; ++i) {
      handles.push_back(timer.new_timeout([] {}, std::chrono::microseconds(500 + i * 7)));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500 + round * 100));
    for (auto& handle : handles) handle->cancel();
    ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  }
  std::vector<TimeoutHandle> kept;
  for (int i = 0; i < 10; ++i) kept.push_back(timer.new_timeout([] {}, 1h));
  EXPECT_EQ(timer.pending_timeouts(), 10u);
}

TEST_P(HashedWheelTimerTest, MaxPendingRejectsWithoutChangingTheCount) {
  TimerOptions options = options_with(1ms);
  options.max_pending_timeouts = 3;
  HashedWheelTimer timer(options);
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(timer.new_timeout([] {}, 1h));
  EXPECT_THROW(timer.new_timeout([] {}, 1h), wheel::RejectedExecutionError);
  EXPECT_EQ(timer.pending_timeouts(), 3u);
  std::string message;
  try {
    timer.new_timeout([] {}, 1h);
  } catch (const std::runtime_error& e) {  // RejectedExecutionError is a runtime_error
    message = e.what();
  }
  EXPECT_NE(message.find("max_pending_timeouts"), std::string::npos)
      << "no RejectedExecutionError naming the option, got '" << message << "'";
  EXPECT_EQ(timer.pending_timeouts(), 3u);
  handles[0]->cancel();
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 2; }));
  EXPECT_NO_THROW(handles.push_back(timer.new_timeout([] {}, 1h)));
}

TEST_P(HashedWheelTimerTest, MaxPendingHoldsUnderConcurrentProducers) {
  TimerOptions options = options_with(1ms);
  options.max_pending_timeouts = 1'000;
  HashedWheelTimer timer(options);
  std::atomic<int> accepted{0};
  std::atomic<int> rejected{0};
  std::vector<std::thread> producers;
  std::vector<std::vector<TimeoutHandle>> kept(4);
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < 1'000; ++i) {
        try {
          kept[t].push_back(timer.new_timeout([] {}, 1h));
          ++accepted;
        } catch (const wheel::RejectedExecutionError&) {
          ++rejected;
        }
      }
    });
  }
  for (auto& producer : producers) producer.join();
  EXPECT_EQ(accepted, 1'000);
  EXPECT_EQ(rejected, 3'000);
  EXPECT_EQ(timer.pending_timeouts(), 1'000u);
}

TEST_P(HashedWheelTimerTest, MaxPendingReservationIsOneAtomicStepUnderContention) {
  // Many threads race for a few slots, round after round: a check-then-add reservation admits
  // more than the limit now and then (when a thread is preempted between its check and its
  // add); an atomic one never does.
  constexpr int kLimit = 4;
  constexpr int kThreads = 8;
  constexpr int kRounds = 2'500;
  constexpr auto kTimeLimit = 20s;  // sanitizer builds manage fewer rounds
  TimerOptions options = options_with(1ms);
  options.max_pending_timeouts = kLimit;
  HashedWheelTimer timer(options);
  int over_admitted_rounds = 0;
  int round = 0;
  const auto start = Clock::now();
  for (; round < kRounds && Clock::now() - start < kTimeLimit; ++round) {
    std::atomic<int> admitted{0};
    std::latch go(kThreads);
    std::vector<std::vector<TimeoutHandle>> kept(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        go.arrive_and_wait();  // all start together
        for (int i = 0; i < kLimit; ++i) {
          try {
            kept[t].push_back(timer.new_timeout([] {}, 1h));
            ++admitted;
          } catch (const wheel::RejectedExecutionError&) {
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    ASSERT_GE(admitted, 1);
    if (admitted > kLimit) ++over_admitted_rounds;
    for (auto& mine : kept) {
      for (auto& handle : mine) handle->cancel();
    }
    ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  }
  EXPECT_EQ(over_admitted_rounds, 0) << "more than " << kLimit << " admitted in "
                                     << over_admitted_rounds << " of " << round << " rounds";
  RecordProperty("rounds", round);
}

// ---------------------------------------------------------------- the task and its delay

TEST_P(HashedWheelTimerTest, AcceptsMoveOnlyTasksAndBothCallForms) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> value{0};
  auto payload = std::make_unique<int>(40);
  timer.new_timeout([p = std::move(payload), &value] { value += *p; }, 1ms);
  timer.new_timeout([&value](Timeout& self) { value += self.is_expired() ? 2 : 100; }, 1ms);
  EXPECT_TRUE(wait_until([&] { return value == 42; }));
}

TEST_P(HashedWheelTimerTest, EmptyCallableThrowsInvalidArgument) {
  HashedWheelTimer timer(options_with(1ms));
  std::function<void()> empty;
  EXPECT_THROW(timer.new_timeout(empty, 1ms), std::invalid_argument);
  void (*null_function)() = nullptr;
  EXPECT_THROW(timer.new_timeout(null_function, 1ms), std::invalid_argument);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(HashedWheelTimerTest, HugeDelaysNeverOverflow) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> runs{0};
  std::vector<TimeoutHandle> handles;
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::nanoseconds::max()));
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::hours::max()));
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::duration<double>(1e300)));
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::years(1000)));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(timer.pending_timeouts(), 4u);
  for (auto& handle : handles) EXPECT_TRUE(handle->cancel());
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
}

TEST_P(HashedWheelTimerTest, ZeroAndNegativeDelaysFireOnTheNextTick) {
  HashedWheelTimer timer(options_with(20ms));
  std::atomic<int> runs{0};
  timer.new_timeout([&] { ++runs; }, 0ms);
  timer.new_timeout([&] { ++runs; }, -5s);
  timer.new_timeout([&] { ++runs; }, std::chrono::nanoseconds::min());
  timer.new_timeout([&] { ++runs; }, std::chrono::hours::min());
  EXPECT_TRUE(wait_until([&] { return runs == 4; }, 5s));
}

// ---------------------------------------------------------------- 9. a throwing task

TEST_P(HashedWheelTimerTest, ThrowingTaskIsLoggedAndTheWorkerCarriesOn) {
  wheel::testing::LogCapture log;
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<bool> later_ran{false};
  timer.new_timeout([] { throw std::runtime_error("boom"); }, 1ms);
  timer.new_timeout([] { throw 42; }, 2ms);
  timer.new_timeout([&] { later_ran = true; }, 20ms);
  ASSERT_TRUE(wait_until([&] { return later_ran.load(); }));
  timer.stop();
  EXPECT_EQ(log.count("boom", spdlog::level::warn), 1);
  EXPECT_EQ(log.count("non-standard exception", spdlog::level::warn), 1);
}

// ---------------------------------------------------------------- 10. stop()

TEST_P(HashedWheelTimerTest, StopReturnsAJobForEveryUnrunTimeoutMarkedCancelled) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> live{0};
  std::vector<TimeoutHandle> scheduled;
  for (int i = 0; i < 1'000; ++i) {
    scheduled.push_back(timer.new_timeout([t = Tracked(&live)] {}, 1h));
  }
  ASSERT_TRUE(scheduled[3]->cancel());
  // Many more straight away: some are still in the submission queue when stop() runs.
  for (int i = 0; i < 50'000; ++i) {
    scheduled.push_back(timer.new_timeout([t = Tracked(&live)] {}, 1h));
  }
  std::vector<wheel::TimerJob> unrun = timer.stop();
  EXPECT_EQ(unrun.size(), scheduled.size() - 1);
  std::set<Timeout*> returned;
  for (const auto& job : unrun) {
    ASSERT_TRUE(job.timeout()->is_cancelled());
    returned.insert(job.timeout());
  }
  EXPECT_EQ(returned.size(), unrun.size()) << "a timeout came back twice";
  EXPECT_EQ(returned.count(scheduled[3].get()), 0u);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  ASSERT_TRUE(wait_until([&] { return live == static_cast<int>(unrun.size()); }))
      << "the jobs hold the unrun tasks (the cancelled one is destroyed)";
  unrun.clear();
  EXPECT_EQ(live, 0) << "dropping the jobs destroys their tasks";
}

TEST_P(HashedWheelTimerTest, JobsFromStopRunTheirTaskOnTheCallingThread) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  bool saw_cancelled = false;
  TimeoutHandle handle = timer.new_timeout(
      [&](Timeout& self) {
        ++runs;
        ran_on = std::this_thread::get_id();
        saw_cancelled = self.is_cancelled();
      },
      1h);
  std::vector<wheel::TimerJob> jobs = timer.stop();
  ASSERT_EQ(jobs.size(), 1u);
  TimeoutHandle again = jobs[0].handle();
  EXPECT_EQ(again, handle);
  EXPECT_FALSE(handle->cancel()) << "already cancelled by stop()";
  jobs[0]();
  jobs[0]();  // a second call does nothing
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(saw_cancelled);
  EXPECT_EQ(jobs[0].timeout(), nullptr);
  EXPECT_FALSE(jobs[0].handle());
  EXPECT_TRUE(again->is_cancelled()) << "handles stay valid after the job ran";
}

TEST_P(HashedWheelTimerTest, IgnoringWhatStopReturnsDestroysEveryTask) {
  std::atomic<int> live{0};
  std::atomic<int> runs{0};
  TimeoutHandle kept;
  {
    HashedWheelTimer timer(options_with(1ms));
    for (int i = 0; i < 100; ++i) timer.new_timeout([&, t = Tracked(&live)] { ++runs; }, 1h);
    kept = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1h, 1h);
    ASSERT_EQ(live, 101);
    timer.stop();
    EXPECT_EQ(live, 0);
  }
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(kept->is_cancelled());
}

TEST_P(HashedWheelTimerTest, SecondStopReturnsNothing) {
  HashedWheelTimer timer(options_with(1ms));
  timer.new_timeout([] {}, 1h);
  EXPECT_EQ(timer.stop().size(), 1u);
  EXPECT_TRUE(timer.stop().empty());
}

TEST_P(HashedWheelTimerTest, StopBeforeStartReturnsNothingAndStartsNothing) {
  const std::string name = "never-started";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_FALSE(wheel::testing::find_thread(name).has_value());
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
  EXPECT_THROW(timer.start(), std::logic_error);
}

TEST_P(HashedWheelTimerTest, NewTimeoutAfterStopThrowsLogicError) {
  HashedWheelTimer timer(options_with(1ms));
  timer.start();
  timer.stop();
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(HashedWheelTimerTest, StopFromATaskThrowsLogicError) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> outcome{0};
  timer.new_timeout([&](Timeout& self) { outcome = outcome_of([&] { self.timer().stop(); }); },
                    1ms);
  ASSERT_TRUE(wait_until([&] { return outcome != 0; }));
  EXPECT_EQ(outcome, 2);
}

TEST_P(HashedWheelTimerTest, StopLetsARunningTaskFinishFirst) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  timer.new_timeout(
      [&] {
        started = true;
        std::this_thread::sleep_for(200ms);
        finished = true;
      },
      1ms);
  ASSERT_TRUE(wait_until([&] { return started.load(); }));
  timer.stop();
  EXPECT_TRUE(finished);
}

TEST_P(HashedWheelTimerTest, StopWhileOtherThreadsScheduleAndCancel) {
  for (int round = 0; round < 20; ++round) {
    HashedWheelTimer timer(options_with(1ms));
    std::atomic<int> runs{0};
    std::atomic<bool> stopping{false};
    std::vector<std::thread> producers;
    std::atomic<int> scheduled{0};
    for (int t = 0; t < 2; ++t) {
      producers.emplace_back([&] {
        for (int i = 0; i < 5'000; ++i) {
          try {
            TimeoutHandle h = timer.new_timeout([&] { ++runs; }, std::chrono::microseconds(i));
            ++scheduled;
            if (i % 2 == 0) h->cancel();
          } catch (const std::logic_error&) {
            EXPECT_TRUE(stopping.load());
            return;
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 5));
    stopping = true;
    timer.stop();
    for (auto& producer : producers) producer.join();
    EXPECT_LE(runs.load(), scheduled.load());
  }
}

// ---------------------------------------------------------------- 11. an idle timer costs nothing

// On a manual clock the tick observer sees every tick the timer processes: the ticks its worker
// would wake for. The worker sleeps until the tick ticks_to_next_event() names, the same
// decision process_due_ticks() makes here, so these counts are its wake-ups, deterministically.
TEST_P(HashedWheelTimerTest, IdleTimerProcessesNoTicks) {
  wheel::ManualClock clock;
  int processed = 0;
  TimerOptions options = options_with(1ms, 512);
  options.tick_observer = [&](std::chrono::nanoseconds) { ++processed; };
  HashedWheelTimer timer(options, clock);
  timer.start();
  for (int i = 0; i < 500; ++i) clock.advance(1ms);  // 500 ticks, one at a time
  EXPECT_EQ(processed, 0) << "an empty timer woke for empty ticks";
  clock.advance(10s);
  EXPECT_EQ(processed, 0);
  // After work, idle again: a timeout runs, then nothing more is processed.
  bool ran = false;
  timer.new_timeout([&] { ran = true; }, 5ms);
  for (int i = 0; i < 500; ++i) clock.advance(1ms);
  EXPECT_TRUE(ran);
  EXPECT_LE(processed, 2) << "the submission's tick and the due tick, nothing else";
  timer.stop();
}

TEST_P(HashedWheelTimerTest, TimerSkipsEmptyTicksUntilTheNextDueBucket) {
  wheel::ManualClock clock;
  int processed = 0;
  TimerOptions options = options_with(1ms, 4096);
  options.tick_observer = [&](std::chrono::nanoseconds) { ++processed; };
  HashedWheelTimer timer(options, clock);
  bool ran = false;
  timer.new_timeout([&] { ran = true; }, 600ms);  // due at the end of tick 600
  for (int t = 1; t <= 600; ++t) {
    clock.advance(1ms);
    ASSERT_FALSE(ran) << "ran early, at " << t << " ms";
  }
  EXPECT_LE(processed, 1) << "processed empty ticks: only the submission's tick may count";
  clock.advance(1ms);
  EXPECT_TRUE(ran);
  EXPECT_LE(processed, 2);
  timer.stop();
}

// The same on the real worker thread, counted as the kernel's voluntary context switches: a
// sleeping worker makes none, a worker waking every tick makes one a tick. A loaded machine can
// only make the window longer or the worker later, never add switches to a thread that sleeps,
// so these cannot fail by load; the manual-clock tests above pin the exact behaviour.
TEST_P(HashedWheelTimerTest, IdleWorkerDoesNotWakeEveryTick) {
  const std::string name = "idle-wheel";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  timer.start();
  std::optional<int> tid;
  ASSERT_TRUE(wait_until([&] { return (tid = wheel::testing::find_thread(name)).has_value(); }));
  ASSERT_TRUE(wait_until([&] { return wheel::testing::voluntary_switches(*tid) > 0; }));
  const auto before = wheel::testing::voluntary_switches(*tid);
  std::this_thread::sleep_for(500ms);  // >= 500 ticks: a ticking worker would sleep 500 times
  EXPECT_LT(wheel::testing::voluntary_switches(*tid) - before, 10);
}

TEST_P(HashedWheelTimerTest, WorkerSleepsPastEmptyTicksUntilTheNextDueBucket) {
  const std::string name = "sparse-wheel";
  HashedWheelTimer timer(options_with(1ms, 4096, name));
  // Due far beyond the window, so no real clock reading can make it due meanwhile.
  TimeoutHandle handle = timer.new_timeout([] {}, 1h);
  std::optional<int> tid;
  ASSERT_TRUE(wait_until([&] { return (tid = wheel::testing::find_thread(name)).has_value(); }));
  ASSERT_TRUE(wait_until([&] { return wheel::testing::voluntary_switches(*tid) > 0; }));
  const auto before = wheel::testing::voluntary_switches(*tid);
  std::this_thread::sleep_for(400ms);
  EXPECT_LT(wheel::testing::voluntary_switches(*tid) - before, 10);
  EXPECT_TRUE(handle->cancel());
}

TEST_P(HashedWheelTimerTest, SleepingWorkerWakesForANewTimeout) {
  // Nothing pending: the worker waits with no deadline, so only the new timeout's wake-up can
  // make it run (wait_until's bound is generous; speed is wheel-bench's business).
  const std::string name = "wake-wheel";
  HashedWheelTimer timer(options_with(10ms, 512, name));
  timer.start();
  std::optional<int> tid;
  ASSERT_TRUE(wait_until([&] { return (tid = wheel::testing::find_thread(name)).has_value(); }));
  ASSERT_TRUE(wait_until([&] { return wheel::testing::voluntary_switches(*tid) > 0; }));
  std::this_thread::sleep_for(50ms);  // most likely asleep; if not, the test is merely easier
  std::atomic<bool> ran{false};
  timer.new_timeout([&] { ran = true; }, 10ms);
  EXPECT_TRUE(wait_until([&] { return ran.load(); }));
}

TEST_P(HashedWheelTimerTest, TicksKeepTheirPhaseAcrossIdlePeriods) {
  // Ticks sit at start + k * tick even after the timer idled with nothing pending, so a
  // timeout runs at the first tick boundary after its deadline, never a tick (or an idle
  // period's remainder) later. The real worker's sleep precision is wheel-bench's to show.
  constexpr auto kTick = 200ms;
  wheel::ManualClock clock;
  HashedWheelTimer timer(options_with(kTick), clock);
  timer.start();
  for (auto idle : {130ms, 290ms, 70ms, 400ms}) {
    for (auto t = 0ms; t < idle; t += 7ms) clock.advance(7ms);  // nothing pending, off-grid
    const auto scheduled_at = clock.now();
    std::chrono::nanoseconds fired_at{-1};
    timer.new_timeout([&] { fired_at = clock.now(); }, 1ms);
    for (int step = 0; step < 1000 && fired_at.count() < 0; ++step) clock.advance(1ms);
    const auto boundary = (scheduled_at + 1ms) / kTick * kTick + kTick;
    EXPECT_EQ(fired_at, std::chrono::nanoseconds(boundary))
        << "scheduled at " << scheduled_at.count() << "ns after start";
  }
  timer.stop();
}

TEST_P(HashedWheelTimerTest, WorkerThreadCarriesTheConfiguredName) {
  HashedWheelTimer timer(options_with(1ms, 512, "my-wheel-thread-name-is-long"));
  timer.start();
  // Linux keeps 15 characters of a thread name.
  EXPECT_TRUE(
      wait_until([] { return wheel::testing::find_thread("my-wheel-thread").has_value(); }));
}

// ---------------------------------------------------------------- 12. the executor

TEST_P(HashedWheelTimerTest, ExecutorReceivesExpiredTasksToRunElsewhere) {
  std::mutex mutex;
  std::vector<wheel::TimerJob> jobs;
  TimerOptions options = options_with(1ms);
  options.executor = [&](wheel::TimerJob job) {
    std::lock_guard lock(mutex);
    jobs.push_back(std::move(job));
  };
  HashedWheelTimer timer(options);
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  TimeoutHandle handle = timer.new_timeout(
      [&](Timeout& self) {
        ran_on = std::this_thread::get_id();
        EXPECT_TRUE(self.is_expired());
        ++runs;
      },
      1ms);
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return jobs.size() == 1;
  }));
  EXPECT_TRUE(handle->is_expired());
  EXPECT_EQ(runs, 0) << "the worker must hand the task over, not run it";
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  wheel::TimerJob job = std::move(jobs.front());
  EXPECT_EQ(job.timeout(), handle.get());
  job();
  job();  // a second call does nothing
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST_P(HashedWheelTimerTest, AJobDroppedUnrunDestroysItsTaskWithoutRunning) {
  std::atomic<int> handed{0};
  TimerOptions options = options_with(1ms);
  options.executor = [&](wheel::TimerJob) { ++handed; };  // drops every job
  HashedWheelTimer timer(options);
  auto witness = std::make_shared<int>(0);
  std::weak_ptr<int> weak = witness;
  std::atomic<bool> ran{false};
  timer.new_timeout([w = std::move(witness), &ran] { ran = true; }, 1ms);
  ASSERT_TRUE(wait_until([&] { return handed == 1; }));
  EXPECT_TRUE(wait_until([&] { return weak.expired(); }));
  EXPECT_FALSE(ran);
}

TEST_P(HashedWheelTimerTest, ThrowingExecutorDropsTheTaskLogsAndTheWorkerCarriesOn) {
  wheel::testing::LogCapture log;
  std::atomic<int> calls{0};
  TimerOptions options = options_with(1ms);
  options.executor = [&](wheel::TimerJob job) {
    if (calls++ == 0) throw std::runtime_error("queue full");
    job();
  };
  HashedWheelTimer timer(options);
  std::atomic<bool> first_ran{false};
  std::atomic<bool> second_ran{false};
  std::atomic<int> live{0};
  TimeoutHandle dropped = timer.new_timeout([&, t = Tracked(&live)] { first_ran = true; }, 1ms);
  ASSERT_TRUE(wait_until([&] { return calls == 1; }));
  timer.new_timeout([&] { second_ran = true; }, 1ms);
  ASSERT_TRUE(wait_until([&] { return second_ran.load(); }));
  timer.stop();
  EXPECT_EQ(log.count("queue full", spdlog::level::err), 1);
  // The documented outcome: the task is destroyed unrun and the timeout stays expired.
  EXPECT_FALSE(first_ran);
  EXPECT_EQ(live, 0);
  EXPECT_TRUE(dropped->is_expired());
  EXPECT_FALSE(dropped->is_cancelled());
  EXPECT_FALSE(dropped->cancel());
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

// ---------------------------------------------------------------- races

TEST_P(HashedWheelTimerTest, ManyThreadsScheduleAndCancelAndEveryTimeoutEndsOnce) {
  HashedWheelTimer timer(options_with(1ms, 64));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20'000;
  std::vector<std::vector<TimeoutHandle>> handles(kThreads);
  std::vector<std::vector<char>> cancelled(kThreads, std::vector<char>(kPerThread, 0));
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand random(t + 1);
      handles[t].reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) {
        handles[t].push_back(
            timer.new_timeout([&] { ++runs; }, std::chrono::microseconds(random() % 30'000)));
        if (random() % 2 == 0) {
          const int victim = static_cast<int>(random() % handles[t].size());
          cancelled[t][victim] |= handles[t][victim]->cancel();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  int expired = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const auto& handle = handles[t][i];
      ASSERT_NE(handle->is_expired(), handle->is_cancelled());
      ASSERT_EQ(handle->is_cancelled(), cancelled[t][i] != 0);
      expired += handle->is_expired();
    }
  }
  EXPECT_EQ(runs, expired);
}

TEST_P(HashedWheelTimerTest, CancelsRacingTheMoveIntoTheWheelAreEachRetiredOnce) {
  // cancel() links the timeout into the cancellation queue through the field that held its
  // deadline. The worker, moving that timeout into the wheel at the same moment, must not
  // write the deadline over the link: the queue would lose timeouts or lead into garbage.
  // Batches are cancelled a random moment after they were scheduled, so that some of the
  // sweeps run into the worker's transfer of that batch at a tick boundary.
  HashedWheelTimer timer(options_with(1ms));
  constexpr int kThreads = 2;
  constexpr int kRounds = 300;
  constexpr int kBatch = 2'000;
  std::atomic<int> runs{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand random(t + 7);
      std::vector<TimeoutHandle> batch;
      batch.reserve(kBatch);
      for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kBatch; ++i) batch.push_back(timer.new_timeout([&] { ++runs; }, 1h));
        std::this_thread::sleep_for(std::chrono::microseconds(random() % 1'000));
        for (auto& handle : batch) refused += handle->cancel() ? 0 : 1;
        batch.clear();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(refused, 0);
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  std::latch fired(1);
  timer.new_timeout([&] { fired.count_down(); }, 1ms);
  EXPECT_TRUE(wait_until([&] { return fired.try_wait(); })) << "the worker still runs timeouts";
  EXPECT_EQ(runs, 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, HashedWheelTimerTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

}  // namespace
