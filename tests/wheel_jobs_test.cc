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

// The protocol's cases every backend passes are jobs_protocol_test's (one suite over memory,
// the log and Redis); here what only the in-process queue and its log have.

TEST_F(WheelJobsTest, MaxJobsAnswersOutOfMemory) {
  start({"--max-jobs", "2"});
  auto c = client();
  EXPECT_EQ(c->ask("put 0 0 1 1\r\na\r\n"), "INSERTED 1");
  EXPECT_EQ(c->ask("put 0 0 1 1\r\nb\r\n"), "INSERTED 2");
  EXPECT_EQ(c->ask("put 0 0 1 1\r\nc\r\n"), "OUT_OF_MEMORY");  // --max-jobs 2
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

// A damaged record in the middle of the log stops the start naming the file and offset; the
// operator's explicit --skip-corrupt starts past it, keeping the jobs on either side of it.
TEST_F(WheelJobsTest, ADamagedLogRefusesToStartUnlessToldToSkipTheDamage) {
  TempDir dir;
  start({"--dir", dir.path(), "--fsync", "always"});
  {
    auto c = client();
    for (int i = 1; i <= 3; ++i) {
      ASSERT_EQ(c->ask("put 0 0 60 5\r\njob-" + std::to_string(i) + "\r\n"),
                "INSERTED " + std::to_string(i));
    }
  }
  ASSERT_EQ(server->stop(), 0);
  std::string segment;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().extension() == ".wjl") segment = e.path().string();
  }
  ASSERT_FALSE(segment.empty());
  std::string bytes;
  {
    std::FILE* f = std::fopen(segment.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
    std::fclose(f);
  }
  const std::size_t at = bytes.find("job-2");  // the second put's body: synced, mid-log
  ASSERT_NE(at, std::string::npos);
  {
    std::FILE* f = std::fopen(segment.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    std::fputc('J', f);
    std::fclose(f);
  }
  const auto [status, out] =
      wheel_test::run_to_exit("timeout 60 " + std::string(WHEEL_JOBS_PATH),
                              "--port 0 --log-level warn --dir " + dir.path());
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("corrupt record in " + segment), std::string::npos) << out;
  EXPECT_NE(out.find("--skip-corrupt"), std::string::npos) << out;
  start({"--dir", dir.path(), "--skip-corrupt"});
  auto c = client();
  EXPECT_EQ(c->ask("peek 1\r\n"), "FOUND 1 5");
  EXPECT_EQ(c->bytes(7), "job-1\r\n");
  EXPECT_EQ(c->ask("peek 2\r\n"), "NOT_FOUND");
  EXPECT_EQ(c->ask("peek 3\r\n"), "FOUND 3 5");
  EXPECT_EQ(c->bytes(7), "job-3\r\n");
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

TEST(WheelJobsOptionsTest, TheConsoleAnywhereButLoopbackNeedsAToken) {
  std::string err;
  EXPECT_EQ(run_options("--http-port 9 --http-host 0.0.0.0", &err), 2);
  EXPECT_NE(err.find("needs --http-token"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_options("--http-port 9 --http-token short", &err), 2);
  EXPECT_NE(err.find("--http-token: must be 16 to 256"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_options("--http-read-only", &err), 2);
  EXPECT_NE(err.find("needs --http-port"), std::string::npos) << err;
}

}  // namespace
