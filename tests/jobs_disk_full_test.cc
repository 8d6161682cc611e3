// SPDX-License-Identifier: Apache-2.0
// A full disk: changes are refused with LogError::kDiskFull and not applied, deletes keep
// working from the reserve, nothing acknowledged is lost, and writes resume when space returns,
// also when the space comes from deletes (compaction on a full disk, docs/jobs.md's bound).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
  JobLogOptions options() { return testing::log_options(fs_, 8192, 4096); }
  FaultInjectionFs fs_;
};

TEST_F(DiskFullTest, RefusesChangesKeepsDeletesAndResumes) {
  fs_.set_capacity(64 * 1024);
  std::map<std::uint64_t, std::string> acked;
  Recovered r;
  std::string error;
  auto log = JobLog::open(options(), &r, &error);
  ASSERT_TRUE(log) << error;
  std::error_code ec;
  JobLog::Lsn lsn = 0;
  for (int i = 0; i < 10000 && !ec; ++i) {
    PutRecord job;
    ec = log->allocate_id(&job.id);
    if (ec) break;
    job.body = "job " + std::to_string(i) + std::string(100, '.');
    ec = log->put(job, &lsn);
    log->commit();
    if (!ec) {
      ASSERT_GE(log->durable_lsn(), lsn);
      acked[job.id] = job.body;
    }
  }
  ASSERT_EQ(ec, LogError::kDiskFull) << ec.message();
  EXPECT_TRUE(log->disk_full());
  EXPECT_TRUE(log->stats().disk_full);
  EXPECT_GT(acked.size(), 100u);

  // Refused: new jobs and changes. Still served: deletes, from the reserve.
  PutRecord extra;
  if (!log->allocate_id(&extra.id)) {
    EXPECT_EQ(log->put(extra, &lsn), LogError::kDiskFull);
  }
  EXPECT_EQ(log->change({acked.begin()->first, StoredState::kBuried, 1, 0, {}}, &lsn),
            LogError::kDiskFull);
  for (int i = 0; i < 20; ++i) {
    const auto id = acked.begin()->first;
    ASSERT_FALSE(log->remove(id, &lsn)) << "delete " << i;
    log->commit();
    ASSERT_GE(log->durable_lsn(), lsn);
    acked.erase(id);
  }

  // Space comes back: after the next check, changes are accepted again.
  fs_.set_capacity(UINT64_MAX);
  log->poll(10'000);
  EXPECT_FALSE(log->disk_full());
  PutRecord after;
  ASSERT_FALSE(log->allocate_id(&after.id));
  after.body = "after";
  ASSERT_FALSE(log->put(after, &lsn));
  log->commit();
  acked[after.id] = after.body;
  ASSERT_FALSE(log->change({after.id, StoredState::kBuried, 1, 0, {}}, &lsn));
  log->commit();
  log.reset();

  // Nothing acknowledged lost, nothing refused applied, no half record left behind.
  log = JobLog::open(options(), &r, &error);
  ASSERT_TRUE(log) << error;
  EXPECT_EQ(r.torn_bytes, 0u);
  std::map<std::uint64_t, std::string> found;
  for (const auto& job : r.jobs) found[job.id] = job.body;
  EXPECT_EQ(found, acked);
  EXPECT_EQ(r.jobs.back().state, StoredState::kBuried);
  EXPECT_EQ(r.jobs.front().state, StoredState::kReady);  // the refused bury was not applied
}

TEST_F(DiskFullTest, StaysFullUntilTheReserveFitsAgain) {
  fs_.set_capacity(20 * 1024);
  Recovered r;
  std::string error;
  auto log = JobLog::open(options(), &r, &error);
  ASSERT_TRUE(log) << error;
  JobLog::Lsn lsn = 0;
  std::error_code ec;
  while (!ec) {
    PutRecord job;
    if ((ec = log->allocate_id(&job.id))) break;
    job.body = std::string(200, 'f');
    ec = log->put(job, &lsn);
  }
  ASSERT_TRUE(log->disk_full());
  log->poll(1'000'000);
  EXPECT_TRUE(log->disk_full()) << "no space came back";
  fs_.set_capacity(UINT64_MAX);
  log->poll(1'000'100);  // checked at most once a second
  EXPECT_TRUE(log->disk_full());
  log->poll(1'001'000);
  EXPECT_FALSE(log->disk_full());
}

// Compaction on a full disk (job_log_space.cc): segments of 128 KiB, a 64 KiB reserve.
class FullDiskCompactionTest : public DiskFullTest {
 protected:
  static constexpr std::uint64_t kSegment = 128 * 1024;
  static constexpr std::uint64_t kReserve = 64 * 1024;
  static constexpr std::uint64_t kDeleteRecord = 17;  // header + id
  static constexpr std::uint64_t kSlack = 16 * 1024;  // the room a rewrite leaves beyond itself

  struct Model {
    std::map<std::uint64_t, std::string> bodies;
    std::map<std::uint64_t, StoredState> states;
  };

  FaultInjectionFs& fs() { return *fs_ptr_; }
  JobLogOptions spacious() { return testing::log_options(fs(), kSegment, kReserve); }

  // Puts a job of `body_bytes` bytes; false when refused (disk full).
  bool put(JobLog& log, Model& m, std::size_t body_bytes) {
    PutRecord job;
    if (log.allocate_id(&job.id)) return false;
    job.body = "job " + std::to_string(job.id) + " " + std::string(body_bytes, 'b');
    JobLog::Lsn lsn = 0;
    if (log.put(job, &lsn)) return false;
    log.commit();
    EXPECT_GE(log.durable_lsn(), lsn);
    m.bodies[job.id] = job.body;
    m.states[job.id] = StoredState::kReady;
    return true;
  }
  void remove(JobLog& log, Model& m, std::uint64_t id) {
    JobLog::Lsn lsn = 0;
    ASSERT_FALSE(log.remove(id, &lsn)) << "delete " << id;
    log.commit();
    ASSERT_GE(log.durable_lsn(), lsn);
    m.bodies.erase(id);
    m.states.erase(id);
  }
  // Polls (a second apart) until the disk is no longer full; false after `polls`.
  bool poll_until_room(JobLog& log, int polls = 50) {
    for (int i = 0; i < polls && log.disk_full(); ++i) log.poll(now_ += 1000);
    return !log.disk_full();
  }
  // Reopens the log and checks it holds exactly the model (`torn`: after a power loss, the
  // head's unsynced tail may be cut).
  void expect_replays_to(const Model& m, bool torn = false) {
    Recovered r;
    auto log = testing::open_log(spacious(), &r);
    ASSERT_TRUE(log);
    if (!torn) {
      EXPECT_EQ(r.torn_bytes, 0u);
    }
    Model found;
    for (const auto& job : r.jobs) {
      found.bodies[job.id] = job.body;
      found.states[job.id] = job.state;
    }
    EXPECT_TRUE(found.bodies == m.bodies) << describe(found, m);
    EXPECT_TRUE(found.states == m.states) << describe(found, m);
  }
  // The first job the two disagree on (the maps are too large to print).
  static std::string describe(const Model& found, const Model& want) {
    for (const auto& [id, state] : want.states) {
      auto it = found.states.find(id);
      if (it == found.states.end()) return "job " + std::to_string(id) + " lost";
      if (it->second != state) return "job " + std::to_string(id) + " in another state";
      if (found.bodies.at(id) != want.bodies.at(id)) return "job " + std::to_string(id) + " body";
    }
    for (const auto& [id, state] : found.states) {
      if (!want.states.contains(id)) return "job " + std::to_string(id) + " back after its delete";
    }
    return "";
  }
  // The log's byte count is what its segment files hold.
  void expect_sizes_match(JobLog& log) {
    log.commit();
    std::vector<std::string> names;
    fs().list("/log", &names);
    std::uint64_t on_disk = 0;
    for (const auto& n : names) {
      if (n.ends_with(".wjl")) on_disk += fs().contents("/log/" + n).size();
    }
    EXPECT_EQ(on_disk, log.stats().total_bytes);
  }

  std::unique_ptr<FaultInjectionFs> fs_ptr_ = std::make_unique<FaultInjectionFs>();
  std::uint64_t now_ = 0;
};

// docs/jobs.md: with n closed segments when the disk filled and D bytes of delete records since,
// puts resume once live <= n * (reserve - D - 16 KiB), without a restart.
TEST_F(FullDiskCompactionTest, RandomDeletesDownToTheBoundGiveRoomBack) {
  fs().set_capacity(4 << 20);
  Recovered r;
  auto log = testing::open_log(spacious(), &r);
  ASSERT_TRUE(log);
  Model m;
  while (put(*log, m, 4000)) {
  }
  ASSERT_TRUE(log->disk_full());
  const std::uint64_t closed = log->stats().segments - 1;
  ASSERT_GE(closed, 25u);
  std::vector<std::uint64_t> ids;
  for (const auto& [id, body] : m.bodies) ids.push_back(id);
  std::mt19937_64 rng(36);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::uint64_t deletes = 0;
  auto bound = [&] {
    const std::uint64_t used = kDeleteRecord * deletes + kSlack;
    return kReserve > used ? closed * (kReserve - used) : 0;
  };
  std::uint64_t resumed_at = 0;  // deletes after which the disk was no longer full
  for (std::uint64_t id : ids) {
    if (log->stats().live_bytes <= bound()) break;
    remove(*log, m, id);
    ++deletes;
    log->poll(now_ += 10);  // as the server does after each sync
    if (resumed_at == 0 && !log->disk_full()) resumed_at = deletes;
  }
  ASSERT_LT(deletes, ids.size() * 9 / 10) << "the bound needs 90 % deleted: a weak test";
  EXPECT_TRUE(poll_until_room(*log)) << deletes << " of " << ids.size() << " deleted, live "
                                     << log->stats().live_bytes << ", bound " << bound();
  std::printf("puts resumed after %.1f %% of the jobs were deleted (bound: %.1f %%)\n",
              100.0 * static_cast<double>(resumed_at ? resumed_at : deletes) /
                  static_cast<double>(ids.size()),
              100.0 * static_cast<double>(deletes) / static_cast<double>(ids.size()));
  EXPECT_GT(log->stats().compacted_segments, 0u);
  ASSERT_TRUE(put(*log, m, 4000)) << "puts still refused";
  expect_sizes_match(*log);
  log.reset();
  expect_replays_to(m);
}

// Oldest-first deletes: once the oldest segment is dead it goes at once, whatever the log's
// bound says (before, only past 1.5x live + 2 segments).
TEST_F(FullDiskCompactionTest, OldestFirstDeletesGiveRoomBackAfterOneSegment) {
  fs().set_capacity(4 << 20);
  Recovered r;
  auto log = testing::open_log(spacious(), &r);
  ASSERT_TRUE(log);
  Model m;
  while (put(*log, m, 4000)) {
  }
  ASSERT_TRUE(log->disk_full());
  const std::size_t jobs = m.bodies.size();
  std::uint64_t deletes = 0;
  while (log->disk_full() && !m.bodies.empty()) {
    remove(*log, m, m.bodies.begin()->first);
    ++deletes;
    log->poll(now_ += 10);
  }
  poll_until_room(*log, 3);
  // One segment's jobs (about 31 of ~1,000), and the room the deletes took.
  EXPECT_LT(deletes, jobs / 10) << deletes << " of " << jobs;
  ASSERT_TRUE(put(*log, m, 4000));
  log.reset();
  expect_replays_to(m);
}

// A segment rewritten in place keeps what a replay of the later segments needs from it: the
// deletes of jobs put in older segments (else they come back) and the updates of live jobs put
// elsewhere (else their state goes back).
class InPlaceRewriteTest : public FullDiskCompactionTest {
 protected:
  // Old jobs in the oldest segments; then segments of filler with the deletes and buries of
  // half the old jobs among them; then a full disk; then the filler deleted, so those middle
  // segments are the emptiest. Returns the log, full, with the model.
  std::unique_ptr<JobLog> build(Model& m) {
    Recovered r;
    auto log = testing::open_log(spacious(), &r);
    if (!log) return nullptr;
    std::vector<std::uint64_t> old;
    for (int i = 0; i < 300; ++i) {
      put(*log, m, 300);
      old.push_back(m.bodies.rbegin()->first);
    }
    std::vector<std::uint64_t> filler;
    for (std::size_t i = 0; i < old.size(); ++i) {
      put(*log, m, 3000);
      filler.push_back(m.bodies.rbegin()->first);
      JobLog::Lsn lsn = 0;
      if (i % 3 == 0) {
        remove(*log, m, old[i]);
      } else if (i % 3 == 1) {
        EXPECT_FALSE(log->change({old[i], StoredState::kBuried, 7, 0, {}}, &lsn));
        log->commit();
        m.states[old[i]] = StoredState::kBuried;
      }
    }
    // Enough live filler that the usual compaction, once puts resume, leaves the oldest segment
    // (the old jobs' puts, live and deleted) alone.
    fs().set_capacity(fs().used_bytes() + 2 * 1024 * 1024);
    while (put(*log, m, 3000)) {
    }
    EXPECT_TRUE(log->disk_full());
    for (std::uint64_t id : filler) remove(*log, m, id);
    return log;
  }
};

TEST_F(InPlaceRewriteTest, KeepsDeletesAndUpdatesOfOlderJobs) {
  Model m;
  auto log = build(m);
  ASSERT_TRUE(log);
  const std::uint64_t segments = log->stats().segments;
  ASSERT_TRUE(poll_until_room(*log));
  // Middle segments were rewritten in place, none removed: the oldest (with the puts of the
  // deleted old jobs) is still there, and only the deletes in the rewrites keep them dead.
  EXPECT_GT(log->stats().compacted_segments, 0u);
  EXPECT_EQ(log->stats().segments, segments);
  EXPECT_FALSE(fs().contents("/log/00000000000000000001.wjl").empty());
  expect_sizes_match(*log);
  log.reset();
  expect_replays_to(m);
}

// A power loss at every file operation of the step that rewrites: the old segment or the new
// one, nothing acknowledged lost, no deleted job back.
TEST_F(InPlaceRewriteTest, PowerLossAtEveryOperationLosesNothing) {
  std::uint64_t step_ops = 0;  // file operations of the poll that rewrites, counted dry
  {
    Model m;
    auto log = build(m);
    ASSERT_TRUE(log);
    const std::uint64_t ops = fs().ops();
    log->poll(now_ += 1000);
    ASSERT_GE(log->stats().compacted_segments, 1u);
    step_ops = fs().ops() - ops;
  }
  for (std::uint64_t cut = 1; cut <= step_ops; ++cut) {
    SCOPED_TRACE("cut at operation " + std::to_string(cut) + " of " + std::to_string(step_ops));
    fs_ptr_ = std::make_unique<FaultInjectionFs>();
    Model m;
    {
      auto log = build(m);
      ASSERT_TRUE(log);
      fs().set_ops_until_crash(cut);
      log->poll(now_ += 1000);
      ASSERT_TRUE(fs().crashed());
    }
    std::mt19937_64 rng(cut);
    fs().power_loss(rng, true);
    fs().set_capacity(UINT64_MAX);
    expect_replays_to(m, true);
  }
}

}  // namespace
}  // namespace wheel::jobs
