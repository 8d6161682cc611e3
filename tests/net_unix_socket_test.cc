// SPDX-License-Identifier: Apache-2.0
// TcpServer on a unix-domain socket ("unix:PATH", wheel/net/listen_socket.h): it listens there
// with the stated mode, replaces a stale socket file but refuses one a server answers on and
// leaves any other file alone, and removes its file when it stops listening.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "wheel/net/listen_socket.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"

namespace wheel::net {
namespace {

namespace fs = std::filesystem;

// Echoes each line as "LINE <line> from <peer>".
class Echo : public ConnectionHandler {
 public:
  void on_line(Connection& c, std::string_view line) override {
    c.send("LINE " + std::string(line) + " from " + c.peer() + "\n");
  }
};

// A fresh directory, removed with what is left in it.
class UnixSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/wheel-unix-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return dir_ + "/" + name; }

  // A server listening at `path` with `mode`, its loop run on a thread until stop().
  struct Running {
    Running(const std::string& path, std::uint32_t mode, Echo& echo) {
      EXPECT_EQ(uv_loop_init(&loop), 0);
      TcpServerOptions o;
      o.host = "unix:" + path;
      o.unix_mode = mode;
      server = std::make_unique<TcpServer>(&loop, o, echo);
      EXPECT_EQ(server->listen(), 0);
      thread = std::thread([this] { uv_run(&loop, UV_RUN_DEFAULT); });
    }
    ~Running() { stop(); }
    void stop() {
      if (!server) return;
      server->shutdown();
      thread.join();
      server.reset();
      EXPECT_EQ(uv_loop_close(&loop), 0);
    }
    uv_loop_t loop;
    std::unique_ptr<TcpServer> server;
    std::thread thread;
  };

  // Connects to `path`; -1 when nobody accepts.
  static int connect_to(const std::string& path) {
    const sockaddr_storage addr = resolve_address("unix:" + path, 0);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), address_length(addr)) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  // Sends `line` on `fd` and reads the reply line (bounded: 10 s).
  static std::string ask(int fd, const std::string& line) {
    EXPECT_EQ(::send(fd, line.data(), line.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(line.size()));
    std::string got;
    char c = 0;
    pollfd p{fd, POLLIN, 0};
    while (got.find('\n') == std::string::npos && ::poll(&p, 1, 10'000) == 1 &&
           ::recv(fd, &c, 1, 0) == 1) {
      got.push_back(c);
    }
    return got;
  }

  std::string dir_;
  Echo echo_;
};

TEST_F(UnixSocketTest, ListensWithItsModeServesAndRemovesItsFileOnShutdown) {
  const std::string sock = path("s.sock");
  Running running(sock, 0600, echo_);
  struct stat st {};
  ASSERT_EQ(::lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const int fd = connect_to(sock);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ask(fd, "hi\n"), "LINE hi from unix\n");
  ::close(fd);
  running.stop();
  EXPECT_FALSE(fs::exists(fs::symlink_status(sock)));
}

TEST_F(UnixSocketTest, AStaleSocketFileIsReplaced) {
  const std::string sock = path("stale.sock");
  {  // a server that died: its file stays, nothing listens
    const BoundUnixSocket dead = bind_unix_socket(sock, 0600);
    ::close(dead.fd);
  }
  ASSERT_TRUE(fs::exists(fs::symlink_status(sock)));
  Running running(sock, 0660, echo_);
  const int fd = connect_to(sock);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ask(fd, "again\n"), "LINE again from unix\n");
  ::close(fd);
}

TEST_F(UnixSocketTest, ALiveSocketIsRefusedNamingThePathAndKeepsServing) {
  const std::string sock = path("live.sock");
  Running first(sock, 0600, echo_);
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    TcpServerOptions o;
    o.host = "unix:" + sock;
    TcpServer second(&loop, o, echo_);
    try {
      second.listen();
      ADD_FAILURE() << "a second server listened on a live socket";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EADDRINUSE);
      EXPECT_NE(std::string(e.what()).find(sock), std::string::npos) << e.what();
    }
    second.shutdown();
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
  const int fd = connect_to(sock);  // the first still has its file and serves
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ask(fd, "still\n"), "LINE still from unix\n");
  ::close(fd);
}

TEST_F(UnixSocketTest, AFileThatIsNotASocketIsLeftAlone) {
  const std::string file = path("data.txt");
  std::ofstream(file) << "keep me";
  try {
    bind_unix_socket(file, 0600);
    ADD_FAILURE() << "bound over a regular file";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EEXIST);
  }
  std::ifstream in(file);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "keep me");
}

TEST_F(UnixSocketTest, BadPathsAndModesAreRefused) {
  EXPECT_THROW(bind_unix_socket("", 0600), std::invalid_argument);
  EXPECT_THROW(bind_unix_socket(std::string(kMaxUnixPath + 1, 'x'), 0600), std::invalid_argument);
  EXPECT_THROW(bind_unix_socket(path("m.sock"), 01000), std::invalid_argument);
  TcpServerOptions o;
  o.host = "unix:" + path("v.sock");
  o.unix_mode = 01000;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o.unix_mode = 0600;
  o.reuse_port = true;
  EXPECT_THROW(validate(o), std::invalid_argument);
  EXPECT_EQ(format_host_port(o.host, 0), o.host);
}

}  // namespace
}  // namespace wheel::net
