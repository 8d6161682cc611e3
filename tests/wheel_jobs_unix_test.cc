// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --host unix:PATH (beanstalkd's -l unix:PATH), end to end: the program listens on a
// unix-domain socket with the mode of --unix-mode, a beanstalk client talks to it there, a
// stale socket file is replaced, a second server on a live one exits 1 naming the path, and the
// file is gone once the server exits on SIGTERM. Option errors exit 2 with the range.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/beanstalk_client.h"
#include "support/child_process.h"

namespace {

namespace fs = std::filesystem;
using wheel_test::Client;
using wheel_test::ServerProcess;

class WheelJobsUnixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/wheel-jobs-unix-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// What a server that died leaves: a socket file nobody listens on.
void leave_stale_socket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
}

int run_status(const std::string& args, std::string* out) {
  // Bounded: a server that listens when it should have refused fails the test, not hangs it.
  FILE* pipe =
      popen(("timeout 20 " + std::string(WHEEL_JOBS_PATH) + " " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out->append(buf);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(WheelJobsUnixTest, ServesOnAUnixSocketReplacingAStaleOneAndRemovesItAtExit) {
  const std::string path = dir_ + "/jobs.sock";
  leave_stale_socket(path);
  ServerProcess server(
      {WHEEL_JOBS_PATH, "--host", "unix:" + path, "--unix-mode", "600", "--log-level", "warn"});
  ASSERT_EQ(server.where(), "unix:" + path);
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Client c(path);
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.ask("put 0 0 60 5\r\nhello\r\n"), "INSERTED 1");
  EXPECT_EQ(c.ask("reserve\r\n"), "RESERVED 1 5");
  EXPECT_EQ(c.bytes(7), "hello\r\n");
  EXPECT_EQ(c.ask("delete 1\r\n"), "DELETED");

  // A second server on the live socket is refused and leaves the file to the first.
  std::string err;
  EXPECT_EQ(run_status("--host unix:" + path, &err), 1);
  EXPECT_NE(err.find("a server is listening on " + path), std::string::npos) << err;
  EXPECT_EQ(c.ask("list-tube-used\r\n"), "USING default");

  EXPECT_EQ(server.stop(), 0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));
}

TEST_F(WheelJobsUnixTest, BadModesAndPathsExitTwoNamingTheOption) {
  std::string err;
  EXPECT_EQ(run_status("--host unix:" + dir_ + "/a.sock --unix-mode 800", &err), 2);
  EXPECT_NE(err.find("--unix-mode: must be an octal mode from 0 to 777"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(run_status("--host unix:/" + std::string(200, 'x'), &err), 2);
  EXPECT_NE(err.find("--host: unix socket path"), std::string::npos) << err;
  EXPECT_NE(err.find("1 to 107 bytes"), std::string::npos) << err;
}

}  // namespace
