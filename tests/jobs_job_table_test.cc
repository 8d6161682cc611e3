// SPDX-License-Identifier: Apache-2.0
// JobTable (wheel/jobs/job_table.h) against std::map under random inserts and erases, with
// ids as a queue makes them (growing, most erased soon, some kept long) and clustered ones.
#include "wheel/jobs/model/job_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace wheel::jobs {
namespace {

std::unique_ptr<Job> job_with(std::uint64_t id) {
  auto job = std::make_unique<Job>();
  job->id = id;
  return job;
}

// Every id of the model is found; ids around each (and up to max_id) are found exactly when
// the model has them.
void expect_same(const JobTable& table, const std::map<std::uint64_t, bool>& model,
                 std::uint64_t max_id) {
  ASSERT_EQ(table.size(), model.size());
  auto check = [&](std::uint64_t id) {
    Job* job = table.find(id);
    if (model.count(id)) {
      ASSERT_NE(job, nullptr) << "id " << id;
      ASSERT_EQ(job->id, id);
    } else {
      ASSERT_EQ(job, nullptr) << "id " << id;
    }
  };
  for (const auto& [id, present] : model) {
    for (std::uint64_t near = id > 3 ? id - 3 : 1; near <= id + 3; ++near) check(near);
  }
  for (std::uint64_t id = 1; id <= max_id; id += 97) check(id);
}

TEST(JobTableTest, EmptyFindsNothing) {
  JobTable table;
  EXPECT_EQ(table.find(1), nullptr);
  EXPECT_FALSE(table.erase(1));
  EXPECT_EQ(table.size(), 0u);
}

TEST(JobTableTest, ASecondJobWithTheSameIdIsRefused) {
  JobTable table;
  ASSERT_TRUE(table.insert(job_with(5)));
  Job* first = table.find(5);
  EXPECT_FALSE(table.insert(job_with(5)));
  EXPECT_EQ(table.find(5), first);
  EXPECT_EQ(table.size(), 1u);
}

TEST(JobTableTest, MatchesAMapUnderRandomInsertsAndErases) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    JobTable table;
    std::map<std::uint64_t, bool> model;
    std::uint64_t next = 1;
    for (int round = 0; round < 40; ++round) {
      for (int i = 0; i < 300; ++i) {
        const std::uint64_t id = (rng() % 4 == 0) ? next + (rng() % 1000) * 64 : next;
        next = std::max(next, id) + 1;
        if (model.count(id)) continue;
        table.insert(job_with(id));
        model[id] = true;
      }
      // Erase about two in three, at random: runs of probes get holes everywhere.
      for (auto it = model.begin(); it != model.end();) {
        if (rng() % 3 != 0) {
          ASSERT_TRUE(table.erase(it->first));
          it = model.erase(it);
        } else {
          ++it;
        }
      }
      ASSERT_FALSE(table.erase(next + 1));
      expect_same(table, model, next);
    }
  }
}

TEST(JobTableTest, ReserveKeepsEveryJob) {
  JobTable table;
  for (std::uint64_t id = 1; id <= 1000; ++id) table.insert(job_with(id * 7));
  table.reserve(100'000);
  for (std::uint64_t id = 1; id <= 1000; ++id) ASSERT_NE(table.find(id * 7), nullptr);
  EXPECT_EQ(table.find(8), nullptr);
  EXPECT_EQ(table.size(), 1000u);
}

}  // namespace
}  // namespace wheel::jobs
