// SPDX-License-Identifier: Apache-2.0
// RequestParser (wheel/jobs/beanstalk_protocol.h): every command of beanstalkd 1.12, every
// error the parser produces, the 224-byte line limit, put bodies, number limits, decimal
// durations, chunked feeding and bounded memory.
#include "wheel/jobs/beanstalk/beanstalk_protocol.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using namespace wheel::jobs;
using namespace wheel::jobs::beanstalk;
using std::chrono::milliseconds;

// Every request in `bytes`, fed `chunk` bytes at a time (0 = all at once).
std::vector<Request> parse_all(std::string_view bytes, std::size_t chunk = 0,
                               std::uint32_t max_job_size = kDefaultMaxJobSize) {
  RequestParser parser(max_job_size);
  std::vector<Request> requests;
  std::size_t offset = 0;
  const std::size_t step = chunk == 0 ? bytes.size() : chunk;
  while (offset < bytes.size()) {
    std::string_view piece = bytes.substr(offset, step);
    offset += piece.size();
    while (!piece.empty()) {  // bounded: every round consumes at least one byte
      RequestParser::Step result = parser.feed(piece);
      EXPECT_GT(result.consumed, 0u);
      if (result.consumed == 0) return requests;
      piece.remove_prefix(result.consumed);
      if (result.request) requests.push_back(std::move(*result.request));
    }
  }
  return requests;
}

// The one request a line (with "\r\n" added) parses to.
Request one(std::string_view line) {
  const std::vector<Request> requests = parse_all(std::string(line) + "\r\n");
  EXPECT_EQ(requests.size(), 1u) << line;
  return requests.empty() ? Request{ProtocolError::kBadFormat} : requests.front();
}

const Request kBadFormat{ProtocolError::kBadFormat};
const Request kUnknown{ProtocolError::kUnknownCommand};
const Request kExpectedCrlf{ProtocolError::kExpectedCrlf};
const Request kJobTooBig{ProtocolError::kJobTooBig};

