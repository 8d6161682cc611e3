// SPDX-License-Identifier: Apache-2.0
// examples/idle_echo.cc end to end: it echoes, closes a silent client with "BYE idle" after its
// idle time, and — the point of the example — its process ends once its last client has gone,
// which it does only if the program closes its LoopTimer (an open one keeps uv_run() going).
// ServerProcess starts the idle-echo binary (WHEEL_SERVER_PATH names it).
#include <gtest/gtest.h>

#include <string>

#include "net_test_support.h"

namespace wheel::net::testing {
namespace {

TEST(IdleEchoExample, EchoesClosesTheSilentClientAndEndsWhenTheLastClientHasGone) {
  ServerProcess server({"0", "300", "2"});
  {
    Client talker(server.port());
    // The server reads "hello", its last input, after this: the close is due 300 ms after that.
    // (Timed from the echo's arrival instead, a test thread slow to read it made the idle time
    // look short.)
    const auto sent = Clock::now();
    talker.send("hello\n");
    EXPECT_EQ(talker.read_line(), "hello");
    EXPECT_EQ(talker.read_line(10s), "BYE idle");
    EXPECT_GE(ms_since(sent), 300 - 2) << "closed before its idle time (ms rounding of the loop)";
    EXPECT_EQ(talker.read_line(10s), "<eof>");
  }
  {
    Client leaver(server.port());
    leaver.send("bye\n");
    EXPECT_EQ(leaver.read_line(), "bye");
  }  // the second client leaves: the server shuts down
  const std::optional<int> status = server.wait_exit(10s);
  ASSERT_TRUE(status.has_value()) << "the loop did not end: a handle was left open";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

TEST(IdleEchoExample, BadArgumentsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"70000", "300", "1"}, {"0", "0", "1"}, {"0", "300"}}) {
    const auto [code, text] = run_server_to_exit(args);
    EXPECT_EQ(code, 2) << args[0] << ": " << text;
  }
}

}  // namespace
}  // namespace wheel::net::testing
