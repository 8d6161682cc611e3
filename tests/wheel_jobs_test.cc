// SPDX-License-Identifier: Apache-2.0
// wheel-jobs end to end: the program runs as a child process (WHEEL_JOBS_PATH) on a free
// loopback port; the tests talk beanstalkd's protocol over sockets and check every error reply,
// the limits of a hostile client, blocked reserves, drain mode, SIGTERM and option errors.
// Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/child_process.h"
#include "support/wheel_jobs_process.h"

namespace {

using Clock = std::chrono::steady_clock;

using wheel_test::ServerProcess;

using wheel_test::Client;

class WheelJobsTest : public wheel_test::WheelJobsProcessTest {};

// Sends each request in turn on `c` and expects its reply line.
void expect_replies(Client& c, const std::vector<std::pair<std::string, std::string>>& exchanges) {
  for (const auto& [request, reply] : exchanges) EXPECT_EQ(c.ask(request), reply) << request;
}

TEST_F(WheelJobsTest, EveryErrorReplyOfTheParser) {
  start({"--max-job-size", "10"});
  auto c = client();
  expect_replies(*c, {{"frobnicate\r\n", "UNKNOWN_COMMAND"},
                      {"put 0 0 x 1\r\n", "BAD_FORMAT"},
                      {"use -bad\r\n", "BAD_FORMAT"}});
  // A body longer than announced: the announced bytes + 2 are consumed, the rest ("\r\n", an
  // empty line) is the next command, as in beanstalkd.
  EXPECT_EQ(c->ask("put 0 0 10 3\r\nabcde\r\n"), "EXPECTED_CRLF");
  EXPECT_EQ(c->line(), "UNKNOWN_COMMAND");
  EXPECT_EQ(c->ask("put 0 0 10 11\r\n01234567890\r\n"), "JOB_TOO_BIG");
  EXPECT_EQ(c->ask(std::string(300, 'a') + "\r\n"), "BAD_FORMAT");  // line over 224 bytes
  // The connection goes on after each.
  EXPECT_EQ(c->ask("put 0 0 10 2\r\nok\r\n"), "INSERTED 1");
}

TEST_F(WheelJobsTest, EveryErrorReplyOfTheModel) {
  start({"--max-jobs", "2"});
  auto c = client();
  expect_replies(*c, {{"delete 99\r\n", "NOT_FOUND"},
                      {"peek 99\r\n", "NOT_FOUND"},
                      {"ignore default\r\n", "NOT_IGNORED"},
                      {"reserve-with-timeout 0\r\n", "TIMED_OUT"},
                      {"put 0 0 1 1\r\na\r\n", "INSERTED 1"},
                      {"reserve\r\n", "RESERVED 1 1"}});
  EXPECT_EQ(c->bytes(3), "a\r\n");
  // TTR 1 s: the job is in its safety margin at once.
  EXPECT_EQ(c->ask("reserve\r\n"), "DEADLINE_SOON");
  EXPECT_EQ(c->ask("put 0 0 1 1\r\nb\r\n"), "INSERTED 2");
  EXPECT_EQ(c->ask("put 0 0 1 1\r\nc\r\n"), "OUT_OF_MEMORY");  // --max-jobs 2
  EXPECT_EQ(kill(server->pid(), SIGUSR1), 0);
  std::string reply;
  for (int i = 0; i < 100 && reply != "DRAINING"; ++i) {  // the signal arrives soon
    reply = c->ask("put 0 0 1 1\r\nd\r\n");
    if (reply != "DRAINING") usleep(20'000);
  }
  EXPECT_EQ(reply, "DRAINING");
}

TEST_F(WheelJobsTest, ABlockedReserveIsServedByAnotherClientsPutAndPipelinedRequestsWait) {
  start();
  auto worker = client();
  auto producer = client();
  worker->send("reserve\r\nlist-tube-used\r\n");
  EXPECT_TRUE(worker->silent_for(200));
  EXPECT_EQ(producer->ask("put 5 0 60 5\r\nhello\r\n"), "INSERTED 1");
  EXPECT_EQ(worker->line(), "RESERVED 1 5");
  EXPECT_EQ(worker->bytes(7), "hello\r\n");
  EXPECT_EQ(worker->line(), "USING default");
}

TEST_F(WheelJobsTest, ADecimalDelayIsHonouredToTheMillisecond) {
  start();
  auto c = client();
  EXPECT_EQ(c->ask("put 0 0.300 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(c->ask("reserve-with-timeout 0\r\n"), "TIMED_OUT");
  EXPECT_EQ(c->ask("reserve-with-timeout 10\r\n"), "RESERVED 1 1");
}

TEST_F(WheelJobsTest, AClientGoneMidBodyOrWhileReservingReleasesEverything) {
  start();
  auto gone = client();
  gone->send("put 0 0 60 100\r\nonly part of it");
  auto holder = client();
  EXPECT_EQ(holder->ask("put 0 0 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(holder->ask("reserve\r\n"), "RESERVED 1 1");
  holder->bytes(3);
  holder->send("reserve\r\n");  // blocks
  gone->close_now();
  holder->close_now();
  auto other = client();
  EXPECT_EQ(other->ask("reserve-with-timeout 5\r\n"), "RESERVED 1 1");  // released on close
  other->bytes(3);
  other->send("stats\r\n");
  std::string head = other->line();
  ASSERT_TRUE(head.starts_with("OK ")) << head;
  std::string yaml = other->bytes(std::stoul(head.substr(3)) + 2);
  EXPECT_NE(yaml.find("current-connections: 1\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("current-waiting: 0\n"), std::string::npos) << yaml;
}

TEST_F(WheelJobsTest, WatchedTubesAreBoundedPerClient) {
  start();
  auto c = client();
  std::string request;
  for (int i = 0; i < 1100; ++i) request += "watch t" + std::to_string(i) + "\r\n";
  c->send(request);
  int watching = 0, refused = 0;
  for (int i = 0; i < 1100; ++i) {
    std::string reply = c->line();
    if (reply.starts_with("WATCHING")) watching++;
    if (reply == "OUT_OF_MEMORY") refused++;
  }
  EXPECT_EQ(watching, 1023);  // 1024 with "default"
  EXPECT_EQ(refused, 77);
}

TEST_F(WheelJobsTest, ManyBlockedClientsOneJobOneReply) {
  start();
  std::vector<std::unique_ptr<Client>> waiters;
  for (int i = 0; i < 200; ++i) {
    waiters.push_back(client());
    waiters.back()->send("reserve\r\n");
  }
  auto producer = client();
  // All 200 wait before the put.
  std::string stats;
  for (int i = 0; i < 200 && stats.find("current-waiting: 200\n") == std::string::npos; ++i) {
    producer->send("stats\r\n");
    std::string head = producer->line();
    stats = producer->bytes(std::stoul(head.substr(3)) + 2);
  }
  ASSERT_NE(stats.find("current-waiting: 200\n"), std::string::npos);
  EXPECT_EQ(producer->ask("put 0 0 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(waiters[0]->line(), "RESERVED 1 1");  // the first to wait
  for (int i = 1; i < 200; ++i) EXPECT_TRUE(waiters[i]->silent_for(i == 1 ? 100 : 0));
}

TEST_F(WheelJobsTest, SigtermExitsZero) {
  start();
  auto c = client();
  EXPECT_EQ(c->ask("put 0 0 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(server->stop(), 0);
}

// A fresh empty directory under the system's temporary one; removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "wheel-jobs-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_F(WheelJobsTest, WithDirJobsSurviveARestartAndIdsKeepGrowing) {
  TempDir dir;
  start({"--dir", dir.path()});
  {
    auto c = client();
    EXPECT_EQ(c->ask("use mail\r\n"), "USING mail");
    EXPECT_EQ(c->ask("put 5 0 60 5\r\nready\r\n"), "INSERTED 1");
    EXPECT_EQ(c->ask("put 0 3600 60 7\r\ndelayed\r\n"), "INSERTED 2");
    EXPECT_EQ(c->ask("put 0 0 60 4\r\ngone\r\n"), "INSERTED 3");
    EXPECT_EQ(c->ask("delete 3\r\n"), "DELETED");
    EXPECT_EQ(c->ask("put 9 0 60 6\r\nburied\r\n"), "INSERTED 4");
    EXPECT_EQ(c->ask("watch mail\r\n"), "WATCHING 2");
    EXPECT_EQ(c->ask("reserve-job 4\r\n"), "RESERVED 4 6");
    c->bytes(8);
    EXPECT_EQ(c->ask("bury 4 9\r\n"), "BURIED");
  }
  EXPECT_EQ(server->stop(), 0);
  start({"--dir", dir.path()});
  auto c = client();
  EXPECT_EQ(c->ask("peek 1\r\n"), "FOUND 1 5");
  EXPECT_EQ(c->bytes(7), "ready\r\n");
  EXPECT_EQ(c->ask("peek 3\r\n"), "NOT_FOUND");
  EXPECT_EQ(c->ask("use mail\r\n"), "USING mail");
  EXPECT_EQ(c->ask("peek-delayed\r\n"), "FOUND 2 7");
  c->bytes(9);
  EXPECT_EQ(c->ask("peek-buried\r\n"), "FOUND 4 6");
  c->bytes(8);
  // Ids keep growing (the log reserves them in blocks, so the next may be well above 4).
  std::string reply = c->ask("put 0 0 60 1\r\nx\r\n");
  ASSERT_TRUE(reply.starts_with("INSERTED ")) << reply;
  EXPECT_GT(std::stoul(reply.substr(9)), 4u);
}

TEST_F(WheelJobsTest, AHalfClosedClientStillGetsRepliesThatWaitForTheSync) {
  TempDir dir;
  start({"--dir", dir.path(), "--fsync", "always"});
  auto c = client();
  c->send("put 0 0 60 1\r\na\r\nput 0 0 60 1\r\nb\r\n");
  c->shutdown_write();
  EXPECT_EQ(c->line(), "INSERTED 1");
  EXPECT_EQ(c->line(), "INSERTED 2");
  EXPECT_EQ(c->line(), "");  // then EOF
}

TEST_F(WheelJobsTest, WithFsyncAlwaysAnAcknowledgedPutSurvivesKillMinus9) {
  TempDir dir;
  start({"--dir", dir.path(), "--fsync", "always"});
  {
    auto c = client();
    for (int i = 1; i <= 20; ++i) {
      ASSERT_EQ(c->ask("put 0 0 60 1\r\nk\r\n"), "INSERTED " + std::to_string(i));
    }
    EXPECT_EQ(c->ask("delete 7\r\n"), "DELETED");
  }
  kill(server->pid(), SIGKILL);
  server->stop();
  start({"--dir", dir.path()});
  auto c = client();
  c->send("stats\r\n");
  std::string head = c->line();
  ASSERT_TRUE(head.starts_with("OK ")) << head;
  std::string yaml = c->bytes(std::stoul(head.substr(3)) + 2);
  EXPECT_NE(yaml.find("current-jobs-ready: 19\n"), std::string::npos) << yaml;
  EXPECT_EQ(c->ask("peek 7\r\n"), "NOT_FOUND");
  std::string reply = c->ask("put 0 0 60 1\r\nx\r\n");
  ASSERT_TRUE(reply.starts_with("INSERTED ")) << reply;
  EXPECT_GT(std::stoul(reply.substr(9)), 20u);
}

TEST_F(WheelJobsTest, ASecondServerOnTheSameDirExitsNamingTheHolderWhileTheFirstServes) {
  TempDir dir;
  start({"--dir", dir.path(), "--fsync", "always"});
  auto c = client();
  ASSERT_EQ(c->ask("put 0 0 60 5\r\nfirst\r\n"), "INSERTED 1");
  // `timeout`: a second server that does start (no lock) would otherwise serve forever.
  const auto [status, out] =
      wheel_test::run_to_exit("timeout 60 " + std::string(WHEEL_JOBS_PATH),
                              "--port 0 --log-level warn --dir " + dir.path());
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(status, 124) << "the second server kept running: " << out;
  EXPECT_NE(out.find(dir.path() + " is in use by another job log (pid " +
                     std::to_string(server->pid()) + ")"),
            std::string::npos)
      << out;
  // The first one goes on serving, its job whole.
  EXPECT_EQ(c->ask("put 0 0 60 6\r\nsecond\r\n"), "INSERTED 2");
  EXPECT_EQ(c->ask("peek 1\r\n"), "FOUND 1 5");
  EXPECT_EQ(c->bytes(7), "first\r\n");
  EXPECT_EQ(server->stop(), 0);
}

int run_options(const std::string& options, std::string* err) {
  std::string command = std::string(WHEEL_JOBS_PATH) + " " + options + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe) != nullptr) err->append(buf);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(WheelJobsOptionsTest, OutOfRangeExitsTwoWithTheRange) {
  std::string err;
  EXPECT_EQ(run_options("--max-job-size 1073741825", &err), 2);
  EXPECT_NE(err.find("0 to 1073741824"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_options("--port 70000", &err), 2);
  EXPECT_NE(err.find("0 to 65535"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_options("--fsync always", &err), 2);  // without --dir
  EXPECT_NE(err.find("needs --dir"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_options("--dir . --fsync 0", &err), 2);
  EXPECT_NE(err.find("from 1 to 3600000"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_options("--version", &err), 0);
  EXPECT_TRUE(err.starts_with("wheel-jobs ")) << err;
}

}  // namespace
