// SPDX-License-Identifier: Apache-2.0
// wheel::jobs::console on the local queue: paging through a tube's lists past the page-size
// bound, and moving jobs between tubes (a put into the other tube, then a delete).
#include <vector>

#include "support/console_fixture.h"

namespace wheel::jobs::console {
namespace {

// Ids of a list of jobs in a tube view.
std::vector<std::uint64_t> ids(const json& list) {
  std::vector<std::uint64_t> out;
  for (const json& j : list) out.push_back(j["id"]);
  return out;
}

TEST_F(ConsoleTest, PagesWalkEveryStatePastTheFirstHundred) {
  std::vector<std::uint64_t> ready, delayed, buried;
  for (int i = 0; i < 250; ++i) ready.push_back(put("a", "r" + std::to_string(i)));
  for (int i = 0; i < 120; ++i) {
    delayed.push_back(put("a", "d", 1, Millis(10'000 + 1000 * i)));
  }
  for (int i = 0; i < 105; ++i) buried.push_back(put("a", "b", 1));
  for (const std::uint64_t id : buried) bury(id);
  // every ready job once, in order, 100 at a time
  std::vector<std::uint64_t> seen;
  for (int offset = 0; offset < 300; offset += 100) {
    const json v =
        parse(call("GET", "/api/tubes/a?jobs=100&ready_offset=" + std::to_string(offset)));
    EXPECT_EQ(v["offsets"]["ready"], offset);
    EXPECT_EQ(v["page_size"], 100);
    for (const std::uint64_t id : ids(v["ready"])) seen.push_back(id);
  }
  EXPECT_EQ(seen, ready);
  const json v = parse(call("GET", "/api/tubes/a?jobs=100&delayed_offset=100&buried_offset=100"));
  EXPECT_EQ(ids(v["delayed"]), std::vector<std::uint64_t>(delayed.begin() + 100, delayed.end()));
  EXPECT_EQ(ids(v["buried"]), std::vector<std::uint64_t>(buried.begin() + 100, buried.end()));
  EXPECT_EQ(v["ready"].size(), 100u);  // each list has its own offset
  EXPECT_EQ(v["ready"][0]["id"], ready[0]);
  EXPECT_EQ(parse(call("GET", "/api/tubes/a?ready_offset=250"))["ready"].size(), 0u);
}

TEST_F(ConsoleTest, AnOffsetOutOfRangeIs400NamingTheRange) {
  put("a", "x");
  const server::HttpResponse r = call("GET", "/api/tubes/a?ready_offset=100001");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("ready_offset must be a whole number from 0 to 100000"), std::string::npos)
      << r.body;
  EXPECT_EQ(call("GET", "/api/tubes/a?buried_offset=-1").status, 400);
}

TEST_F(ConsoleTest, MoveReputsJobsIntoTheOtherTubeAndDeletesThem) {
  const std::uint64_t r1 = put("a", "r1", 7);
  const std::uint64_t r2 = put("a", "r2", 8);
  put("a", "r3", 9);
  const std::uint64_t d = put("a", "d", 3, Millis(5000));
  const std::uint64_t b = put("a", "b", 4);
  bury(b);
  queue_.advance(Millis(1000 + 2000));  // d has 3 s of its delay left
  json m = parse(change("/api/tubes/a/move", R"({"to": "z", "state": "ready", "count": 2})"));
  EXPECT_EQ(m["moved"], 2);
  EXPECT_EQ(queue_.peek(r1), nullptr);  // deleted: ids change
  EXPECT_EQ(queue_.peek(r2), nullptr);
  json z = parse(call("GET", "/api/tubes/z"));
  ASSERT_EQ(z["ready"].size(), 2u);
  EXPECT_EQ(z["ready"][0]["body"], "r1");
  EXPECT_EQ(z["ready"][0]["priority"], 7);
  EXPECT_EQ(z["ready"][1]["body"], "r2");
  EXPECT_EQ(
      parse(call("GET", "/api/jobs/" + std::to_string(z["ready"][0]["id"].get<int>())))["ttr_ms"],
      60'000);
  m = parse(change("/api/tubes/a/move", R"({"to": "z", "state": "delayed", "count": 10})"));
  EXPECT_EQ(m["moved"], 1);
  z = parse(call("GET", "/api/tubes/z"));
  ASSERT_EQ(z["delayed"].size(), 1u);
  EXPECT_EQ(z["delayed"][0]["time_left_ms"], 3000);  // what was left of its delay
  EXPECT_EQ(queue_.peek(d), nullptr);
  m = parse(change("/api/tubes/a/move", R"({"to": "z", "state": "buried", "count": 10})"));
  EXPECT_EQ(m["moved"], 1);
  z = parse(call("GET", "/api/tubes/z"));
  EXPECT_EQ(z["tube"]["ready"], 3);  // a buried job arrives ready, as a put
  const json a = parse(call("GET", "/api/tubes/a"))["tube"];
  EXPECT_EQ(a["ready"], 1);
  EXPECT_EQ(a["buried"], 0);
  EXPECT_EQ(a["delayed"], 0);
}

TEST_F(ConsoleTest, MoveArgumentsAreChecked) {
  put("a", "x");
  EXPECT_EQ(change("/api/tubes/a/move", R"({"to": "a", "state": "ready"})").status, 400);
  EXPECT_EQ(change("/api/tubes/a/move", R"({"to": "z", "state": "reserved"})").status, 400);
  EXPECT_EQ(change("/api/tubes/a/move", R"({"state": "ready"})").status, 400);
  EXPECT_EQ(change("/api/tubes/a/move", R"({"to": "z", "state": "ready", "count": 1001})").status,
            400);
  EXPECT_EQ(change("/api/tubes/a/move", R"({"to": "-bad", "state": "ready"})").status, 400);
  EXPECT_EQ(change("/api/tubes/none/move", R"({"to": "z", "state": "ready"})").status, 404);
  EXPECT_EQ(queue_.tube_stats("a")->ready, 1u);
}

TEST_F(ConsoleTest, MoveIsRefusedInReadOnlyAndWithoutTheToken) {
  put("a", "x");
  EXPECT_EQ(call("POST", "/api/tubes/a/move", R"({"to": "z", "state": "ready"})",
                 std::string("Host: ") + kHost + "\r\nContent-Type: application/json\r\n")
                .status,
            403);
  ConsoleOptions o;
  o.read_only = true;
  service(o);
  EXPECT_EQ(change("/api/tubes/a/move", R"({"to": "z", "state": "ready"})").status, 403);
  EXPECT_EQ(queue_.tube_stats("a")->ready, 1u);
}

class FullConsoleTest : public ConsoleTest {
 protected:
  static JobQueueLimits limits() {
    JobQueueLimits l;
    l.max_jobs = 3;
    return l;
  }
  FullConsoleTest() : ConsoleTest(limits()) {}
};

TEST_F(FullConsoleTest, AMoveTheStoreRefusesLosesAndDuplicatesNothing) {
  const std::uint64_t a = put("a", "one");
  put("a", "two");
  const std::uint64_t other = put("b", "three");  // full: --max-jobs 3
  const server::HttpResponse r =
      change("/api/tubes/a/move", R"({"to": "z", "state": "ready", "count": 2})");
  EXPECT_EQ(r.status, 507);
  EXPECT_NE(r.body.find("moved 0 of 2"), std::string::npos) << r.body;
  EXPECT_EQ(queue_.tube_stats("a")->ready, 2u);  // both still there
  EXPECT_EQ(queue_.find_tube("z"), nullptr);     // no copy
  EXPECT_NE(queue_.peek(a), nullptr);
  // with room for one more job, each job moves in turn (its copy, then its delete)
  change("/api/jobs/" + std::to_string(other) + "/delete");
  EXPECT_EQ(
      parse(change("/api/tubes/a/move", R"({"to": "z", "state": "ready", "count": 2})"))["moved"],
      2);
  EXPECT_EQ(queue_.tube_stats("z")->ready, 2u);
  EXPECT_EQ(queue_.find_tube("a"), nullptr);  // empty and unused: dropped
}

}  // namespace
}  // namespace wheel::jobs::console
