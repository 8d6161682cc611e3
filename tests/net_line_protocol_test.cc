// SPDX-License-Identifier: Apache-2.0
// The line protocol parser of net/ (net/src/line_protocol.h).
#include <gtest/gtest.h>

#include "line_protocol.h"

namespace wheel::server {
namespace {

TEST(LineProtocol, RecognisesEachCommandExactly) {
  EXPECT_EQ(parse_command("PING").kind, Command::kPing);
  EXPECT_EQ(parse_command("PING\r").kind, Command::kPing);
  EXPECT_EQ(parse_command("PONG").kind, Command::kPong);
  EXPECT_EQ(parse_command("").kind, Command::kEmpty);
  EXPECT_EQ(parse_command("\r").kind, Command::kEmpty);
  EXPECT_EQ(parse_command("STATS").kind, Command::kStats);
  EXPECT_EQ(parse_command("QUIT").kind, Command::kQuit);
  EXPECT_EQ(parse_command("ping").kind, Command::kUnknown);
  EXPECT_EQ(parse_command("PING ").kind, Command::kUnknown);
  EXPECT_EQ(parse_command("PING\r\r").kind, Command::kUnknown);
  EXPECT_EQ(parse_command(std::string_view("PING\0", 5)).kind, Command::kUnknown);
  EXPECT_EQ(parse_command("DELAYED").kind, Command::kUnknown);
}

TEST(LineProtocol, DelayCarriesMillisecondsAndText) {
  const Command c = parse_command("DELAY 250 hello  world\r");
  EXPECT_EQ(c.kind, Command::kDelay);
  EXPECT_EQ(c.delay_ms, 250u);
  EXPECT_EQ(c.text, "hello  world");
  EXPECT_EQ(parse_command("DELAY 1").text, "");
  EXPECT_EQ(parse_command("DELAY 86400000 x").delay_ms, 86'400'000u);
}

TEST(LineProtocol, DelayOutsideItsRangeOrMalformedIsBad) {
  for (const char* line :
       {"DELAY", "DELAY ", "DELAY 0 x", "DELAY 86400001 x", "DELAY x", "DELAY -1 x", "DELAY 1x",
        "DELAY  1 x", "DELAY 18446744073709551617 x"}) {
    EXPECT_EQ(parse_command(line).kind, Command::kBadDelay) << line;
  }
}

}  // namespace
}  // namespace wheel::server
