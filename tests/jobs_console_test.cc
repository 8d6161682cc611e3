// SPDX-License-Identifier: Apache-2.0
// wheel::jobs::console: the web console's JSON API (ConsoleService) on the local queue
// (QueueConsole), called as the HTTP server calls it, on a JobQueue whose clock moves by hand:
// what each view shows, the bounds, the changes, and every check a change must pass.
#include "support/console_fixture.h"

namespace wheel::jobs::console {
namespace {

TEST_F(ConsoleTest, OverviewShowsEveryTubeWithItsCountsByStateAndPause) {
  put("a", "one");
  put("a", "two", 100, Millis(5000));
  bury(put("b", "three"));
  queue_.pause_tube("b", Millis(30'000));
  const json o = parse(call("GET", "/api/overview"));
  EXPECT_EQ(o["backend"], "memory");
  EXPECT_EQ(o["connections"], 3);
  ASSERT_EQ(o["tubes"].size(), 3u);  // default, a, b in creation order
  EXPECT_EQ(o["tubes"][1]["name"], "a");
  EXPECT_EQ(o["tubes"][1]["ready"], 1);
  EXPECT_EQ(o["tubes"][1]["delayed"], 1);
  EXPECT_EQ(o["tubes"][1]["puts"], 2);
  EXPECT_EQ(o["tubes"][2]["buried"], 1);
  EXPECT_EQ(o["tubes"][2]["paused"], true);
  EXPECT_EQ(o["tubes"][2]["pause_left_ms"], 30'000);
  EXPECT_EQ(o["ready"], 1);
  EXPECT_EQ(o["buried"], 1);
}

TEST_F(ConsoleTest, RatesComeFromTwoOverviewsASecondApart) {
  put("a", "x");
  EXPECT_TRUE(parse(call("GET", "/api/overview"))["tubes"][1]["puts_per_second"].is_null());
  for (int i = 0; i < 6; ++i) put("a", "x");
  clock_ms_ += 2000;
  const json t = parse(call("GET", "/api/overview"))["tubes"][1];
  EXPECT_DOUBLE_EQ(t["puts_per_second"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(t["deliveries_per_second"].get<double>(), 0.0);
}

TEST_F(ConsoleTest, HeadReadyWaitIsHowLongTheNextJobToBeReservedHasBeenReady) {
  put("a", "x");
  queue_.advance(Millis(1000 + 2500));
  EXPECT_EQ(parse(call("GET", "/api/tubes/a"))["tube"]["head_wait_ms"], 2500);
  EXPECT_TRUE(parse(call("GET", "/api/tubes/default"))["tube"]["head_wait_ms"].is_null());
}

TEST_F(ConsoleTest, OldestReadyAgeIsTheLongestWaitingReadyJobsNotTheHeads) {
  put("a", "low", 500);
  queue_.advance(Millis(1000 + 1000));
  put("a", "high", 1);
  queue_.advance(Millis(1000 + 3000));
  const json t = parse(call("GET", "/api/tubes/a"))["tube"];
  EXPECT_EQ(t["head_wait_ms"], 2000);
  EXPECT_EQ(t["oldest_ready_ms"], 3000);
  EXPECT_EQ(parse(call("GET", "/api/overview"))["tubes"][1]["oldest_ready_ms"], 3000);
  EXPECT_TRUE(parse(call("GET", "/api/tubes/default"))["tube"]["oldest_ready_ms"].is_null());
}

TEST_F(ConsoleTest, TubeListsTheFirstJobsOfEachStateInTheOrderTheyAreTaken) {
  const std::uint64_t late = put("a", "late", 500);
  const std::uint64_t first = put("a", "first", 1);
  const std::uint64_t second = put("a", "second", 1);
  put("a", "d2", 1, Millis(9000));
  const std::uint64_t d1 = put("a", "d1", 1, Millis(3000));
  const json v = parse(call("GET", "/api/tubes/a?jobs=3"));
  ASSERT_EQ(v["ready"].size(), 3u);
  EXPECT_EQ(v["ready"][0]["id"], first);
  EXPECT_EQ(v["ready"][1]["id"], second);
  EXPECT_EQ(v["ready"][2]["id"], late);
  EXPECT_EQ(v["delayed"][0]["id"], d1);
  EXPECT_EQ(v["delayed"][0]["time_left_ms"], 3000);
  EXPECT_EQ(parse(call("GET", "/api/tubes/a?jobs=1"))["ready"].size(), 1u);
}

TEST_F(ConsoleTest, ListsCutBodiesToThePreviewAndSaySo) {
  put("a", std::string(300, 'x'));
  const json j = parse(call("GET", "/api/tubes/a?preview=10"))["ready"][0];
  EXPECT_EQ(j["body"], std::string(10, 'x'));
  EXPECT_EQ(j["body_size"], 300);
  EXPECT_EQ(j["body_complete"], false);
}

TEST_F(ConsoleTest, SearchFindsBodiesHoldingTheTextWithinItsScanBound) {
  for (int i = 0; i < 10; ++i) put("a", "order-" + std::to_string(i));
  json s = parse(call("GET", "/api/tubes/a/search?q=order-7"));
  ASSERT_EQ(s["hits"].size(), 1u);
  EXPECT_EQ(s["hits"][0]["body"], "order-7");
  EXPECT_EQ(s["scanned"], 10);
  EXPECT_EQ(s["complete"], true);
  s = parse(call("GET", "/api/tubes/a/search?q=order&scan=4"));
  EXPECT_EQ(s["scanned"], 4);
  EXPECT_EQ(s["hits"].size(), 4u);
  EXPECT_EQ(s["complete"], false);
  EXPECT_EQ(s["scan_bound"], 4);
}

TEST_F(ConsoleTest, JobPageHasStatsAndTheWholeBody) {
  const std::string body(5000, 'b');
  const std::uint64_t id = put("a", body, 7);
  const json j = parse(call("GET", "/api/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["body"], body);
  EXPECT_EQ(j["tube"], "a");
  EXPECT_EQ(j["state"], "ready");
  EXPECT_EQ(j["priority"], 7);
  EXPECT_EQ(j["ttr_ms"], 60'000);
  EXPECT_EQ(call("GET", "/api/jobs/99").status, 404);
  EXPECT_EQ(call("GET", "/api/jobs/x1").status, 400);
  EXPECT_EQ(call("GET", "/api/tubes/nope").status, 404);
}

TEST_F(ConsoleTest, BoundsOutOfRangeAre400NamingTheRange) {
  put("a", "x");
  server::HttpResponse r = call("GET", "/api/tubes/a?jobs=101");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("1 to 100"), std::string::npos) << r.body;
  EXPECT_EQ(call("GET", "/api/tubes/a/search?q=x&scan=10001").status, 400);
  EXPECT_EQ(call("GET", "/api/tubes/a/search?q=").status, 400);
  EXPECT_EQ(call("GET", "/api/tubes/a?preview=0").status, 400);
}

TEST_F(ConsoleTest, KickTubeKicksBuriedJobsUpToTheCount) {
  for (int i = 0; i < 3; ++i) bury(put("a", "x"));
  const server::HttpResponse r = change("/api/tubes/a/kick", R"({"count": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse(r)["kicked"], 2);
  EXPECT_EQ(queue_.tube_stats("a")->buried, 1u);
  EXPECT_EQ(queue_.tube_stats("a")->ready, 2u);
  EXPECT_EQ(change("/api/tubes/zz/kick").status, 404);
}

TEST_F(ConsoleTest, KickJobDeleteAndPauseChangeTheQueue) {
  const std::uint64_t a = put("a", "x");
  const std::uint64_t b = put("a", "y");
  bury(a);
  EXPECT_EQ(change("/api/jobs/" + std::to_string(a) + "/kick").status, 200);
  EXPECT_EQ(queue_.peek(a)->state, JobState::kReady);
  EXPECT_EQ(change("/api/jobs/" + std::to_string(b) + "/delete").status, 200);
  EXPECT_EQ(queue_.peek(b), nullptr);
  EXPECT_EQ(change("/api/jobs/" + std::to_string(b) + "/delete").status, 404);
  EXPECT_EQ(change("/api/tubes/a/pause", R"({"seconds": 60})").status, 200);
  EXPECT_TRUE(queue_.find_tube("a")->paused(queue_.now()));
  EXPECT_EQ(change("/api/tubes/a/pause", R"({"seconds": 0})").status, 200);
  EXPECT_FALSE(queue_.find_tube("a")->paused(queue_.now()));
}

TEST_F(ConsoleTest, AJobReservedByAWorkerIsNotDeleted) {
  const std::uint64_t id = put("a", "x");
  const SessionId worker = queue_.open_session();
  ASSERT_EQ(queue_.reserve_job(worker, id).outcome, Outcome::kOk);
  EXPECT_EQ(change("/api/jobs/" + std::to_string(id) + "/delete").status, 404);
  EXPECT_NE(queue_.peek(id), nullptr);
}

TEST_F(ConsoleTest, PutAddsAJobWithItsPriorityDelayAndTtr) {
  const server::HttpResponse r = change(
      "/api/tubes/new-tube/put", R"({"body": "hello", "priority": 9, "delay": 1.5, "ttr": 30})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::uint64_t id = parse(r)["id"];
  const std::optional<JobStats> s = queue_.job_stats(id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->tube, "new-tube");
  EXPECT_EQ(s->priority, 9u);
  EXPECT_EQ(s->state, JobState::kDelayed);
  EXPECT_EQ(s->delay, Millis(1500));
  EXPECT_EQ(s->ttr, Millis(30'000));
  EXPECT_EQ(change("/api/tubes/a/put", R"({"priority": 1})").status, 400);  // no body
  EXPECT_EQ(change("/api/tubes/a/put", R"({"body": "x", "delay": -1})").status, 400);
  EXPECT_EQ(change("/api/tubes/bad%20name!/put", R"({"body": "x"})").status, 400);
  EXPECT_EQ(change("/api/tubes/a/put", "not json").status, 400);
}

TEST_F(ConsoleTest, APutLargerThanMaxJobSizeIsRefused) {
  ConsoleOptions o;
  o.max_job_size = 4;
  service(o);
  EXPECT_EQ(change("/api/tubes/a/put", R"({"body": "12345"})").status, 400);
  EXPECT_EQ(change("/api/tubes/a/put", R"({"body": "1234"})").status, 200);
}

TEST_F(ConsoleTest, AChangeWithoutTheTokenIsRefusedAndChangesNothing) {
  bury(put("a", "x"));
  const std::string head = std::string("Host: ") + kHost + "\r\nContent-Type: application/json\r\n";
  EXPECT_EQ(call("POST", "/api/tubes/a/kick", "{}", head).status, 403);
  EXPECT_EQ(call("POST", "/api/tubes/a/kick", "{}", head + "X-Wheel-Token: wrong\r\n").status, 403);
  EXPECT_EQ(call("POST", "/api/tubes/a/kick", "{}",
                 head + "X-Wheel-Token: " + std::string(kToken).substr(1) + "0\r\n")
                .status,
            403);
  EXPECT_EQ(queue_.tube_stats("a")->buried, 1u);
}

TEST_F(ConsoleTest, AChangeFromAnotherOriginIsRefused) {
  bury(put("a", "x"));
  const std::string head = std::string("Host: ") + kHost +
                           "\r\nContent-Type: application/json\r\nX-Wheel-Token: " + kToken +
                           "\r\nOrigin: http://evil.example\r\n";
  EXPECT_EQ(call("POST", "/api/tubes/a/kick", "{}", head).status, 403);
  EXPECT_EQ(queue_.tube_stats("a")->buried, 1u);
}

TEST_F(ConsoleTest, AChangeMustBeDeclaredJson) {
  bury(put("a", "x"));
  const std::string head = std::string("Host: ") + kHost +
                           "\r\nContent-Type: text/plain\r\nX-Wheel-Token: " + kToken + "\r\n";
  EXPECT_EQ(call("POST", "/api/tubes/a/kick", "{}", head).status, 415);
  EXPECT_EQ(queue_.tube_stats("a")->buried, 1u);
}

TEST_F(ConsoleTest, AGetNeverChangesAnything) {
  bury(put("a", "x"));
  EXPECT_EQ(call("GET", "/api/tubes/a/kick").status, 404);
  EXPECT_EQ(queue_.tube_stats("a")->buried, 1u);
}

TEST_F(ConsoleTest, ReadOnlyRefusesEveryChange) {
  ConsoleOptions o;
  o.read_only = true;
  service(o);
  bury(put("a", "x"));
  EXPECT_EQ(change("/api/tubes/a/kick").status, 403);
  EXPECT_EQ(queue_.tube_stats("a")->buried, 1u);
  EXPECT_EQ(parse(call("GET", "/api/overview"))["read_only"], true);
}

TEST_F(ConsoleTest, AnotherHostIsRefused) {
  EXPECT_EQ(call("GET", "/api/overview", {}, "Host: evil.example:8080\r\n").status, 421);
  EXPECT_EQ(call("GET", "/", {}, "Host: evil.example:8080\r\n").status, 421);
  EXPECT_EQ(call("GET", "/api/overview").status, 200);
}

TEST_F(ConsoleTest, AGivenTokenGuardsReadsToo) {
  ConsoleOptions o;
  o.token_for_reads = true;
  service(o);
  EXPECT_EQ(call("GET", "/api/overview").status, 401);
  EXPECT_EQ(call("GET", "/api/overview", {},
                 std::string("Host: ") + kHost + "\r\nX-Wheel-Token: " + kToken + "\r\n")
                .status,
            200);
  // The page asks for it: the shell carries no token.
  const server::HttpResponse page = call("GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body.find(kToken), std::string::npos);
}

TEST_F(ConsoleTest, EveryViewIsThePageShellWithAStrictContentSecurityPolicy) {
  for (const char* path : {"/", "/tubes/a", "/jobs/12"}) {
    const server::HttpResponse r = call("GET", path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
    EXPECT_NE(r.body.find(kToken), std::string::npos) << "the page carries its token";
    EXPECT_NE(r.extra_headers.find("script-src 'self';"), std::string::npos);
    EXPECT_EQ(r.extra_headers.find("unsafe-inline"), std::string::npos);
  }
  EXPECT_EQ(call("GET", "/elsewhere").status, 404);
  EXPECT_EQ(call("POST", "/").status, 405);
}

TEST_F(ConsoleTest, AssetsAreEmbeddedAndNothingElseIsServed) {
  EXPECT_NE(call("GET", "/assets/console.js").body.find("textContent"), std::string::npos);
  EXPECT_NE(call("GET", "/assets/uPlot.iife.min.js").body.find("uPlot"), std::string::npos);
  EXPECT_EQ(call("GET", "/assets/console.css").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(call("GET", "/assets/index.html").status, 404);
  EXPECT_EQ(call("GET", "/assets/uPlot.LICENSE").status, 404);
  EXPECT_EQ(call("GET", "/assets/..%2F..%2Fetc%2Fpasswd").status, 404);
}

TEST_F(ConsoleTest, AnHtmlBodyTravelsAsAJsonStringNeverAsMarkup) {
  const std::string xss = "<img src=x onerror=alert(1)></script><script>alert(2)</script>";
  const std::uint64_t id = put("a", xss);
  const server::HttpResponse r = call("GET", "/api/jobs/" + std::to_string(id));
  EXPECT_EQ(r.content_type, "application/json; charset=utf-8");
  EXPECT_NE(r.extra_headers.find("X-Content-Type-Options: nosniff"), std::string::npos);
  EXPECT_EQ(parse(r)["body"], xss);
}

TEST_F(ConsoleTest, LatenessTicksKeepPercentilesOfEachSecond) {
  ConsoleService& s = service();
  s.tick(1000);  // the first tick only sets the base
  EXPECT_TRUE(s.history().empty());
  // Ten deliveries 3 ms late: one delayed job at a time, reserved 3 ms after its due time.
  const SessionId worker = queue_.open_session();
  queue_.watch(worker, "a");
  for (int i = 0; i < 10; ++i) {
    put("a", "x", 1, Millis(10));
    queue_.advance(queue_.now() + Millis(13));
    ASSERT_EQ(queue_.reserve(worker, Millis(0)).outcome, Outcome::kOk);
  }
  s.tick(2000);
  ASSERT_EQ(s.history().size(), 1u);
  EXPECT_EQ(s.history()[0].count, 10u);
  EXPECT_GT(s.history()[0].p50, 0.002);  // 3 ms lies in the (2, 5] ms bucket
  EXPECT_LE(s.history()[0].p99, 0.005);
  const json l = parse(call("GET", "/api/lateness"));
  EXPECT_EQ(l["histogram"]["count"], 10);
  EXPECT_EQ(l["history"].size(), 1u);
}

TEST_F(ConsoleTest, OverviewListsAtMostMaxTubesAndSaysHowManyExist) {
  ConsoleOptions o;
  o.max_tubes = 2;
  service(o);
  put("a", "x");
  put("b", "x");
  const json v = parse(call("GET", "/api/overview"));
  EXPECT_EQ(v["tubes"].size(), 2u);
  EXPECT_EQ(v["tubes_total"], 3);
}

TEST_F(ConsoleTest, TubeNamesWithSlashesTravelPercentEncoded) {
  put("a/b", "x");
  EXPECT_EQ(parse(call("GET", "/api/tubes/a%2Fb"))["tube"]["name"], "a/b");
  EXPECT_EQ(call("GET", "/api/tubes/a/b").status, 404);  // another route, none
}

}  // namespace
}  // namespace wheel::jobs::console
