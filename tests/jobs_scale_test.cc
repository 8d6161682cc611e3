// SPDX-License-Identifier: Apache-2.0
// JobQueue (wheel/jobs/job_queue.h) at the sizes, in-process: 100,000 sessions blocked
// in reserve (state per waiter bounded, a put wakes exactly the first, timeouts end exactly the
// waits that had one, all at their millisecond) and 10,000 tubes (created on use, dropped when
// empty and unused). Memory is the heap's own count (mallinfo2), so the figures are per object
// whatever else the process holds. Time is moved by hand.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

// Bytes the heap has handed out and not had back; 0 when the allocator does not say (ASan).
std::size_t heap_in_use() {
  return mallinfo2().uordblks;
}

class Counter : public ReserveListener {
 public:
  void on_reserve_done(SessionId session, const ReserveResult& r) override {
    if (r.outcome == Outcome::kOk) served.push_back(session);
    if (r.outcome == Outcome::kTimedOut) timed_out.push_back(session);
    if (r.outcome != Outcome::kOk && r.outcome != Outcome::kTimedOut) other++;
  }
  std::vector<SessionId> served, timed_out;
  int other = 0;
};

constexpr int kWaiters = 100'000;
// What a blocked session may cost, all in: its Session, its entry in the tube's wait set, its
// reserve timeout on the wheel. Measured about 300 bytes (docs/wheel-jobs.md); this bound
// catches a per-waiter buffer or a copy of the tube list, not allocator noise.
constexpr std::size_t kMaxBytesPerWaiter = 1024;

TEST(JobQueueScaleTest, HundredThousandBlockedReservesBoundedOneWakesPerPutTimeoutsExact) {
  Counter events;
  JobQueue queue;
  queue.set_listener(&events);
  const SessionId producer = queue.open_session();
  std::vector<SessionId> waiters;
  waiters.reserve(kWaiters);
  const std::size_t before = heap_in_use();
  for (int i = 0; i < kWaiters; ++i) {
    const SessionId s = queue.open_session();
    waiters.push_back(s);
    // Every other one waits at most 5 s; the rest wait for ever.
    const std::optional<Millis> timeout = i % 2 == 0 ? std::optional<Millis>(5000ms) : std::nullopt;
    ASSERT_EQ(queue.reserve(s, timeout).outcome, Outcome::kWaiting);
  }
  const std::size_t after = heap_in_use();
  EXPECT_EQ(queue.counters().waiting, static_cast<std::uint64_t>(kWaiters));
  EXPECT_EQ(queue.tube_stats("default")->waiting, static_cast<std::uint64_t>(kWaiters));
  if (before != 0 && after > before) {
    const std::size_t per_waiter = (after - before) / kWaiters;
    std::printf("heap per blocked session: %zu bytes\n", per_waiter);
    ::testing::Test::RecordProperty("heap_bytes_per_blocked_session", std::to_string(per_waiter));
    EXPECT_LE(per_waiter, kMaxBytesPerWaiter);
  }

  // One put wakes exactly one: the first to wait.
  ASSERT_EQ(queue.put(producer, 0, 0ms, 86400s, "job").outcome, Outcome::kOk);
  ASSERT_EQ(events.served.size(), 1u);
  EXPECT_EQ(events.served[0], waiters[0]);
  EXPECT_EQ(queue.counters().waiting, static_cast<std::uint64_t>(kWaiters - 1));

  // The timeouts end at their millisecond, each once; the waits without one go on.
  queue.advance(4999ms);
  EXPECT_TRUE(events.timed_out.empty());
  queue.advance(5000ms);
  EXPECT_EQ(events.timed_out.size(), static_cast<std::size_t>(kWaiters / 2 - 1));
  EXPECT_EQ(events.other, 0);
  for (SessionId s : events.timed_out) EXPECT_EQ((s - waiters[0]) % 2, 0u) << s;
  EXPECT_EQ(queue.counters().waiting, static_cast<std::uint64_t>(kWaiters / 2));
  queue.advance(3'600'000ms);
  EXPECT_EQ(queue.counters().waiting, static_cast<std::uint64_t>(kWaiters / 2));

  // A second put goes to the oldest waiter left (waiters[1]: the first without a timeout).
  ASSERT_EQ(queue.put(producer, 0, 0ms, 86400s, "job").outcome, Outcome::kOk);
  ASSERT_EQ(events.served.size(), 2u);
  EXPECT_EQ(events.served[1], waiters[1]);

  for (SessionId s : waiters) queue.close_session(s);
  EXPECT_EQ(queue.counters().waiting, 0u);
  EXPECT_EQ(queue.counters().sessions, 1u);
  EXPECT_EQ(queue.counters().reserved, 0u);  // their jobs went back to ready
  EXPECT_EQ(queue.counters().ready, 2u);
}

TEST(JobQueueScaleTest, TenThousandTubesComeAndGoWithTheirJobs) {
  JobQueue queue;
  const SessionId s = queue.open_session();
  const std::size_t before = heap_in_use();
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_EQ(queue.use(s, "tube-" + std::to_string(i)), Outcome::kOk);
    ids.push_back(queue.put(s, 0, 0ms, 60s, "x").id);
  }
  ASSERT_EQ(queue.use(s, "default"), Outcome::kOk);
  const std::size_t after = heap_in_use();
  EXPECT_EQ(queue.counters().tubes, 10'001u);
  EXPECT_EQ(queue.tube_names().size(), 10'001u);
  EXPECT_EQ(queue.tube_stats("tube-9999")->ready, 1u);
  if (before != 0 && after > before) {
    const std::size_t per_tube = (after - before) / 10'000;  // a tube and its one job
    std::printf("heap per tube with one job: %zu bytes\n", per_tube);
    ::testing::Test::RecordProperty("heap_bytes_per_tube_with_a_job", std::to_string(per_tube));
    EXPECT_LE(per_tube, 2048u);
  }
  for (std::uint64_t id : ids) ASSERT_EQ(queue.remove(s, id), Outcome::kOk);
  EXPECT_EQ(queue.counters().tubes, 1u);  // empty and unused: dropped
}

TEST(JobQueueScaleTest, TheTubeLimitAnswersOutOfMemoryAndNothingElseChanges) {
  JobQueueLimits limits;
  limits.max_tubes = 10'000;
  JobQueue queue(limits);
  const SessionId s = queue.open_session();
  for (int i = 1; i < 10'000; ++i) {  // "default" is the first
    ASSERT_EQ(queue.use(s, "t" + std::to_string(i)), Outcome::kOk) << i;
    ASSERT_EQ(queue.put(s, 0, 0ms, 60s, "x").outcome, Outcome::kOk);
  }
  EXPECT_EQ(queue.use(s, "one-too-many"), Outcome::kOutOfMemory);
  EXPECT_EQ(queue.watch(s, "one-too-many"), Outcome::kOutOfMemory);
  EXPECT_EQ(queue.counters().tubes, 10'000u);
  EXPECT_EQ(queue.session(s)->used->name(), "t9999");
}

}  // namespace
}  // namespace wheel::jobs
