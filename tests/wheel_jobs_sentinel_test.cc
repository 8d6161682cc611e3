// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --store redis-sentinel://: a node on 1 primary, 1 replica and 3 real sentinels
// follows a failover by itself. A seeded workload of puts, reserves and deletes runs through the
// node while the primary is SIGKILLed; the node must serve again on the
// replica Sentinel promotes. With --store-replicas 1 nothing acknowledged may be lost: no
// acknowledged put vanishes, no acknowledged delete comes back, and no job is delivered after its
// delete was acknowledged. Waits are bounded in seconds; nothing is timed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/child_process.h"
#include "support/metrics_scrape.h"
#include "support/redis_sentinel.h"

namespace {

using std::chrono::milliseconds;
using wheel_test::Clock;

// The seed of the workload: WHEEL_TEST_SEED when set (to replay a failure), else fixed.
unsigned seed() {
  const char* text = std::getenv("WHEEL_TEST_SEED");
  return text != nullptr ? static_cast<unsigned>(std::strtoul(text, nullptr, 10)) : 32;
}

// A job as a client knows it: ids can be given out twice after a failover that lost the id
// counter's last steps, so a job is its id and its body (each body is unique).
using Job = std::pair<std::uint64_t, std::string>;

// What one client saw: every reply it got, in order, kept as the checks need it.
struct History {
  std::set<Job> acked_puts;
  std::map<Job, std::size_t> acked_deletes;             // -> step of the DELETED
  std::set<Job> maybe_deleted;                          // the delete's reply was INTERNAL_ERROR
  std::vector<std::pair<std::size_t, Job>> deliveries;  // (step, job)
  std::size_t internal_errors = 0;
  std::vector<std::string> unexpected;
};

// Puts (2 of 3 steps) and reserve-then-delete (1 of 3) on one connection until `stop`, each
// reply recorded; `acked` counts the acknowledged puts as they come.
void run_workload(int port, unsigned seed, std::atomic<bool>& stop, std::atomic<int>& acked,
                  History& h) {
  std::mt19937 rng(seed);
  wheel_test::Client c(port);
  for (std::size_t step = 0; !stop.load(); ++step) {
    if (rng() % 3 != 0) {
      const std::string body = "job-" + std::to_string(step) + "-" + std::to_string(rng() % 1000);
      const std::string reply = c.ask("put " + std::to_string(rng() % 4) + " 0 2 " +
                                      std::to_string(body.size()) + "\r\n" + body + "\r\n");
      if (reply.starts_with("INSERTED ")) {
        h.acked_puts.emplace(std::stoull(reply.substr(9)), body);
        acked.fetch_add(1);
      } else if (reply == "INTERNAL_ERROR") {
        ++h.internal_errors;
      } else {
        h.unexpected.push_back("put: " + reply);
        if (reply.empty()) return;  // the node closed us: nothing more to learn
      }
      continue;
    }
    const std::string reply = c.ask("reserve-with-timeout 0\r\n");
    if (reply.starts_with("RESERVED ")) {
      const Job job{std::stoull(reply.substr(9)), c.line()};
      h.deliveries.emplace_back(step, job);
      const std::string deleted = c.ask("delete " + std::to_string(job.first) + "\r\n");
      if (deleted == "DELETED") {
        h.acked_deletes[job] = step;
      } else if (deleted == "INTERNAL_ERROR") {
        h.maybe_deleted.insert(job);
      } else if (deleted != "NOT_FOUND") {  // NOT_FOUND: the lease ran out first (TTR 2 s)
        h.unexpected.push_back("delete: " + deleted);
      }
    } else if (reply == "INTERNAL_ERROR") {
      ++h.internal_errors;
    } else if (reply != "TIMED_OUT" && reply != "DEADLINE_SOON") {
      h.unexpected.push_back("reserve: " + reply);
      if (reply.empty()) return;
    }
  }
}

// Every job left, reserved and deleted until none is ready for 4 s (a TTR of 2 s brings back
// those the workload held when it stopped).
std::set<Job> drain(int port) {
  std::set<Job> jobs;
  wheel_test::Client c(port);
  for (int i = 0; i < 100'000; ++i) {
    const std::string reply = c.ask("reserve-with-timeout 4\r\n");
    if (!reply.starts_with("RESERVED ")) {
      EXPECT_EQ(reply, "TIMED_OUT");
      break;
    }
    const Job job{std::stoull(reply.substr(9)), c.line()};
    jobs.insert(job);
    EXPECT_EQ(c.ask("delete " + std::to_string(job.first) + "\r\n"), "DELETED");
  }
  return jobs;
}

std::unique_ptr<wheel_test::ServerProcess> start_node(const std::string& url,
                                                      std::vector<std::string> extra) {
  std::vector<std::string> args{WHEEL_JOBS_PATH, "--store", url, "--port", "0",
                                "--log-level",   "warn"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto node = std::make_unique<wheel_test::ServerProcess>(args);
  EXPECT_GT(node->port(), 0) << "wheel-jobs --store " << url << " did not start";
  return node;
}

// Kills the primary under the workload, waits for Sentinel's promotion, brings
// the old primary back (Sentinel makes it the new primary's replica, so WAIT 1 can succeed again)
// and waits for `more` puts acknowledged after the kill. Returns the workload's history.
History failover_under_load(wheel_test::SentinelGroup& group, int node_port, int more) {
  History h;
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::thread load(run_workload, node_port, seed(), std::ref(stop), std::ref(acked), std::ref(h));
  auto wait_acked = [&](int n, std::chrono::seconds bound) {
    const auto deadline = Clock::now() + bound;
    while (acked.load() < n && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    return acked.load() >= n;
  };
  EXPECT_TRUE(wait_acked(50, std::chrono::seconds(20))) << "no steady load before the kill";
  const int old_port = group.primary().port();
  group.primary().kill();
  const int at_kill = acked.load();
  const int promoted = group.wait_for_new_primary(old_port, std::chrono::seconds(30));
  EXPECT_EQ(promoted, group.replica(0).port());
  EXPECT_TRUE(group.primary().restart()) << "the old primary did not come back";
  EXPECT_TRUE(wait_acked(at_kill + more, std::chrono::seconds(40)))
      << "the node did not serve puts again after the failover (" << acked.load() - at_kill
      << " acknowledged since the kill)";
  stop = true;
  load.join();
  return h;
}

TEST(WheelJobsSentinel, ANodeFollowsAFailoverAndLosesNothingAcknowledgedWithStoreReplicas) {
  SCOPED_TRACE("seed " + std::to_string(seed()) + " (WHEEL_TEST_SEED replays it)");
  wheel_test::SentinelGroup group(1);
  ASSERT_TRUE(group.ready()) << "the sentinels did not see the replica and each other";
  const int metrics = wheel_test::free_port();
  auto node = start_node(group.url(), {"--store-replicas", "1", "--store-replica-timeout", "1s",
                                       "--metrics-port", std::to_string(metrics)});
  ASSERT_GT(node->port(), 0);
  const History h = failover_under_load(group, node->port(), 50);
  // /metrics tells the failover: one announcement, both connections moved by it.
  const wheel_test::Scrape s = wheel_test::scrape(static_cast<std::uint16_t>(metrics));
  EXPECT_EQ(s.e.value("wheel_jobs_redis_sentinel_switches_total", {}), 1);
  EXPECT_GE(s.e.value("wheel_jobs_redis_relocations_total", {{"connection", "commands"}}), 1);
  EXPECT_GE(s.e.value("wheel_jobs_redis_relocations_total", {{"connection", "events"}}), 1);
  EXPECT_GE(s.e.value("wheel_jobs_redis_sentinel_asks_total", {{"result", "ok"}}), 2);
  EXPECT_TRUE(h.unexpected.empty()) << h.unexpected.front();
  const std::set<Job> left = drain(node->port());
  std::vector<std::uint64_t> lost, back, late;
  for (const Job& job : h.acked_puts) {
    if (!left.contains(job) && !h.acked_deletes.contains(job) && !h.maybe_deleted.contains(job)) {
      lost.push_back(job.first);
    }
  }
  for (const auto& [job, step] : h.acked_deletes) {
    if (left.contains(job)) back.push_back(job.first);
  }
  for (const auto& [step, job] : h.deliveries) {
    const auto deleted = h.acked_deletes.find(job);
    if (deleted != h.acked_deletes.end() && step > deleted->second) late.push_back(job.first);
  }
  EXPECT_TRUE(lost.empty()) << lost.size() << " acknowledged puts lost, the first id "
                            << lost.front();
  EXPECT_TRUE(back.empty()) << back.size() << " acknowledged deletes came back, the first id "
                            << back.front();
  EXPECT_TRUE(late.empty()) << late.size() << " jobs delivered after their delete, the first id "
                            << late.front();
  EXPECT_GT(h.acked_deletes.size(), 0u);
}

// A sentinel with requirepass: a node without its password is told NOAUTH (logged and counted,
// so the operator sees why); with the password from the environment it serves.
TEST(WheelJobsSentinel, ASentinelThatWantsAPasswordGetsItFromTheEnvironment) {
  wheel_test::RedisServer primary;
  wheel_test::SentinelSettings settings;
  settings.quorum = 1;
  settings.password = "sentinel-s3cret";
  wheel_test::RedisSentinelProcess sentinel(primary.port(), settings);
  ASSERT_TRUE(sentinel.running());
  const std::string url =
      "redis-sentinel://127.0.0.1:" + std::to_string(sentinel.port()) + "#" + settings.master;
  const int metrics = wheel_test::free_port();
  {
    auto refused = start_node(
        url, {"--store-connect-timeout", "0", "--metrics-port", std::to_string(metrics)});
    ASSERT_GT(refused->port(), 0);
    wheel_test::Client c(refused->port());
    EXPECT_EQ(c.ask("put 0 0 10 1\r\nx\r\n"), "INTERNAL_ERROR");
    const wheel_test::Scrape s = wheel_test::scrape(static_cast<std::uint16_t>(metrics));
    EXPECT_GE(s.e.value("wheel_jobs_redis_errors_total", {{"cause", "noauth"}}), 1);
    EXPECT_GE(s.e.value("wheel_jobs_redis_sentinel_asks_total", {{"result", "failed"}}), 1);
    EXPECT_EQ(s.e.value("wheel_jobs_redis_sentinel_asks_total", {{"result", "ok"}}), 0);
  }
  setenv("WHEEL_JOBS_STORE_SENTINEL_PASSWORD", settings.password.c_str(), 1);
  auto node = start_node(url, {});
  unsetenv("WHEEL_JOBS_STORE_SENTINEL_PASSWORD");
  ASSERT_GT(node->port(), 0);
  wheel_test::Client c(node->port());
  EXPECT_TRUE(c.ask("put 0 0 10 1\r\nx\r\n").starts_with("INSERTED ")) << "no put served";
}

TEST(WheelJobsSentinel, TheStoreUrlAndTheSentinelPasswordAreCheckedBeforeStarting) {
  auto [status, out] =
      wheel_test::run_to_exit(WHEEL_JOBS_PATH, "--store 'redis-sentinel://:s3cret@127.0.0.1'");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store: the primary's name is missing: add #MASTER"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
  std::tie(status, out) = wheel_test::run_to_exit(
      WHEEL_JOBS_PATH, "--store redis://127.0.0.1:1 --store-sentinel-password p");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store-sentinel-password: needs --store redis-sentinel://"),
            std::string::npos)
      << out;
  // No sentinel answers: the node names the store (never a password) and exits 1.
  const int nobody = wheel_test::free_port();
  std::tie(status, out) = wheel_test::run_to_exit(
      WHEEL_JOBS_PATH, "--store 'redis-sentinel://:s3cret@127.0.0.1:" + std::to_string(nobody) +
                           "#wheel' --store-connect-timeout 1s --port 0");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("the store at redis-sentinel://127.0.0.1:" + std::to_string(nobody) +
                     "/0#wheel did not answer"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
}

}  // namespace
