// SPDX-License-Identifier: Apache-2.0
// A RedisStore on its own loop against a real redis-server (AOF always, free port, temporary
// directory), with blocking helpers that run the loop until each callback came (at most 10 s).
// Shared by the store's tests (jobs_redis_store_test.cc, jobs_redis_batch_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_server.h"
#include "wheel/jobs/fleet/redis_store.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

using std::chrono::milliseconds;
using wheel_test::Clock;

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis_.running());
    uv_loop_init(&loop_);
    RedisEndpoint endpoint;
    endpoint.host = "127.0.0.1";
    endpoint.port = static_cast<std::uint16_t>(redis_.port());
    connect(endpoint);
  }
  // The tests' client settings. Generous: an fsync of the AOF (appendfsync always) stalls for
  // hundreds of ms on a loaded machine; the hang test still ends in seconds.
  static RedisClientOptions test_options() {
    RedisClientOptions o;
    o.command_timeout = milliseconds(2000);
    o.min_backoff = milliseconds(20);
    o.max_backoff = milliseconds(200);
    return o;
  }
  // The store on a new client to `endpoint` (the test's Redis) with `o`'s other settings, the
  // old one stopped first.
  void connect(const RedisEndpoint& endpoint, RedisClientOptions o = test_options()) {
    if (client_) {
      client_->stop();
      uv_run(&loop_, UV_RUN_DEFAULT);
      store_.reset();
      client_.reset();
    }
    o.endpoint = endpoint;
    client_.emplace(&loop_, o);
    store_.emplace(*client_, RedisStoreOptions{"t:"});
    client_->start();
  }
  void TearDown() override {
    client_->stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    store_.reset();
    client_.reset();
    uv_loop_close(&loop_);
  }

  // Runs the loop until `done` is set (at most 10 s).
  template <class R>
  R wait(std::optional<R>& slot) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!slot && Clock::now() < deadline) uv_run(&loop_, UV_RUN_NOWAIT), nap();
    EXPECT_TRUE(slot.has_value()) << "no reply in 10 s";
    return slot ? std::move(*slot) : R{};
  }
  static void nap() { std::this_thread::sleep_for(milliseconds(1)); }

  InsertResult put(std::string tube, std::uint32_t pri, milliseconds delay, milliseconds ttr,
                   std::string body) {
    std::optional<InsertResult> r;
    store_->put(tube, pri, delay, ttr, body, [&](InsertResult&& v) { r = std::move(v); });
    return wait(r);
  }
  // Puts until Redis answers again (at most 10 s): the client reconnects after a failure.
  InsertResult put_once_back(std::string tube, std::string body) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    InsertResult r;
    do {
      r = put(tube, 0, milliseconds(0), milliseconds(1000), body);
    } while (r.status != StoreStatus::kOk && Clock::now() < deadline);
    return r;
  }
  ClaimResult reserve(std::vector<std::string> tubes) {
    std::optional<ClaimResult> r;
    store_->reserve(tubes, [&](ClaimResult&& v) { r = std::move(v); });
    return wait(r);
  }
  template <class F>
  ChangeResult change(F&& call) {
    std::optional<ChangeResult> r;
    call([&](ChangeResult&& v) { r = std::move(v); });
    return wait(r);
  }
  StoreJobInfo job(std::uint64_t id) {
    std::optional<StoreJobInfo> r;
    store_->job_stats(id, [&](StoreJobInfo&& v) { r = std::move(v); });
    return wait(r);
  }
  PeekResult peek_tube(std::string tube, PeekWhich which) {
    std::optional<PeekResult> r;
    store_->peek_tube(tube, which, [&](PeekResult&& v) { r = std::move(v); });
    return wait(r);
  }
  TubeInfo tube(std::string name) {
    std::optional<TubeInfo> r;
    store_->tube_stats(name, false, [&](TubeInfo&& v) { r = std::move(v); });
    return wait(r);
  }
  // Waits (bounded) until job `id` is in `state` on Redis's own clock.
  bool wait_state(std::uint64_t id, JobState state, std::chrono::seconds bound) {
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      StoreJobInfo j = job(id);
      if (j.status == StoreStatus::kOk && j.stats.state == state) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  wheel_test::RedisServer redis_;
  uv_loop_t loop_{};
  std::optional<RedisClient> client_;
  std::optional<RedisStore> store_;
};

}  // namespace wheel::jobs
