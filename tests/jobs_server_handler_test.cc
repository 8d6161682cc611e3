// SPDX-License-Identifier: Apache-2.0
// BeanstalkServerHandler (wheel/jobs/beanstalk_server_handler.h) in-process: the handler on a
// TcpServer on its own loop thread, its JobQueue journalled by a DurableJournal on the
// fault-injecting file system, real TCP clients over loopback. What only an embedded log can
// show through the socket: a full disk answers OUT_OF_MEMORY while reads and deletes go on and
// puts come back with the space (the log's re-check on a ManualClock); a log stopped by an I/O
// error answers INTERNAL_ERROR.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <uv.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "support/beanstalk_client.h"
#include "support/embedded_queue_server.h"
#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "support/timer_test_support.h"
#include "wheel/jobs/durable/durable_journal.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/server/beanstalk_server_handler.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;
using wheel_test::Client;

class ServerHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
  JobLogOptions options() {
    JobLogOptions o = testing::log_options(fs, 8192, 4096);
    o.sync_thread = true;  // sync always, on the log's sync thread: the fs is thread-safe
    return o;
  }
  testing::FaultInjectionFs fs;
};

TEST_F(ServerHandlerTest, ADiskFullAnswersOutOfMemoryReadsAndDeletesGoOnPutsResume) {
  fs.set_capacity(48 * 1024);
  wheel_test::EmbeddedQueueServer server({.log = options(), .manual = true});
  ASSERT_NE(server.port(), 0);
  Client c(server.port());
  ASSERT_TRUE(c.connected());
  const std::string body(200, 'b');
  const std::string put = "put 0 0 60 200\r\n" + body + "\r\n";
  std::string reply;
  std::uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) {  // 48 KiB holds far fewer than 1000 such records
    reply = c.ask(put);
    if (!reply.starts_with("INSERTED ")) break;
    last = std::stoull(reply.substr(9));
  }
  EXPECT_EQ(reply, "OUT_OF_MEMORY");
  ASSERT_GT(last, 10u);
  // Reads go on, the refused put left nothing behind, changes are refused too.
  EXPECT_EQ(c.ask("peek " + std::to_string(last) + "\r\n"),
            "FOUND " + std::to_string(last) + " 200");
  EXPECT_EQ(c.bytes(202), body + "\r\n");
  EXPECT_EQ(c.ask("peek " + std::to_string(last + 1) + "\r\n"), "NOT_FOUND");
  EXPECT_EQ(c.ask("reserve-job 1\r\n"), "RESERVED 1 200");  // not durable: allowed
  c.bytes(202);
  EXPECT_EQ(c.ask("bury 1 0\r\n"), "OUT_OF_MEMORY");
  EXPECT_EQ(c.ask("release 1 0 0\r\n"), "OUT_OF_MEMORY");
  EXPECT_EQ(c.ask("put 0 0 60 200\r\n" + body + "\r\n"), "OUT_OF_MEMORY");
  // Deletes keep working (from the log's reserve).
  EXPECT_EQ(c.ask("delete 1\r\n"), "DELETED");
  EXPECT_EQ(c.ask("delete 2\r\n"), "DELETED");
  const std::string stats = c.yaml("stats\r\n");
  EXPECT_NE(stats.find("current-jobs-ready: " + std::to_string(last - 2) + "\n"), std::string::npos)
      << stats;
  // Space returns: the log notices on its next check, a second on the handler's clock after the
  // last (a ManualClock here: the test moves it, nothing waits). A put between may already be
  // taken: the deletes above may have let a compaction step give space back, and then the log
  // looks again at its next poll (JobLog::poll), so no reply is asserted for it.
  fs.set_capacity(UINT64_MAX);
  server.advance(1001ms);  // past the check's time and its tick: the poll timeout checks
  reply = c.ask(put);
  EXPECT_TRUE(reply.starts_with("INSERTED ")) << reply;
  EXPECT_GT(std::stoull(reply.substr(9)), last);
}

TEST_F(ServerHandlerTest,
       ALogStoppedByAnIoErrorClosesUnsyncedRepliesAnswersInternalErrorReadsGoOn) {
  ::wheel::testing::LogCapture log;  // before the server's thread starts
  wheel_test::EmbeddedQueueServer server({.log = options()});
  ASSERT_NE(server.port(), 0);
  Client c(server.port());
  ASSERT_TRUE(c.connected());
  ASSERT_EQ(c.ask("put 0 0 60 4\r\nkept\r\n"), "INSERTED 1");
  fs.set_ops_until_crash(1);  // the next write to the log fails with EIO: the log stops
  // The put was taken, but its batch never reached the file: no acknowledgement, the
  // connection closes instead.
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(c.ask("put 0 0 60 4\r\nlost\r\n"), "");
  // ask() gives "" at EOF or after 10 s: the close came, the request was not left hanging.
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(8));
  Client d(server.port());
  ASSERT_TRUE(d.connected());
  EXPECT_EQ(d.ask("put 0 0 60 4\r\nlost\r\n"), "INTERNAL_ERROR");  // stopped until a restart
  EXPECT_EQ(d.ask("delete 1\r\n"), "INTERNAL_ERROR");
  EXPECT_EQ(d.ask("peek 1\r\n"), "FOUND 1 4");
  EXPECT_EQ(d.bytes(6), "kept\r\n");
  EXPECT_EQ(d.ask("list-tube-used\r\n"), "USING default");
  // Every INTERNAL_ERROR has its reason in the log: once, then at most every 10 s.
  EXPECT_EQ(log.count("answered INTERNAL_ERROR: the job log refused the change: job log failed "
                      "after an I/O error [log_failed]"),
            1);
}

