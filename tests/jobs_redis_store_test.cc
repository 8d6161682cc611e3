// SPDX-License-Identifier: Apache-2.0
// RedisStore and RedisClient against a real redis-server (tests/support/redis_server.h): each
// command's script, the leases and fencing tokens, the client's fail-fast, timeout, reconnect and
// NOSCRIPT paths. The loop runs until each callback came, bounded.
#include <gtest/gtest.h>
#include <uv.h>

#include <optional>
#include <thread>

#include "support/redis_server.h"
#include "support/redis_store_fixture.h"
#include "wheel/jobs/fleet/redis_store.h"
#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {
namespace {

using std::chrono::milliseconds;
using wheel_test::Clock;
using wheel_test::redis_command;

TEST(RedisEndpointTest, ParsesHostPortAndDb) {
  EXPECT_EQ(parse_redis_url("redis://127.0.0.1:6380/2"),
            (RedisEndpoint{"127.0.0.1", 6380, 2, "", ""}));
  EXPECT_EQ(parse_redis_url("redis://cache"), (RedisEndpoint{"cache", 6379, 0, "", ""}));
  EXPECT_EQ(parse_redis_url("redis://[::1]:7000"), (RedisEndpoint{"::1", 7000, 0, "", ""}));
  EXPECT_EQ(parse_redis_url("redis://h:1/0"), (RedisEndpoint{"h", 1, 0, "", ""}));
  EXPECT_EQ(format_redis_url({"::1", 7000, 3, "", ""}), "redis://[::1]:7000/3");
}

TEST(RedisEndpointTest, RefusesWhatItCannotServeWithAReason) {
  std::string error;
  for (const char* bad : {"", "http://h:1", "rediss://h:1", "redis://", "redis://:6379",
                          "redis://h:", "redis://h:0", "redis://h:65536", "redis://h:12x",
                          "redis://h:1/-1", "redis://h:1/x", "redis://h:1/1000001", "redis://u@h:1",
                          "redis://h:1?db=2", "redis://[::1", "redis://[]:1", "redis://[::1]x"}) {
    error.clear();
    EXPECT_FALSE(parse_redis_url(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  parse_redis_url("redis://h:70000", &error);
  EXPECT_EQ(error, "port must be a whole number from 1 to 65535, got '70000'");
}

TEST_F(RedisStoreTest, PutReserveDeleteInPriorityThenIdOrder) {
  const auto a = put("q", 5, milliseconds(0), milliseconds(60'000), "a");
  const auto b = put("q", 1, milliseconds(0), milliseconds(60'000), "b");
  const auto c = put("q", 5, milliseconds(0), milliseconds(60'000), "c");
  ASSERT_EQ(a.status, StoreStatus::kOk);
  EXPECT_LT(a.id, b.id);
  EXPECT_LT(b.id, c.id);
  EXPECT_GT(a.now, 1'600'000'000'000);  // Redis's clock, ms since the epoch
  const auto r1 = reserve({"q"});
  const auto r2 = reserve({"q"});
  const auto r3 = reserve({"q"});
  ASSERT_EQ(r1.status, StoreStatus::kOk);
  EXPECT_EQ(r1.id, b.id);
  EXPECT_EQ(r1.body, "b");
  EXPECT_EQ(r1.tube, "q");
  EXPECT_EQ(r1.more, 2u);
  EXPECT_EQ(r2.id, a.id);  // same priority: lower id first
  EXPECT_EQ(r3.id, c.id);
  // From Redis's clock rounded up (now is truncated): 60 s, or 1 ms more.
  EXPECT_GE(r3.lease_end - r3.now, 60'000);
  EXPECT_LE(r3.lease_end - r3.now, 60'001);
  EXPECT_EQ(reserve({"q"}).status, StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) { store_->remove(b.id, r1.token, d); }).status, StoreStatus::kOk);
  EXPECT_EQ(change([&](auto d) { store_->remove(b.id, r1.token, d); }).status,
            StoreStatus::kNotFound);
  // A reserved job is deleted only with its lease's token: the job's reserve count, so its
  // first lease has token 1 and any other number is refused.
  EXPECT_EQ(r2.token, 1u);
  EXPECT_EQ(change([&](auto d) { store_->remove(a.id, 0, d); }).status, StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) { store_->remove(a.id, r2.token + 1, d); }).status,
            StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) { store_->remove(a.id, r2.token, d); }).status, StoreStatus::kOk);
}

TEST_F(RedisStoreTest, ReserveAcrossTubesSkipsPausedOnesAndSaysWhenToLookAgain) {
  put("a", 9, milliseconds(0), milliseconds(1000), "a");
  put("b", 3, milliseconds(0), milliseconds(1000), "b");
  const auto paused =
      change([&](auto d) { store_->pause_tube("b", milliseconds(30'000), false, d); });
  ASSERT_EQ(paused.status, StoreStatus::kOk);
  const auto r = reserve({"b", "a"});
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_EQ(r.body, "a");
  const auto none = reserve({"b"});
  EXPECT_EQ(none.status, StoreStatus::kNotFound);
  EXPECT_NEAR(static_cast<double>(none.next_due - none.now), 30'000.0, 1000.0);  // pause end
  EXPECT_EQ(change([&](auto d) { store_->pause_tube("b", milliseconds(0), false, d); }).status,
            StoreStatus::kOk);
  EXPECT_EQ(reserve({"b"}).body, "b");
  EXPECT_EQ(change([&](auto d) { store_->pause_tube("nope", milliseconds(1), false, d); }).status,
            StoreStatus::kNotFound);
}

TEST_F(RedisStoreTest, DelayedJobBecomesReadyOnRedisClockAndNextDueSaysWhen) {
  const auto p = put("d", 0, milliseconds(400), milliseconds(1000), "later");
  const auto early = reserve({"d"});
  ASSERT_EQ(early.status, StoreStatus::kNotFound);
  EXPECT_GE(early.next_due, p.now + 400);
  EXPECT_LE(early.next_due, p.now + 401);  // from Redis's clock rounded up
  EXPECT_EQ(job(p.id).stats.state, JobState::kDelayed);
  EXPECT_EQ(peek_tube("d", PeekWhich::kDelayed).id, p.id);
  ASSERT_TRUE(wait_state(p.id, JobState::kReady, std::chrono::seconds(10)));
  const auto r = reserve({"d"});
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_GE(r.now, p.now + 400);
}

// Redis's TIME rules the due times of a fleet: a delay, a release's delay, a pause, a lease (TTR)
// and a touch end no earlier than Redis's own clock, read in microseconds just before the
// command, plus the time asked. The scripts read TIME in whole milliseconds; a deadline started
// from the truncated reading ended up to 1 ms early.
TEST_F(RedisStoreTest, EveryDeadlineEndsNoEarlierThanRedisTimePlusItsLength) {
  auto redis_us = [&] {  // TIME: seconds, microseconds
    const std::string t = redis_command(redis_.port(), {"TIME"});
    return std::stoll(t.substr(0, t.find('\n'))) * 1'000'000 +
           std::stoll(t.substr(t.find('\n') + 1));
  };
  for (int i = 0; i < 20; ++i) {
    // A tube per deadline, so that each reserve's next_due is that deadline.
    const std::string n = std::to_string(i), delays = "d" + n, leases = "l" + n, pauses = "p" + n;
    std::int64_t before = redis_us();
    put(delays, 0, milliseconds(5), milliseconds(1000), "x");
    const auto delayed = reserve({delays});
    if (delayed.status == StoreStatus::kNotFound && delayed.next_known) {
      EXPECT_GE(delayed.next_due * 1000, before + 5'000) << "delay, try " << i;
    }

    put(leases, 0, milliseconds(0), milliseconds(1000), "y");
    before = redis_us();
    const auto leased = reserve({leases});
    ASSERT_EQ(leased.status, StoreStatus::kOk);
    EXPECT_GE(leased.lease_end * 1000, before + 1'000'000) << "ttr, try " << i;
    before = redis_us();
    const auto touched = change([&](auto d) { store_->touch(leased.id, leased.token, d); });
    ASSERT_EQ(touched.status, StoreStatus::kOk);
    EXPECT_GE(touched.value * 1000, before + 1'000'000) << "touch, try " << i;
    before = redis_us();
    ASSERT_EQ(change([&](auto d) {
                store_->release(leased.id, leased.token, std::nullopt, milliseconds(5), true, d);
              }).status,
              StoreStatus::kOk);
    const auto released = reserve({leases});
    if (released.status == StoreStatus::kNotFound && released.next_known) {
      EXPECT_GE(released.next_due * 1000, before + 5'000) << "release, try " << i;
    }

    put(pauses, 0, milliseconds(0), milliseconds(1000), "z");
    before = redis_us();
    ASSERT_EQ(change([&](auto d) { store_->pause_tube(pauses, milliseconds(5), false, d); }).status,
              StoreStatus::kOk);
    const auto paused = reserve({pauses});
    if (paused.status == StoreStatus::kNotFound && paused.next_known) {
      EXPECT_GE(paused.next_due * 1000, before + 5'000) << "pause, try " << i;
    }
  }
}

// list-tubes: the store's tubes in the order of their first put (each numbered at creation);
// tubes written before there were numbers (a set member without one) first, by name.
TEST_F(RedisStoreTest, TubesAreListedInCreationOrderOlderDataFirst) {
  for (const char* tube : {"c", "b", "a"}) put(tube, 0, milliseconds(0), milliseconds(1000), "x");
  put("b", 0, milliseconds(0), milliseconds(1000), "again");  // not new: keeps its place
  redis_command(redis_.port(), {"SADD", "t:tubes", "zz", "yy"});
  std::optional<TubeList> r;
  store_->list_tubes([&](TubeList&& v) { r = std::move(v); });
  const TubeList list = wait(r);
  ASSERT_EQ(list.status, StoreStatus::kOk);
  EXPECT_EQ(list.names, (std::vector<std::string>{"yy", "zz", "c", "b", "a"}));
}

TEST_F(RedisStoreTest, ALeaseThatRanOutIsFencedOffOnceAnotherHolderHasTheJob) {
  const auto p = put("f", 0, milliseconds(0), milliseconds(300), "x");
  const auto first = reserve({"f"});
  ASSERT_EQ(first.status, StoreStatus::kOk);
  ASSERT_TRUE(wait_state(p.id, JobState::kReady, std::chrono::seconds(10)));
  EXPECT_EQ(job(p.id).stats.timeouts, 1u);
  const auto second = reserve({"f"});
  ASSERT_EQ(second.status, StoreStatus::kOk);
  EXPECT_GT(second.token, first.token);
  // The first holder's token no longer works for anything.
  EXPECT_EQ(change([&](auto d) { store_->touch(p.id, first.token, d); }).status,
            StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) {
              store_->release(p.id, first.token, 1, milliseconds(0), true, d);
            }).status,
            StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) { store_->bury(p.id, first.token, 1, d); }).status,
            StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) { store_->remove(p.id, first.token, d); }).status,
            StoreStatus::kNotFound);
  // The second holder's does.
  const auto touched = change([&](auto d) { store_->touch(p.id, second.token, d); });
  ASSERT_EQ(touched.status, StoreStatus::kOk);
  EXPECT_GE(touched.value - touched.now, 300);  // from Redis's clock rounded up
  EXPECT_LE(touched.value - touched.now, 301);
  EXPECT_EQ(change([&](auto d) { store_->remove(p.id, second.token, d); }).status,
            StoreStatus::kOk);
}

TEST_F(RedisStoreTest, DeleteNeedsTheTokenOnlyWhileTheLeaseRunsAndDropsAnEmptiedTube) {
  const auto p = put("e", 0, milliseconds(0), milliseconds(300), "x");
  const auto held = reserve({"e"});
  ASSERT_EQ(held.status, StoreStatus::kOk);
  // While the lease runs, a delete needs its token: checked on a job leased for a minute, which
  // this thread cannot outlast as it could p's 300 ms.
  const auto q = put("e", 0, milliseconds(0), milliseconds(60'000), "y");
  const auto q_held = reserve({"e"});
  ASSERT_EQ(q_held.status, StoreStatus::kOk);
  ASSERT_EQ(q_held.id, q.id);
  EXPECT_EQ(change([&](auto d) { store_->remove(q.id, 0, d); }).status, StoreStatus::kNotFound);
  EXPECT_EQ(change([&](auto d) { store_->remove(q.id, q_held.token, d); }).status,
            StoreStatus::kOk);
  // Nothing looks at p until its lease ran out: the delete itself times the lease out
  // (counted), and then anyone may delete the ready job, as in beanstalkd.
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(change([&](auto d) { store_->remove(p.id, 0, d); }).status, StoreStatus::kOk);
  std::optional<StoreTotals> totals;
  store_->totals([&](StoreTotals&& t) { totals = std::move(t); });
  EXPECT_EQ(wait(totals).job_timeouts, 1u);
  // Its last job deleted, the tube is gone; a second tube with a job left stays.
  ASSERT_EQ(put("kept", 0, milliseconds(0), milliseconds(1000), "y").status, StoreStatus::kOk);
  EXPECT_EQ(redis_command(redis_.port(), {"SMEMBERS", "t:tubes"}), "kept");
  EXPECT_EQ(tube("e").status, StoreStatus::kNotFound);
}

TEST_F(RedisStoreTest, AClaimThatTakesTheLastReadyJobSaysWhenTheNextComesDue) {
  const auto a = put("n", 0, milliseconds(0), milliseconds(60'000), "a");
  put("n", 0, milliseconds(0), milliseconds(60'000), "b");
  const auto later = put("n", 0, milliseconds(5000), milliseconds(60'000), "c");
  const auto first = reserve({"n"});
  ASSERT_EQ(first.status, StoreStatus::kOk);
  EXPECT_EQ(first.id, a.id);
  EXPECT_EQ(first.more, 1u);
  EXPECT_FALSE(first.next_known);  // another is ready: nothing to wait for
  const auto second = reserve({"n"});
  ASSERT_EQ(second.status, StoreStatus::kOk);
  EXPECT_EQ(second.more, 0u);
  ASSERT_TRUE(second.next_known);
  // The delayed job, before either lease ends (from Redis's clock rounded up).
  EXPECT_GE(second.next_due, later.now + 5000);
  EXPECT_LE(second.next_due, later.now + 5001);
}

TEST_F(RedisStoreTest, ReleaseBuryKickAndCounters) {
  const auto p = put("k", 7, milliseconds(0), milliseconds(60'000), "body");
  auto r = reserve({"k"});
  ASSERT_EQ(
      change([&](auto d) { store_->release(p.id, r.token, 2, milliseconds(0), true, d); }).status,
      StoreStatus::kOk);
  EXPECT_EQ(job(p.id).stats.priority, 2u);
  r = reserve({"k"});
  ASSERT_EQ(change([&](auto d) { store_->bury(p.id, r.token, 4, d); }).status, StoreStatus::kOk);
  EXPECT_EQ(peek_tube("k", PeekWhich::kBuried).body, "body");
  EXPECT_EQ(reserve({"k"}).status, StoreStatus::kNotFound);
  EXPECT_EQ(tube("k").stats.buried, 1u);
  EXPECT_EQ(change([&](auto d) { store_->kick("k", 10, d); }).value, 1);
  EXPECT_EQ(change([&](auto d) { store_->kick("k", 10, d); }).value, 0);
  EXPECT_EQ(peek_tube("k", PeekWhich::kReady).id, p.id);
  r = reserve({"k"});
  ASSERT_EQ(change([&](auto d) {
              store_->release(p.id, r.token, std::nullopt, milliseconds(60'000), true, d);
            }).status,
            StoreStatus::kOk);
  const StoreJobInfo j = job(p.id);
  EXPECT_EQ(j.tube, "k");
  EXPECT_EQ(j.stats.state, JobState::kDelayed);
  EXPECT_EQ(j.stats.priority, 4u);  // nullopt kept the job's priority
  EXPECT_EQ(j.stats.reserves, 3u);
  EXPECT_EQ(j.stats.releases, 2u);
  EXPECT_EQ(j.stats.buries, 1u);
  EXPECT_EQ(j.stats.kicks, 1u);
  EXPECT_GT(j.stats.time_left.count(), 50'000);
  EXPECT_EQ(change([&](auto d) { store_->kick_job(p.id, d); }).status, StoreStatus::kOk);
  EXPECT_EQ(change([&](auto d) { store_->kick_job(p.id, d); }).status, StoreStatus::kNotFound);
  std::optional<StoreTotals> totals;
  store_->totals([&](StoreTotals&& t) { totals = std::move(t); });
  const StoreTotals t = wait(totals);
  EXPECT_EQ(t.ready, 1u);
  EXPECT_EQ(t.total_jobs, p.id);
}

// A kick of more than kMaxKickPerScript jobs runs script after script up to its bound, and every
// script keeps to the kind the first one picked: buried jobs that fill the first script's bound
// leave the delayed ones alone, as one beanstalkd kick does.
TEST_F(RedisStoreTest, ALargeKickRunsScriptAfterScriptAndKeepsToOneKind) {
  ASSERT_EQ(kMaxKickPerScript, 1000u);
  // Issues `n` calls of `call(done)` at once; runs the loop until all answered; returns the oks.
  auto all = [&](std::size_t n, auto&& call) {
    std::optional<std::size_t> total;
    std::size_t ok = 0, left = n;
    for (std::size_t i = 0; i < n; ++i) {
      call(i, [&](auto&& r) {
        ok += r.status == StoreStatus::kOk ? 1 : 0;
        if (--left == 0) total = ok;
      });
    }
    return wait(total);
  };
  auto put_n = [&](std::size_t n, milliseconds delay) {
    return all(n, [&](std::size_t, auto done) {
      store_->put("k", 0, delay, milliseconds(60'000), "x", std::move(done));
    });
  };
  ASSERT_EQ(put_n(1000, milliseconds(0)), 1000u);
  ASSERT_EQ(put_n(50, milliseconds(3'600'000)), 50u);
  std::vector<ClaimResult> held(1000);
  ASSERT_EQ(all(1000,
                [&](std::size_t i, auto done) {
                  store_->reserve({"k"}, [&held, i, done](ClaimResult&& r) {
                    held[i] = r;
                    done(std::move(r));
                  });
                }),
            1000u);
  ASSERT_EQ(
      all(1000, [&](std::size_t i,
                    auto done) { store_->bury(held[i].id, held[i].token, 0, std::move(done)); }),
      1000u);
  EXPECT_EQ(change([&](auto d) { store_->kick("k", 5000, d); }).value, 1000);
  TubeInfo t = tube("k");
  EXPECT_EQ(t.stats.ready, 1000u);
  EXPECT_EQ(t.stats.buried, 0u);
  EXPECT_EQ(t.stats.delayed, 50u);  // the second script looked for buried jobs only

  ASSERT_EQ(put_n(2450, milliseconds(3'600'000)), 2450u);
  EXPECT_EQ(change([&](auto d) { store_->kick("k", 2400, d); }).value, 2400);  // 3 scripts
  EXPECT_EQ(tube("k").stats.delayed, 100u);
  EXPECT_EQ(change([&](auto d) { store_->kick("k", 1000, d); }).value, 100);
  t = tube("k");
  EXPECT_EQ(t.stats.ready, 3500u);
  EXPECT_EQ(t.stats.delayed, 0u);
}

TEST_F(RedisStoreTest, ReserveJobTakesAnyUnreservedJob) {
  const auto p = put("j", 0, milliseconds(60'000), milliseconds(5000), "far");
  std::optional<ClaimResult> r;
  store_->reserve_job(p.id, [&](ClaimResult&& v) { r = std::move(v); });
  const ClaimResult c = wait(r);
  ASSERT_EQ(c.status, StoreStatus::kOk);
  EXPECT_EQ(c.body, "far");
  r.reset();
  store_->reserve_job(p.id, [&](ClaimResult&& v) { r = std::move(v); });
  EXPECT_EQ(wait(r).status, StoreStatus::kNotFound);  // already reserved
}

TEST_F(RedisStoreTest, ScanPromotesDueJobsAndReportsWaitingTubesAndTheFirstTimer) {
  const auto p = put("s", 0, milliseconds(200), milliseconds(5000), "x");
  const auto later = put("other", 0, milliseconds(60'000), milliseconds(5000), "y");
  std::this_thread::sleep_for(milliseconds(300));
  std::optional<ScanResult> r;
  store_->scan(100, {"s", "empty"}, [&](ScanResult&& v) { r = std::move(v); });
  const ScanResult s = wait(r);
  ASSERT_EQ(s.status, StoreStatus::kOk);
  ASSERT_EQ(s.tubes.size(), 2u);
  EXPECT_TRUE(s.tubes[0].ready);
  EXPECT_FALSE(s.tubes[1].ready);
  EXPECT_EQ(s.tubes[1].next_due, -1);
  // The fleet's first timer after the promotion: the other tube's job, a minute after its put.
  EXPECT_GE(s.first_timer, later.now + 60'000);
  EXPECT_LT(s.first_timer, s.now + 61'000);
  // Promoted by the scan itself: the job is in its tube's ready zset in Redis, not only in a
  // reply, and out of the delayed one (whose members carry the priority).
  EXPECT_EQ(redis_command(redis_.port(), {"ZSCORE", "t:t:s:r", RedisStore::member(p.id)}), "0");
  EXPECT_EQ(redis_command(redis_.port(), {"ZCARD", "t:t:s:d"}), "0");
}

// Delayed jobs that came due move to ready by their index entries alone (the delayed zset's
// member carries the priority): they are reserved by priority, read as ready, cannot be kicked,
// and a delete takes one before anyone reserved it. (Reading or kicking a job settles its
// record, so a, b and c are left alone until they are reserved.)
TEST_F(RedisStoreTest, DueDelayedJobsAreReadyInPriorityOrderWithoutARecordRewrite) {
  const auto a = put("q", 5, milliseconds(150), milliseconds(60'000), "a");
  const auto b = put("q", 1, milliseconds(150), milliseconds(60'000), "b");
  const auto c = put("q", 3, milliseconds(150), milliseconds(60'000), "c");
  const auto d = put("q", 4, milliseconds(150), milliseconds(60'000), "d");
  const auto e = put("q", 2, milliseconds(150), milliseconds(60'000), "e");
  const auto far = put("q", 0, milliseconds(60'000), milliseconds(60'000), "far");
  std::this_thread::sleep_for(milliseconds(400));
  std::optional<ScanResult> r;
  store_->scan(100, {"q"}, [&](ScanResult&& v) { r = std::move(v); });
  ASSERT_EQ(wait(r).status, StoreStatus::kOk);
  EXPECT_EQ(tube("q").stats.ready, 5u);
  EXPECT_EQ(tube("q").stats.delayed, 1u);
  ASSERT_EQ(change([&](auto done) { store_->remove(d.id, 0, done); }).status, StoreStatus::kOk);
  EXPECT_EQ(tube("q").stats.ready, 4u);
  EXPECT_EQ(job(e.id).stats.state, JobState::kReady);
  EXPECT_EQ(change([&](auto done) { store_->kick_job(e.id, done); }).status,
            StoreStatus::kNotFound);
  for (const auto& [want, body] : {std::pair{b.id, "b"}, {e.id, "e"}, {c.id, "c"}, {a.id, "a"}}) {
    const auto got = reserve({"q"});
    ASSERT_EQ(got.status, StoreStatus::kOk);
    EXPECT_EQ(got.id, want);
    EXPECT_EQ(got.body, body);
    EXPECT_EQ(job(want).stats.state, JobState::kReserved);
  }
  EXPECT_EQ(reserve({"q"}).status, StoreStatus::kNotFound);
  EXPECT_EQ(peek_tube("q", PeekWhich::kDelayed).id, far.id);
}

// A leaving node's leases, more than one script's worth: every held job ready again with its
// priority, none counted as a release; a stale token leaves its job with the new holder.
TEST_F(RedisStoreTest, GiveBackReleasesHeldJobsInBatchesGuardedByTokens) {
  const std::size_t n = kMaxGiveBackPerScript + 201;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> leases;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(put("g", 7, milliseconds(0), milliseconds(60'000), "x").status, StoreStatus::kOk);
    const auto c = reserve({"g"});
    ASSERT_EQ(c.status, StoreStatus::kOk);
    leases.emplace_back(c.id, c.token);
  }
  // The first job's lease passes to another holder (its token is then stale).
  const std::uint64_t passed = leases.front().first;
  ASSERT_EQ(change([&](auto d) {
              store_->release(passed, leases.front().second, 7, milliseconds(0), true, d);
            }).status,
            StoreStatus::kOk);
  const auto again = reserve({"g"});
  ASSERT_EQ(again.id, passed);
  const auto r = change([&](auto d) { store_->give_back(leases, d); });
  ASSERT_EQ(r.status, StoreStatus::kOk) << r.error;
  EXPECT_EQ(r.value, static_cast<std::int64_t>(n - 1));
  EXPECT_EQ(tube("g").stats.ready, n - 1);
  EXPECT_EQ(tube("g").stats.reserved, 1u);
  EXPECT_EQ(job(passed).stats.state, JobState::kReserved);
  const auto last = job(leases.back().first).stats;
  EXPECT_EQ(last.state, JobState::kReady);
  EXPECT_EQ(last.priority, 7u);
  EXPECT_EQ(last.releases, 0u);
  // Nothing to give back: still one answer.
  EXPECT_EQ(change([&](auto d) { store_->give_back({}, d); }).value, 0);
}

TEST_F(RedisStoreTest, NoScriptIsAnsweredByEval) {
  ASSERT_EQ(put("n", 0, milliseconds(0), milliseconds(1000), "1").status, StoreStatus::kOk);
  ASSERT_EQ(redis_command(redis_.port(), {"SCRIPT", "FLUSH"}), "OK");
  const auto again = put("n", 0, milliseconds(0), milliseconds(1000), "2");
  EXPECT_EQ(again.status, StoreStatus::kOk) << again.error;
  EXPECT_EQ(put("n", 0, milliseconds(0), milliseconds(1000), "3").status, StoreStatus::kOk);
}

TEST_F(RedisStoreTest, RedisDownFailsFastThenTheClientReconnects) {
  ASSERT_EQ(put("r", 0, milliseconds(0), milliseconds(1000), "before").status, StoreStatus::kOk);
  redis_.kill();
  const auto start = Clock::now();
  const auto failed = put("r", 0, milliseconds(0), milliseconds(1000), "during");
  EXPECT_EQ(failed.status, StoreStatus::kError);
  EXPECT_NE(failed.error.find("unavailable"), std::string::npos) << failed.error;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  ASSERT_TRUE(redis_.restart());
  const InsertResult after = put_once_back("r", "after");
  ASSERT_EQ(after.status, StoreStatus::kOk);
  EXPECT_EQ(after.id, 2u);  // the AOF kept job 1 and the id counter
  EXPECT_EQ(reserve({"r"}).body, "before");
  EXPECT_GE(client_->connects(), 2u);
}

TEST_F(RedisStoreTest, ARedisThatHangsTimesOutInsteadOfHanging) {
  redis_.pause();
  const auto start = Clock::now();
  const auto r = put("h", 0, milliseconds(0), milliseconds(1000), "x");
  redis_.resume();
  EXPECT_EQ(r.status, StoreStatus::kError);
  EXPECT_NE(r.error.find("timeout"), std::string::npos) << r.error;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  const InsertResult after = put_once_back("h", "y");
  EXPECT_EQ(after.status, StoreStatus::kOk);
}

}  // namespace
}  // namespace wheel::jobs
