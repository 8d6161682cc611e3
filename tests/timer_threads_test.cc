// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer from many threads at once, on the real worker: producers and cancellers
// racing each other, the worker's transfers and stop(). Each test asserts what must hold
// whatever the interleaving (every timeout ends once, counts exact, the limit never exceeded);
// the short random pauses only vary the interleavings. Waits are for events, generously bounded.
#include <atomic>
#include <chrono>
#include <latch>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>

#include "support/timer_fixture.h"
#include "support/timer_test_support.h"

// Inside wheel::testing, the timer's names and the fixture's helpers need no using-declarations.
namespace wheel::testing {
namespace {

using namespace std::chrono_literals;

class TimerThreadsTest : public TimerTest {};

TEST_P(TimerThreadsTest, NewTimeoutIsSafeFromManyThreads) {
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

TEST_P(TimerThreadsTest, ManyThreadsScheduleAndCancelAndEveryTimeoutEndsOnce) {
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

TEST_P(TimerThreadsTest, CancelsRacingTheMoveIntoTheWheelAreEachRetiredOnce) {
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

TEST_P(TimerThreadsTest, PendingIsExactAfterCancelsRaceTheirBucketsTick) {
  // netty#14959 on the real worker: cancels land while the worker visits their bucket. The
  // count must come back to exactly the number still scheduled (timer_cancel_test pins the
  // same-tick case on a manual clock).
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

TEST_P(TimerThreadsTest, MaxPendingHoldsUnderConcurrentProducers) {
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

TEST_P(TimerThreadsTest, MaxPendingReservationIsOneAtomicStepUnderContention) {
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

TEST_P(TimerThreadsTest, StopWhileOtherThreadsScheduleAndCancel) {
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

INSTANTIATE_TEST_SUITE_P(Layouts, TimerThreadsTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
