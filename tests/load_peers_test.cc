// SPDX-License-Identifier: Apache-2.0
// wheel-load and what its peer does (issue 22 items 3 to 5): the server's own heartbeats are
// answered or not as configured and counted; a server that cannot be reached makes it give up
// and say why; a server that shuts down mid-run is reported as a shutdown, not as early closes.
// Every wait is for an event (connections open at the server) with a generous bound.
#include <gtest/gtest.h>
#include <signal.h>

#include "load_program_support.h"

using namespace wheel_load_test;

namespace {

constexpr std::chrono::seconds kOpenLimit{30};

#ifdef WHEEL_SERVER_PATH
// wheel-server sending heartbeats: PING after 400 ms without output, closing after 1200 ms
// without input.
ServerProcess heartbeat_server() {
  return ServerProcess({WHEEL_SERVER_PATH, "--host", "127.0.0.1", "--port", "0", "--reader-idle",
                        "1200ms", "--writer-idle", "400ms", "--tick", "10ms", "--log-level",
                        "warn"});
}

// Active connections whose own PINGs never come (one an hour): they stay open only by
// answering the server's heartbeats, which idle ones must not answer.
std::vector<std::string> heartbeat_run(int port) {
  auto args = load_args(port, "100", "1200ms", "3500ms");
  *(std::find(args.begin(), args.end(), "--ping-interval") + 1) = "1h";
  return args;
}
#endif

}  // namespace

#ifdef WHEEL_SERVER_PATH
// The case: `wheel-server --reader-idle 2s --writer-idle 1s` under
// `wheel-load --expect-idle-close 2s` failed with "unexpected line from the server: 'PING'".
TEST(LoadPeers, ActiveConnectionsAnswerHeartbeatsAndIdleOnesStaySilent) {
  ServerProcess server = heartbeat_server();
  ASSERT_GT(server.port(), 0);
  const LoadRun run = run_wheel_load(heartbeat_run(server.port()));
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const auto& r = run.report;
  EXPECT_EQ(run.exit_status, 0) << run.out;
  EXPECT_EQ(r["unexpected_lines"], 0);
  EXPECT_EQ(r["active"]["survived"], 50) << "only answering the heartbeats keeps them open";
  EXPECT_EQ(r["idle"]["closed_on_time"], 50) << "an idle connection answered a heartbeat";
  // Each connection gets at least one heartbeat (400 ms < 1200 ms); only active ones answer.
  EXPECT_GE(r["heartbeats"]["received"].get<long>(), 100);
  EXPECT_GE(r["heartbeats"]["answered"].get<long>(), 50);
  EXPECT_LT(r["heartbeats"]["answered"], r["heartbeats"]["received"]);
  EXPECT_EQ(r["settings"]["answer_heartbeats"], "active");
  EXPECT_NE(run.out.find("heartbeat PINGs"), std::string::npos) << run.out;
}

TEST(LoadPeers, AnswerHeartbeatsNoneAndAllAreObeyed) {
  ServerProcess server = heartbeat_server();
  ASSERT_GT(server.port(), 0);
  auto none = heartbeat_run(server.port());
  none.insert(none.end(), {"--answer-heartbeats", "none"});
  const LoadRun silent = run_wheel_load(none);
  ASSERT_TRUE(silent.report.is_object()) << silent.err;
  EXPECT_EQ(silent.exit_status, 1);
  EXPECT_EQ(silent.report["heartbeats"]["answered"], 0);
  EXPECT_EQ(silent.report["active"]["closed_early"], 50) << "silent active ones are idle";

  auto all = heartbeat_run(server.port());
  all.insert(all.end(), {"--answer-heartbeats", "all"});
  const LoadRun talkative = run_wheel_load(all);
  ASSERT_TRUE(talkative.report.is_object()) << talkative.err;
  EXPECT_EQ(talkative.exit_status, 1);
  EXPECT_EQ(talkative.report["heartbeats"]["answered"], talkative.report["heartbeats"]["received"]);
  EXPECT_EQ(talkative.report["idle"]["closed_on_time"], 0) << "answering, they are not idle";
  EXPECT_EQ(talkative.report["active"]["survived"], 50);
}