TEST_F(ServerHandlerTest, ABodyThatCannotBeReadAnswersInternalErrorAndTheJobStaysReady) {
  ::wheel::testing::LogCapture log;
  wheel_test::EmbeddedQueueServer server({.log = options()});
  ASSERT_NE(server.port(), 0);
  Client c(server.port());
  Client waiter(server.port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(waiter.connected());
  ASSERT_EQ(c.ask("put 0 0 60 4\r\nkept\r\n"), "INSERTED 1");
  fs.set_read_failure(true);  // the body lives in the log only: every read of it fails now
  EXPECT_EQ(c.ask("peek 1\r\n"), "INTERNAL_ERROR");
  EXPECT_EQ(c.ask("peek-ready\r\n"), "INTERNAL_ERROR");
  EXPECT_EQ(c.ask("reserve-with-timeout 0\r\n"), "INTERNAL_ERROR");
  EXPECT_EQ(c.ask("reserve-job 1\r\n"), "INTERNAL_ERROR");
  const std::string stats = c.yaml("stats-job 1\r\n");
  EXPECT_NE(stats.find("state: ready\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("reserves: 0\n"), std::string::npos) << stats;
  // A blocked reserve served when a delay ends (the put was written by then): the same answer,
  // and the job is ready again. (A job put in the same loop turn is read from the log's
  // unwritten batch, which no disk error can touch.)
  EXPECT_EQ(c.ask("delete 1\r\n"), "DELETED");
  waiter.send("reserve\r\n");
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (c.yaml("stats\r\n").find("current-waiting: 1\n") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(c.ask("put 0 0.200 60 4\r\nnext\r\n"), "INSERTED 2");
  EXPECT_EQ(waiter.line(), "INTERNAL_ERROR");
  fs.set_read_failure(false);
  EXPECT_EQ(waiter.ask("reserve-with-timeout 0\r\n"), "RESERVED 2 4");
  EXPECT_EQ(waiter.bytes(6), "next\r\n");
  EXPECT_EQ(log.count("answered INTERNAL_ERROR: the body of job 1 cannot be read back"), 1);
  EXPECT_EQ(log.count("[body_unreadable]"), 1);  // five refusals, one line
}

// A stuck disk (the file system frozen: every write and sync blocks) stops only the changes: a
// put waits, unanswered, while peek, stats and a reserve of a job in memory answer; once the
// disk is back the put is answered and nothing acknowledged is lost.
TEST_F(ServerHandlerTest, AFrozenDiskHoldsPutsWhileReadsStatsAndReservesAnswer) {
  JobLogOptions o = options();
  {
    wheel_test::EmbeddedQueueServer server({.log = o});
    ASSERT_NE(server.port(), 0);
    // Thaws before the server is stopped (members end in reverse), also when an ASSERT fails.
    struct Thaw {
      testing::FaultInjectionFs& fs;
      ~Thaw() { fs.set_frozen(false); }
    } thaw{fs};
    Client c(server.port());
    Client p(server.port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(p.connected());
    ASSERT_EQ(c.ask("put 0 0 60 5\r\nfirst\r\n"), "INSERTED 1");
    fs.set_frozen(true);
    p.send("put 0 0 60 6\r\nsecond\r\n");
    // The put's batch is stuck in the log thread's write.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (fs.frozen_waiting() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GT(fs.frozen_waiting(), 0);
    // Reads answer (each within ask()'s 10 s, never waiting for the disk).
    EXPECT_EQ(c.ask("peek 1\r\n"), "FOUND 1 5");
    EXPECT_EQ(c.bytes(7), "first\r\n");
    EXPECT_EQ(c.ask("peek 2\r\n"), "FOUND 2 6");  // read from the batch in the log thread's hands
    EXPECT_EQ(c.bytes(8), "second\r\n");
    const std::string stats = c.yaml("stats\r\n");
    EXPECT_NE(stats.find("current-jobs-ready: 2\n"), std::string::npos) << stats;
    EXPECT_EQ(c.ask("reserve-job 1\r\n"), "RESERVED 1 5");  // not durable: no write needed
    EXPECT_EQ(c.bytes(7), "first\r\n");
    EXPECT_TRUE(p.silent_for(200));  // the put is not acknowledged from a buffer
    fs.set_frozen(false);
    EXPECT_EQ(p.line(), "INSERTED 2");
    EXPECT_EQ(c.ask("delete 1\r\n"), "DELETED");
  }
  // Nothing acknowledged was lost: only what was synced survives a power cut.
  std::mt19937_64 rng(1);
  fs.power_loss(rng, false);
  Recovered r;
  o.sync_thread = false;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].id, 2u);
  EXPECT_EQ(r.jobs[0].body, "second");
}

}  // namespace
}  // namespace wheel::jobs
