// SPDX-License-Identifier: Apache-2.0
// LineFramer and LineBuffer (wheel/net/line_framer.h): splitting, "\r", limits, stopping.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "wheel/net/line_framer.h"

namespace wheel::net {
namespace {

using Result = LineFramer::Result;

struct Collected {
  std::vector<std::string> lines;
  Result result = Result::kOk;
};

Collected feed_all(const LineFramer& framer, LineBuffer& partial,
                   const std::vector<std::string>& reads) {
  Collected out;
  for (const std::string& bytes : reads) {
    out.result = framer.feed(partial, bytes, [&](std::string_view line) {
      out.lines.emplace_back(line);
      return true;
    });
    if (out.result != Result::kOk) break;
  }
  return out;
}

TEST(LineFramer, SplitsOnNewlineAndStripsOneCarriageReturn) {
  LineFramer framer(100);
  LineBuffer partial;
  const auto got = feed_all(framer, partial, {"a\nb\r\n\r\nc\r\r\nd\re\n"});
  EXPECT_EQ(got.lines, (std::vector<std::string>{"a", "b", "", "c\r", "d\re"}));
  EXPECT_TRUE(partial.empty());
}

TEST(LineFramer, JoinsALineSplitAcrossReadsAndKeepsOnlyTheTail) {
  LineFramer framer(100);
  LineBuffer partial;
  auto got = feed_all(framer, partial, {"PI", "NG\r", "\nPO"});
  EXPECT_EQ(got.lines, (std::vector<std::string>{"PING"}));
  EXPECT_EQ(partial.view(), "PO");
  got = feed_all(framer, partial, {"NG\n"});
  EXPECT_EQ(got.lines, (std::vector<std::string>{"PONG"}));
  EXPECT_TRUE(partial.empty()) << "the heap block is freed once the line completes";
}

TEST(LineFramer, ALineOfExactlyMaxLinePassesWithOrWithoutCarriageReturn) {
  LineFramer framer(4);
  LineBuffer partial;
  EXPECT_EQ(feed_all(framer, partial, {"abcd\n", "abcd\r\n"}).lines.size(), 2u);
  // Incomplete: "abcd\r" may still become "abcd\r\n".
  EXPECT_EQ(feed_all(framer, partial, {"abcd\r"}).result, Result::kOk);
  EXPECT_EQ(feed_all(framer, partial, {"\n"}).lines, (std::vector<std::string>{"abcd"}));
}

TEST(LineFramer, ALongerLineIsReportedCompleteOrNot) {
  LineFramer framer(4);
  LineBuffer partial;
  EXPECT_EQ(feed_all(framer, partial, {"abcde\n"}).result, Result::kLineTooLong);
  EXPECT_EQ(feed_all(framer, partial, {"abcde"}).result, Result::kLineTooLong);
  EXPECT_TRUE(partial.empty());
  EXPECT_EQ(feed_all(framer, partial, {"ab", "cd", "e"}).result, Result::kLineTooLong);
  EXPECT_EQ(feed_all(framer, partial, {"abcd\r\r\n"}).result, Result::kLineTooLong);
  // Lines before the long one are delivered.
  const auto got = feed_all(framer, partial, {"ok\nabcdefgh"});
  EXPECT_EQ(got.lines, (std::vector<std::string>{"ok"}));
  EXPECT_EQ(got.result, Result::kLineTooLong);
}

// max_line + 1 wrapped to 0 in the framer this one replaced: every tail was "too long".
TEST(LineFramer, SizeMaxMeansNoLimitAndDoesNotWrap) {
  LineFramer framer(SIZE_MAX);
  LineBuffer partial;
  const auto got = feed_all(framer, partial, {"x", std::string(10000, 'y'), "\r", "\n"});
  EXPECT_EQ(got.result, Result::kOk);
  ASSERT_EQ(got.lines.size(), 1u);
  EXPECT_EQ(got.lines[0].size(), 10001u);
}

TEST(LineFramer, StopsWhenTheCallbackSaysSo) {
  LineFramer framer(100);
  LineBuffer partial;
  std::vector<std::string> lines;
  const Result r = framer.feed(partial, "QUIT\nPING\npart", [&](std::string_view line) {
    lines.emplace_back(line);
    return false;
  });
  EXPECT_EQ(r, Result::kStopped);
  EXPECT_EQ(lines, (std::vector<std::string>{"QUIT"}));
  EXPECT_TRUE(partial.empty());
}

TEST(LineFramer, ZeroMaxLineIsRejected) {
  EXPECT_THROW(LineFramer{0}, std::invalid_argument);
}

TEST(LineBuffer, IsOnePointerAndGrows) {
  EXPECT_EQ(sizeof(LineBuffer), sizeof(void*));
  LineBuffer b;
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    const std::string piece = std::to_string(i);
    b.append(piece);
    expected += piece;
  }
  EXPECT_EQ(b.view(), expected);
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
}

}  // namespace
}  // namespace wheel::net