// Issue 22 item 5: wheel-server stopped mid-run says "BYE shutdown" to every connection. That
// is a shutdown, reported as one, not 100 early closes with a negative lateness.
TEST(LoadPeers, ServerShutdownMidRunIsReportedAsAShutdown) {
  ServerProcess server({WHEEL_SERVER_PATH, "--host", "127.0.0.1", "--port", "0", "--reader-idle",
                        "30s", "--log-level", "warn"});
  ASSERT_GT(server.port(), 0);
  auto args = load_args(server.port(), "100", "30s", "60s");
  bool stopped = false;
  const LoadRun run = run_wheel_load(args, std::chrono::seconds(0), [&](pid_t) {
    if (!wait_until([&] { return established_to(server.port()) >= 100; }, kOpenLimit)) return;
    server.stop();
    stopped = true;
  });
  ASSERT_TRUE(stopped) << run.err;
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const auto& r = run.report;
  EXPECT_EQ(run.exit_status, 1);
  ASSERT_TRUE(r["server_shutdown"].is_object()) << r.dump(2);
  EXPECT_EQ(r["server_shutdown"]["active_closed"].get<long>() +
                r["server_shutdown"]["idle_closed"].get<long>(),
            100);
  EXPECT_EQ(r["idle"]["closed_early"], 0);
  EXPECT_EQ(r["active"]["closed_early"], 0);
  EXPECT_TRUE(r["idle"]["lateness_ms"]["min"].is_null()) << "a shutdown close was judged";
  EXPECT_LT(r["duration_s"].get<double>(), 60) << "the run went on after the shutdown";
  EXPECT_NE(r["failures"][0].get<std::string>().find("the server shut down"), std::string::npos)
      << r["failures"].dump();
}
#endif

// wheel-load with `connections` against a port nothing listens on, --duration 60s (and
// --connect-rate `connect_rate` when given).
LoadRun run_without_server(const char* connections, const char* connect_rate = nullptr) {
  auto args = load_args(unused_port(), connections, "1s", "60s");
  if (connect_rate != nullptr) {
    *(std::find(args.begin(), args.end(), "--connect-rate") + 1) = connect_rate;
  }
  return run_wheel_load(args, std::chrono::seconds(0));
}

// The reason a run's report gives for giving up, or "" when it did not.
std::string gave_up(const LoadRun& run) {
  const auto& r = run.report;
  return r.is_object() && r.contains("gave_up") && r["gave_up"].is_string()
             ? r["gave_up"].get<std::string>()
             : "";
}

// Issue 22 item 4: nothing listens; every connect is refused at once. wheel-load gives up once
// every connection was tried, instead of waiting out --duration, and says why.
TEST(LoadPeers, NoServerGivesUpOnceEveryConnectionFailed) {
  const LoadRun run = run_without_server("50");
  EXPECT_EQ(run.exit_status, 1) << run.err;
  const std::string why = gave_up(run);
  ASSERT_FALSE(why.empty()) << run.err << run.report.dump(2);
  EXPECT_NE(why.find("no connection could be made"), std::string::npos);
  EXPECT_NE(why.find("ECONNREFUSED 50"), std::string::npos);
  EXPECT_LT(run.report["duration_s"].get<double>(), 60);
  EXPECT_NE(run.out.find("gave up: no connection could be made"), std::string::npos) << run.out;
}

// At 20 connections a second most connections are not tried yet when the failures have gone on
// for a second: it gives up then, and counts the untried ones as such.
TEST(LoadPeers, NoServerGivesUpAfterASecondOfFailuresBeforeTryingEveryConnection) {
  const LoadRun run = run_without_server("10000", "20");
  EXPECT_EQ(run.exit_status, 1) << run.err;
  ASSERT_FALSE(gave_up(run).empty()) << run.err << run.report.dump(2);
  const auto& errors = run.report["connect_errors_by_kind"];
  EXPECT_GT(errors["ECONNREFUSED"].get<long>(), 0);
  EXPECT_GT(errors["gave_up"].get<long>(), 0);
  EXPECT_EQ(run.report["connect_errors"], 10000);
}