TEST(BeanstalkProtocol, EveryCommandParsesToItsRequest) {
  EXPECT_EQ(parse_all("put 10 20 30 5\r\nhello\r\n"),
            (std::vector<Request>{Put{10, milliseconds(20'000), milliseconds(30'000), "hello"}}));
  EXPECT_EQ(one("use emails"), (Request{Use{"emails"}}));
  EXPECT_EQ(one("reserve"), (Request{Reserve{}}));
  EXPECT_EQ(one("reserve-with-timeout 7"), (Request{ReserveWithTimeout{milliseconds(7000)}}));
  EXPECT_EQ(one("reserve-job 42"), (Request{ReserveJob{42}}));
  EXPECT_EQ(one("delete 42"), (Request{Delete{42}}));
  EXPECT_EQ(one("release 42 7 3"), (Request{Release{42, 7, milliseconds(3000)}}));
  EXPECT_EQ(one("bury 42 9"), (Request{Bury{42, 9}}));
  EXPECT_EQ(one("touch 42"), (Request{Touch{42}}));
  EXPECT_EQ(one("watch a"), (Request{Watch{"a"}}));
  EXPECT_EQ(one("ignore a"), (Request{Ignore{"a"}}));
  EXPECT_EQ(one("peek 42"), (Request{Peek{42}}));
  EXPECT_EQ(one("peek-ready"), (Request{PeekReady{}}));
  EXPECT_EQ(one("peek-delayed"), (Request{PeekDelayed{}}));
  EXPECT_EQ(one("peek-buried"), (Request{PeekBuried{}}));
  EXPECT_EQ(one("kick 100"), (Request{Kick{100}}));
  EXPECT_EQ(one("kick-job 42"), (Request{KickJob{42}}));
  EXPECT_EQ(one("stats-job 42"), (Request{StatsJob{42}}));
  EXPECT_EQ(one("stats-tube default"), (Request{StatsTube{"default"}}));
  EXPECT_EQ(one("stats"), (Request{Stats{}}));
  EXPECT_EQ(one("list-tubes"), (Request{ListTubes{}}));
  EXPECT_EQ(one("list-tube-used"), (Request{ListTubeUsed{}}));
  EXPECT_EQ(one("list-tubes-watched"), (Request{ListTubesWatched{}}));
  EXPECT_EQ(one("quit"), (Request{Quit{}}));
  EXPECT_EQ(one("pause-tube default 60"), (Request{PauseTube{"default", milliseconds(60'000)}}));
}

TEST(BeanstalkProtocol, ArgumentsMaySitAfterSeveralSpacesAsInBeanstalkd) {
  EXPECT_EQ(one("delete   42"), (Request{Delete{42}}));
  EXPECT_EQ(one("release 1  2   3"), (Request{Release{1, 2, milliseconds(3000)}}));
  EXPECT_EQ(one("pause-tube  t  1"), (Request{PauseTube{"t", milliseconds(1000)}}));
}

TEST(BeanstalkProtocol, UnknownWordsAreUnknownCommand) {
  EXPECT_EQ(one("fly 1"), kUnknown);
  EXPECT_EQ(one(""), kUnknown);
  EXPECT_EQ(one("PUT 1 2 3 4"), kUnknown);  // commands are case-sensitive, as in beanstalkd
  EXPECT_EQ(one("reserve-with"), kUnknown);
  EXPECT_EQ(one("delete\t1"), kUnknown);  // only spaces separate words
}

// beanstalkd 1.12 finds these by the prefix "put " (with its space): the bare word is no command
// there (tests/jobs_beanstalk_yaml_conformance_test.cc asks beanstalkd itself). With a space
// they are commands with bad arguments.
TEST(BeanstalkProtocol, ABareCommandWordWithoutItsArgumentsIsUnknownAsInBeanstalkd) {
  for (const char* bare : {"put", "peek", "delete", "release", "bury", "kick", "kick-job", "touch",
                           "use", "watch", "ignore"}) {
    EXPECT_EQ(one(bare), kUnknown) << bare;
    EXPECT_EQ(one(std::string(bare) + " "), kBadFormat) << bare;
  }
  // beanstalkd reads these as "stats" or "reserve" with a bad line, or (pause-tube) as itself.
  for (const char* bare :
       {"stats-job", "stats-tube", "reserve-with-timeout", "reserve-job", "pause-tube"}) {
    EXPECT_EQ(one(bare), kBadFormat) << bare;
  }
}

TEST(BeanstalkProtocol, MalformedArgumentsAreBadFormat) {
  for (const char* line : {
           "put ",
           "put 1 2 3",
           "put 1 2 3 4 5",
           "put a 2 3 4",
           "put -1 2 3 4",
           "put +1 2 3 4",
           "put 1 2 3 4 ",
           "reserve ",
           "reserve 5",
           "reserve-with-timeout",
           "reserve-with-timeout x",
           "delete ",
           "delete x",
           "delete 1 2",
           "delete 1x",
           "delete -1",
           "release 1 2",
           "release 1 2 3 4",
           "bury 1",
           "touch ",
           "peek ",
           "peek-ready 1",
           "kick ",
           "kick x",
           "kick-job ",
           "stats-job",
           "stats 1",
           "list-tubes x",
           "list-tube-used x",
           "list-tubes-watched x",
           "quit now",
           "pause-tube",
           "pause-tube t",
           "pause-tube t x",
           "use ",
           "use ",
           "use  a",
           "use a ",
           "use a b",
           "watch ",
           "ignore ",
           "stats-tube",
       }) {
    EXPECT_EQ(one(line), kBadFormat) << line;
  }
}

TEST(BeanstalkProtocol, ALineWithANulIsBadFormat) {
  EXPECT_EQ(one(std::string("delete 1\0", 9)), kBadFormat);
  EXPECT_EQ(one(std::string("use a\0b", 7)), kBadFormat);
}

TEST(BeanstalkProtocol, TubeNamesFollowBeanstalkdsAlphabetAndLimit) {
  const std::string all = "AZaz09-+/;.$_()";
  EXPECT_EQ(one("use " + all), (Request{Use{all}}));
  EXPECT_EQ(one("watch x-"), (Request{Watch{"x-"}}));
  const std::string longest(kMaxTubeNameBytes, 'n');
  EXPECT_EQ(one("use " + longest), (Request{Use{longest}}));
  EXPECT_EQ(one("stats-tube " + longest), (Request{StatsTube{longest}}));
  EXPECT_EQ(one("use " + longest + "n"), kBadFormat);  // 201 bytes
  EXPECT_EQ(one("watch " + longest + "n"), kBadFormat);
  EXPECT_EQ(one("pause-tube " + longest + "n 1"), kBadFormat);
  for (const char* bad : {"-a", "a#", "a b", "a\"", "a:b", "a*", "\xC3\xA9"}) {
    EXPECT_EQ(one(std::string("use ") + bad), kBadFormat) << bad;
    EXPECT_FALSE(is_valid_tube_name(bad)) << bad;
  }
  EXPECT_FALSE(is_valid_tube_name(""));
  EXPECT_TRUE(is_valid_tube_name(longest));
}

TEST(BeanstalkProtocol, NumbersAtTheirLimitsParseAndPastThemAreBadFormat) {
  EXPECT_EQ(one("delete 18446744073709551615"), (Request{Delete{UINT64_MAX}}));
  EXPECT_EQ(one("delete 18446744073709551616"), kBadFormat);
  EXPECT_EQ(one("delete 99999999999999999999999999999999999999"), kBadFormat);
  EXPECT_EQ(one("bury 1 4294967295"), (Request{Bury{1, UINT32_MAX}}));
  EXPECT_EQ(one("bury 1 4294967296"), kBadFormat);
  const milliseconds longest(4'294'967'295'000);
  EXPECT_EQ(one("release 1 0 4294967295"), (Request{Release{1, 0, longest}}));
  EXPECT_EQ(one("release 1 0 4294967296"), kBadFormat);
  EXPECT_EQ(one("pause-tube t 4294967295"), (Request{PauseTube{"t", longest}}));
  EXPECT_EQ(one("pause-tube t 4294967296"), kBadFormat);
  EXPECT_EQ(one("reserve-with-timeout 2147483647"),
            (Request{ReserveWithTimeout{milliseconds(2'147'483'647'000)}}));
  EXPECT_EQ(one("reserve-with-timeout 2147483648"), kBadFormat);
  EXPECT_EQ(one("kick 18446744073709551615"), (Request{Kick{UINT64_MAX}}));
  EXPECT_EQ(one("kick 18446744073709551616"), kBadFormat);
  EXPECT_EQ(parse_all("put 4294967295 4294967295 4294967295 0\r\n\r\n"),
            (std::vector<Request>{Put{UINT32_MAX, longest, longest, ""}}));
  EXPECT_EQ(one("put 4294967296 0 1 0"), kBadFormat);
  EXPECT_EQ(one("put 0 4294967296 1 0"), kBadFormat);
  EXPECT_EQ(one("put 0 0 4294967296 0"), kBadFormat);
  EXPECT_EQ(one("put 0 0 1 4294967296"), kBadFormat);
  EXPECT_EQ(one("delete 007"), (Request{Delete{7}}));  // leading zeros: strtoumax reads them too
}

TEST(BeanstalkProtocol, DurationsTakeUpToThreeDecimals) {
  EXPECT_EQ(parse_all("put 0 0.250 60 5\r\nhello\r\n"),
            (std::vector<Request>{Put{0, milliseconds(250), milliseconds(60'000), "hello"}}));
  EXPECT_EQ(parse_all("put 0 1.5 0.02 0\r\n\r\n"),
            (std::vector<Request>{Put{0, milliseconds(1500), milliseconds(20), ""}}));
  EXPECT_EQ(one("release 3 1 0.001"), (Request{Release{3, 1, milliseconds(1)}}));
  EXPECT_EQ(one("pause-tube t 2.75"), (Request{PauseTube{"t", milliseconds(2750)}}));
  EXPECT_EQ(one("reserve-with-timeout 0.5"), (Request{ReserveWithTimeout{milliseconds(500)}}));
  EXPECT_EQ(one("release 1 0 4294967294.999"),
            (Request{Release{1, 0, milliseconds(4'294'967'294'999)}}));
  EXPECT_EQ(one("release 1 0 4294967295.000"),
            (Request{Release{1, 0, milliseconds(4'294'967'295'000)}}));
  EXPECT_EQ(one("release 1 0 4294967295.001"), kBadFormat);
  EXPECT_EQ(one("reserve-with-timeout 2147483647.5"), kBadFormat);
  for (const char* bad :
       {"release 1 0 0.0001", "release 1 0 1.", "release 1 0 .5", "release 1 0 1.2.3",
        "release 1 0 1,5", "release 1 0 1e3", "release 1 0 -0.5"}) {
    EXPECT_EQ(one(bad), kBadFormat) << bad;
  }
  // Priorities, ids, counts and byte counts stay integers.
  EXPECT_EQ(one("bury 1 1.5"), kBadFormat);
  EXPECT_EQ(one("delete 1.0"), kBadFormat);
  EXPECT_EQ(one("kick 1.0"), kBadFormat);
  EXPECT_EQ(one("put 0 0 1 1.0"), kBadFormat);
}

// "pause-tube <200-byte name> 4294967295\r\n" is 224 bytes: beanstalkd sized its line for it.
TEST(BeanstalkProtocol, ALineOf224BytesIsAcceptedAndOneMoreIsBadFormat) {
  const std::string name(kMaxTubeNameBytes, 't');
  const std::string longest = "pause-tube " + name + " 4294967295\r\n";
  ASSERT_EQ(longest.size(), kMaxLineBytes);
  EXPECT_EQ(parse_all(longest),
            (std::vector<Request>{PauseTube{name, milliseconds(4'294'967'295'000)}}));
  const std::string too_long = "pause-tube " + name + " 04294967295\r\n";  // valid but 225 bytes
  ASSERT_EQ(too_long.size(), kMaxLineBytes + 1);
  EXPECT_EQ(parse_all(too_long + "stats\r\n"), (std::vector<Request>{kBadFormat, Stats{}}));
}

TEST(BeanstalkProtocol, ALongLineIsDiscardedToItsEndAndAnsweredOnce) {
  RequestParser parser;
  const std::string junk(10'000, 'x');
  for (int i = 0; i < 100; ++i) {  // a megabyte of one line: held bytes stay under the limit
    const auto step = parser.feed(junk);
    EXPECT_EQ(step.consumed, junk.size());
    EXPECT_FALSE(step.request.has_value());
    EXPECT_LE(parser.buffered_bytes(), kMaxLineBytes);
    EXPECT_TRUE(parser.mid_request());
  }
  // The "\r\n" split across two feeds still ends the line.
  EXPECT_FALSE(parser.feed("\r").request.has_value());
  const auto end = parser.feed("\nstats\r\n");
  EXPECT_EQ(end.consumed, 1u);
  EXPECT_EQ(end.request, kBadFormat);
  const auto next = parser.feed("stats\r\n");
  EXPECT_EQ(next.request, (Request{Stats{}}));
  EXPECT_FALSE(parser.mid_request());
}

TEST(BeanstalkProtocol, ALineTooLongAtItsCarriageReturnEndsAtTheNextLineFeed) {
  // 223 bytes and "\r" fill the line buffer: the "\r" is the 224th byte, so the line with its
  // "\n" is 225 bytes (too long), and that "\n" in the next read ends it.
  RequestParser parser;
  const std::string head = std::string(kMaxLineBytes - 1, 'x') + "\r";
  const auto first = parser.feed(head);
  EXPECT_EQ(first.consumed, head.size());
  EXPECT_FALSE(first.request.has_value());
  const auto end = parser.feed("\nstats\r\n");
  EXPECT_EQ(end.consumed, 1u);
  EXPECT_EQ(end.request, kBadFormat);
  EXPECT_EQ(parser.feed("stats\r\n").request, Request{Stats{}});
}

TEST(BeanstalkProtocol, OnlyCrLfEndsALine) {
  // A bare "\n" is part of the line (beanstalkd looks for "\r\n" only).
  EXPECT_EQ(parse_all("stats\nstats\r\n"), (std::vector<Request>{kUnknown}));
  EXPECT_EQ(parse_all("delete 1\r\r\n"), (std::vector<Request>{kBadFormat}));
}

TEST(BeanstalkProtocol, BodyWithoutCrLfIsExpectedCrlfAndTheRestIsTheNextCommand) {
  // Announced 3, sent 5: "hel" + "lo" -> EXPECTED_CRLF; then "\r\n" is an empty line.
  EXPECT_EQ(parse_all("put 0 0 1 3\r\nhello\r\nstats\r\n"),
            (std::vector<Request>{kExpectedCrlf, kUnknown, Stats{}}));
  // Announced 5, sent 5 and no CRLF but "xx".
  EXPECT_EQ(parse_all("put 0 0 1 5\r\nhelloxxstats\r\n"),
            (std::vector<Request>{kExpectedCrlf, Stats{}}));
  // Both trailer bytes count: "X\n" and "\rX" are not "\r\n".
  EXPECT_EQ(parse_all("put 0 0 1 3\r\nabcX\nstats\r\n"),
            (std::vector<Request>{kExpectedCrlf, Stats{}}));
  EXPECT_EQ(parse_all("put 0 0 1 3\r\nabc\rXstats\r\n"),
            (std::vector<Request>{kExpectedCrlf, Stats{}}));
  // Announced 7, the body ends early: the CRLF is taken as body and the next line's bytes too.
  EXPECT_EQ(parse_all("put 0 0 1 7\r\nhello\r\nstats\r\n"),
            (std::vector<Request>{kExpectedCrlf, kUnknown}));
}

TEST(BeanstalkProtocol, BodiesMayHoldAnyBytes) {
  const std::string body("a\r\nb\0c\r\n", 8);
  EXPECT_EQ(parse_all("put 1 0 1 8\r\n" + body + "\r\n"),
            (std::vector<Request>{Put{1, milliseconds(0), milliseconds(1000), body}}));
  EXPECT_EQ(parse_all("put 1 0 1 0\r\n\r\n"),
            (std::vector<Request>{Put{1, milliseconds(0), milliseconds(1000), ""}}));
}

TEST(BeanstalkProtocol, JobTooBigDiscardsTheBodyThenAnswers) {
  const std::string body(101, 'b');
  // The limit itself is allowed; one byte more is too big.
  EXPECT_EQ(
      parse_all("put 0 0 1 100\r\n" + std::string(100, 'b') + "\r\n", 0, 100),
      (std::vector<Request>{Put{0, milliseconds(0), milliseconds(1000), std::string(100, 'b')}}));
  EXPECT_EQ(parse_all("put 0 0 1 101\r\n" + body + "\r\nstats\r\n", 0, 100),
            (std::vector<Request>{kJobTooBig, Stats{}}));
  // Byte by byte: JOB_TOO_BIG comes only once the body and its CRLF are gone.
  RequestParser parser(100);
  const std::string input = "put 0 0 1 101\r\n" + body + "\r\n";
  const std::size_t line_bytes = input.find('\n') + 1;
  for (std::size_t i = 0; i + 1 < input.size(); ++i) {
    const auto step = parser.feed(input.substr(i, 1));
    ASSERT_FALSE(step.request.has_value()) << i;
    if (i + 1 >= line_bytes) {
      EXPECT_EQ(parser.buffered_bytes(), 0u) << "a discarded body is counted, not stored";
    }
  }
  EXPECT_EQ(parser.feed("\n").request, kJobTooBig);
  // The largest announcement (2^32-1 bytes) is discarded without being stored.
  RequestParser big(100);
  EXPECT_FALSE(big.feed("put 0 0 1 4294967295\r\n").request.has_value());
  EXPECT_EQ(big.feed(std::string(1 << 20, 'x')).consumed, (std::size_t{1} << 20));
  EXPECT_EQ(big.buffered_bytes(), 0u);
}

TEST(BeanstalkProtocol, MaxJobSizeIsCheckedAtConstruction) {
  EXPECT_THROW(RequestParser(kMaxMaxJobSize + 1), std::invalid_argument);
  EXPECT_EQ(RequestParser(kMaxMaxJobSize).max_job_size(), kMaxMaxJobSize);
  EXPECT_EQ(RequestParser().max_job_size(), 65'535u);
}

TEST(BeanstalkProtocol, ABodyGrowsWithTheBytesReceivedNotTheAnnouncement) {
  RequestParser parser(kMaxMaxJobSize);
  EXPECT_FALSE(parser.feed("put 0 0 1 1073741824\r\n").request.has_value());
  EXPECT_TRUE(parser.mid_request());
  EXPECT_LT(parser.buffered_bytes(), 1024u);
  parser.feed(std::string(10'000, 'x'));
  EXPECT_LE(parser.buffered_bytes(), 2u * 10'000);
  parser.reset();
  EXPECT_FALSE(parser.mid_request());
  EXPECT_EQ(parser.feed("stats\r\n").request, (Request{Stats{}}));
}

TEST(BeanstalkProtocol, FeedStopsRightAfterEachRequest) {
  RequestParser parser;
  const std::string input = "use a\r\nput 0 0 1 2\r\nhi\r\nreserve\r\n";
  std::string_view rest = input;
  auto step = parser.feed(rest);
  EXPECT_EQ(step.consumed, 7u);
  EXPECT_EQ(step.request, (Request{Use{"a"}}));
  rest.remove_prefix(step.consumed);
  step = parser.feed(rest);
  EXPECT_EQ(step.consumed, 17u);
  EXPECT_EQ(step.request, (Request{Put{0, milliseconds(0), milliseconds(1000), "hi"}}));
  rest.remove_prefix(step.consumed);
  step = parser.feed(rest);
  EXPECT_EQ(step.request, (Request{Reserve{}}));
  EXPECT_EQ(step.consumed, rest.size());
  EXPECT_EQ(parser.feed("").consumed, 0u);
}

// A script with every command, every error and bodies of several sizes.
std::string mixed_script() {
  std::string s;
  s += "use jobs\r\nput 5 0.5 60 11\r\nhello world\r\nwatch jobs\r\nignore default\r\n";
  s += "reserve\r\nreserve-with-timeout 3\r\nreserve-job 1\r\ntouch 1\r\nrelease 1 2 0.25\r\n";
  s += "bury 1 3\r\nkick 10\r\nkick-job 1\r\npeek 1\r\npeek-ready\r\npeek-delayed\r\n";
  s += "peek-buried\r\nstats-job 1\r\nstats-tube jobs\r\nstats\r\nlist-tubes\r\n";
  s += "list-tube-used\r\nlist-tubes-watched\r\npause-tube jobs 1.5\r\ndelete 1\r\n";
  s += "put 0 0 1 300\r\n" + std::string(300, 'z') + "\r\n";
  s += "bogus\r\ndelete x\r\nput 0 0 1 2\r\nabc\r\n";
  s += std::string(500, 'L') + "\r\n";
  s += "put 0 0 1 70000\r\n" + std::string(70'000, 'q') + "\r\n";
  s += "put 1 2 3 0\r\n\r\nquit\r\n";
  return s;
}

TEST(BeanstalkProtocol, ChunkedFeedingEqualsOneShot) {
  const std::string script = mixed_script();
  const std::vector<Request> whole = parse_all(script);
  ASSERT_EQ(whole.size(), 32u);
  EXPECT_EQ(whole[25], kUnknown);
  EXPECT_EQ(whole[26], kBadFormat);
  EXPECT_EQ(whole[27], kExpectedCrlf);
  EXPECT_EQ(whole[28], kBadFormat);
  EXPECT_EQ(whole[29], kJobTooBig);
  EXPECT_EQ(whole.back(), (Request{Quit{}}));
  EXPECT_EQ(parse_all(script, 1), whole);
  for (std::size_t chunk : {2, 3, 7, 223, 224, 225, 4096}) {
    EXPECT_EQ(parse_all(script, chunk), whole) << chunk;
  }
  // Random cut points.
  std::mt19937 random(19);
  for (int round = 0; round < 50; ++round) {
    RequestParser parser;
    std::vector<Request> requests;
    std::string_view rest = script;
    for (int guard = 0; !rest.empty() && guard < 1'000'000; ++guard) {
      const std::size_t cut = std::uniform_int_distribution<std::size_t>(1, 300)(random);
      std::string_view piece = rest.substr(0, cut);
      rest.remove_prefix(piece.size());
      while (!piece.empty()) {
        auto step = parser.feed(piece);
        ASSERT_GT(step.consumed, 0u);
        piece.remove_prefix(step.consumed);
        if (step.request) requests.push_back(std::move(*step.request));
      }
    }
    EXPECT_EQ(requests, whole) << "round " << round;
  }
}

}  // namespace
