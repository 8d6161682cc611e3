// SPDX-License-Identifier: Apache-2.0
// The store's group commit (redis_batches.h) on a real redis-server: puts, deletes and claims of
// one tube issued together ride one script per kind per round trip, each costing Redis a fixed
// number of commands for the whole batch (counted by INFO commandstats), and every request still
// gets its own, right result.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/redis_store_fixture.h"
#include "wheel/jobs/fleet/redis_script_limits.h"
#include "wheel/jobs/fleet/redis_store.h"

namespace wheel::jobs {
namespace {

// Calls of one command so far (INFO commandstats counts the commands a script calls too).
long long calls(int port, const std::string& command) {
  const std::string info = wheel_test::redis_command(port, {"INFO", "commandstats"});
  const std::string key = "cmdstat_" + command + ":calls=";
  const std::size_t at = info.find(key);
  return at == std::string::npos ? 0 : std::atoll(info.c_str() + at + key.size());
}

// Runs the loop until every slot is filled (at most 10 s).
template <class R>
bool wait_all(uv_loop_t* loop, std::vector<std::optional<R>>& slots) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  auto all = [&] {
    for (const auto& s : slots) {
      if (!s) return false;
    }
    return true;
  };
  while (!all() && Clock::now() < deadline) {
    uv_run(loop, UV_RUN_NOWAIT);
    std::this_thread::sleep_for(milliseconds(1));
  }
  return all();
}

class RedisBatchTest : public RedisStoreTest {
 protected:
  // Scripts run so far (EVALSHA, or EVAL before a script is loaded).
  long long scripts() { return calls(redis_.port(), "evalsha") + calls(redis_.port(), "eval"); }
};

TEST_F(RedisBatchTest, PutsIssuedTogetherRideOneScriptPerRoundTripWithIdsInIssueOrder) {
  put("q", 0, milliseconds(0), milliseconds(1000), "warm-up");  // the scripts are loaded
  const long long scripts_before = scripts();
  const long long hsets_before = calls(redis_.port(), "hset");
  const long long zadds_before = calls(redis_.port(), "zadd");
  const std::size_t n = kMaxBatchPerScript + 44;
  std::vector<std::optional<InsertResult>> got(n);
  for (std::size_t i = 0; i < n; ++i) {
    // delayed and ready ones, in two tubes
    const auto delay = milliseconds(i % 2 == 0 ? 60'000 : 0);
    store_->put(i % 3 == 0 ? "a" : "b", 7, delay, milliseconds(1000), "body" + std::to_string(i),
                [&got, i](InsertResult&& r) { got[i] = std::move(r); });
  }
  ASSERT_TRUE(wait_all(&loop_, got));
  // Issued in one loop turn, they go together at its end: one full batch (kMaxBatchPerScript),
  // then the rest once it returned.
  const long long batches = 2;
  static_assert(kMaxBatchesInFlight == 1, "with more in flight the rest need not wait");
  EXPECT_EQ(scripts() - scripts_before, batches);
  // One HSET per batch, and one per tube made by it (its creation number, list-tubes' order):
  // "a" and "b" are new.
  EXPECT_EQ(calls(redis_.port(), "hset") - hsets_before, batches + 2);
  // per batch at most: per tube a ready zset, its ready times (the web console's oldest ready
  // age) and a delayed zset, and each tube's due time
  EXPECT_LE(calls(redis_.port(), "zadd") - zadds_before, batches * 8);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i]->status, StoreStatus::kOk) << i;
    if (i > 0) {
      EXPECT_EQ(got[i]->id, got[i - 1]->id + 1) << i;  // issue order: FIFO kept
    }
  }
  // Each job is whole: its body, tube and state.
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, n - 1}) {
    const StoreJobInfo j = job(got[i]->id);
    ASSERT_EQ(j.status, StoreStatus::kOk);
    EXPECT_EQ(j.tube, i % 3 == 0 ? "a" : "b");
    EXPECT_EQ(j.stats.state, i % 2 == 0 ? JobState::kDelayed : JobState::kReady);
  }
  EXPECT_EQ(tube("a").stats.total_jobs, (n + 2) / 3);
}

TEST_F(RedisBatchTest, ClaimsAndDeletesIssuedTogetherEachGetTheirOwnResult) {
  const std::size_t n = 100;
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < n; ++i) {
    // priorities 2, 1, 0, 2, ...: the claims must come out by (priority, id)
    ids.push_back(put("q", static_cast<std::uint32_t>(2 - i % 3), milliseconds(0),
                      milliseconds(60'000), "j" + std::to_string(i))
                      .id);
  }
  const long long scripts_before = scripts();
  const long long pops_before = calls(redis_.port(), "zpopmin");
  const std::size_t k = n + 5;  // five find nothing
  std::vector<std::optional<ClaimResult>> claims(k);
  for (std::size_t i = 0; i < k; ++i) {
    store_->reserve({"q"}, [&claims, i](ClaimResult&& r) { claims[i] = std::move(r); });
  }
  ASSERT_TRUE(wait_all(&loop_, claims));
  // issued in one loop turn: all of them in one script (none goes ahead alone)
  const long long batches = 1;
  EXPECT_EQ(scripts() - scripts_before, batches);
  EXPECT_EQ(calls(redis_.port(), "zpopmin") - pops_before, batches);
  std::vector<std::uint64_t> expected;
  for (int pri = 0; pri <= 2; ++pri) {
    for (std::size_t i = 0; i < n; ++i) {
      if (2 - static_cast<int>(i % 3) == pri) expected.push_back(ids[i]);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(claims[i]->status, StoreStatus::kOk) << i;
    EXPECT_EQ(claims[i]->id, expected[i]) << i;
    EXPECT_EQ(claims[i]->token, 1u);
    EXPECT_EQ(claims[i]->tube, "q");
  }
  for (std::size_t i = n; i < k; ++i) {
    EXPECT_EQ(claims[i]->status, StoreStatus::kNotFound);
    EXPECT_TRUE(claims[i]->next_known);
    EXPECT_GE(claims[i]->next_due, claims[i]->now + 59'000);  // the first lease's end
  }
  // Deletes together: every holder's, then the first job again (gone) and one with a stale
  // token, in the same batch.
  std::vector<std::optional<ChangeResult>> deleted(n + 2);
  auto remove = [&](std::size_t slot, std::uint64_t id, std::uint64_t token) {
    store_->remove(id, token, [&deleted, slot](ChangeResult&& r) { deleted[slot] = std::move(r); });
  };
  const long long deletes_before = scripts();
  remove(0, claims[0]->id, claims[0]->token);
  remove(1, claims[1]->id, claims[1]->token + 1);  // a stale token: refused
  for (std::size_t i = 1; i < n; ++i) remove(i + 1, claims[i]->id, claims[i]->token);
  remove(n + 1, claims[0]->id, claims[0]->token);  // deleted already
  ASSERT_TRUE(wait_all(&loop_, deleted));
  EXPECT_EQ(scripts() - deletes_before, batches);
  for (std::size_t i = 0; i < n + 2; ++i) {
    const bool ok = i != 1 && i != n + 1;
    EXPECT_EQ(deleted[i]->status, ok ? StoreStatus::kOk : StoreStatus::kNotFound) << i;
  }
  // Every job deleted once: deletes = puts, so the tube was dropped, and no record is left.
  EXPECT_EQ(tube("q").status, StoreStatus::kNotFound);
  EXPECT_EQ(wheel_test::redis_command(redis_.port(), {"HLEN", "t:j"}), "0");
}

}  // namespace
}  // namespace wheel::jobs
