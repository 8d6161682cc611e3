// SPDX-License-Identifier: Apache-2.0
// apps/common: the one duration syntax of wheel-server and wheel-load, and the check of the
// wheel options against the timer's own rule.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "duration.h"
#include "idle_options.h"
#include "json_log.h"
#include "option_checks.h"
#include "wheel/hashed_wheel_timer.h"
#include "wheel_options.h"

namespace wheel::apps {
namespace {

using namespace std::chrono_literals;

TEST(Duration, ParsesIntegersWithAUnitOrABareZero) {
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("0s"), 0ms);
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("30s"), 30s);
  EXPECT_EQ(parse_duration("5m"), 5min);
  EXPECT_EQ(parse_duration("2m"), 2min);
  EXPECT_EQ(parse_duration("2h"), 2h);
}

TEST(Duration, RejectsEverythingElse) {
  for (const char* text : {"", "30", "s", "1.5s", "-1s", "+1s", " 1s", "1s ", "1 s", "1S", "1d",
                           "5sec", "1us", "99999999999999999999ms", "9223372036854775807h"}) {
    EXPECT_FALSE(parse_duration(text).has_value()) << text;
  }
}

TEST(Duration, AcceptsExactlyWhatFitsInNanoseconds) {
  const std::int64_t max_ms = std::chrono::nanoseconds::max().count() / 1'000'000;
  EXPECT_EQ(parse_duration(std::to_string(max_ms) + "ms"), std::chrono::milliseconds(max_ms));
  EXPECT_FALSE(parse_duration(std::to_string(max_ms + 1) + "ms").has_value());
  // 2562047 h fit (292 years), 2562048 h do not; a millisecond count would, nanoseconds not.
  EXPECT_TRUE(parse_duration("2562047h").has_value());
  EXPECT_FALSE(parse_duration("2562048h").has_value());
  EXPECT_FALSE(parse_duration("9223372036854775ms").has_value());
  for (const char* text : {"2562047h", "153722867m", "9223372036s"}) {
    const auto d = parse_duration(text);
    ASSERT_TRUE(d.has_value()) << text;
    EXPECT_LE(d->count(), std::chrono::nanoseconds::max().count() / 1'000'000) << text;
  }
}

TEST(Duration, ErrorNamesTheExpectedForm) {
  const std::string message = duration_error("5x");
  EXPECT_NE(message.find("5x"), std::string::npos);
  EXPECT_NE(message.find("30s"), std::string::npos);
}

TEST(Duration, FormatsTheShortestExactSpelling) {
  EXPECT_EQ(format_duration(0ms), "0");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(30s), "30s");
  EXPECT_EQ(format_duration(120s), "2m");
  EXPECT_EQ(format_duration(2h), "2h");
}

TEST(WheelOptions, AcceptsAndRejectsInPlainNumbers) {
  EXPECT_EQ(check_wheel_options(1ms, 512), "");
  EXPECT_EQ(check_wheel_options(100ms, std::size_t{1} << 30), "");
  EXPECT_NE(check_wheel_options(0ms, 512).find("--tick"), std::string::npos);
  EXPECT_NE(check_wheel_options(1ms, 0).find("1073741824"), std::string::npos);
  EXPECT_NE(check_wheel_options(1ms, (std::size_t{1} << 30) + 1).find("--wheel-size"),
            std::string::npos);
  // 2^30 buckets of a 9,000 s tick: the product does not fit in nanoseconds.
  EXPECT_NE(check_wheel_options(9000s, std::size_t{1} << 30).find("292 years"), std::string::npos);
}

// The same verdict as HashedWheelTimer's constructor (small wheels only: it allocates them).
TEST(WheelOptions, AgreesWithTheTimersOwnRule) {
  const std::int64_t max = std::chrono::nanoseconds::max().count();
  for (const std::size_t wheel : {std::size_t{1}, std::size_t{3}, std::size_t{512}}) {
    const auto buckets = static_cast<std::int64_t>(std::bit_ceil(wheel));
    for (const std::chrono::nanoseconds tick :
         {std::chrono::nanoseconds(0), std::chrono::nanoseconds(-1), std::chrono::nanoseconds(1),
          std::chrono::nanoseconds(1ms), std::chrono::nanoseconds(max / buckets - 1),
          std::chrono::nanoseconds(max / buckets), std::chrono::nanoseconds(max)}) {
      TimerOptions options;
      options.tick_duration = tick;
      options.ticks_per_wheel = wheel;
      bool timer_accepts = true;
      try {
        HashedWheelTimer timer(options);
      } catch (const std::invalid_argument&) {
        timer_accepts = false;
      }
      EXPECT_EQ(check_wheel_options(tick, wheel).empty(), timer_accepts)
          << "tick " << tick.count() << "ns, wheel " << wheel;
    }
  }
}

// issue 12 defect 3: these reached the timer as a negative or wrapped nanosecond count.
TEST(Duration, RefusesTicksThatOverflowNanoseconds) {
  EXPECT_FALSE(parse_duration("18446744073710ms").has_value());
  EXPECT_FALSE(parse_duration("9300000000000ms").has_value());
  EXPECT_NE(check_duration("18446744073710ms", 1ms, 1h).find("from 1ms to 1h"), std::string::npos);
  EXPECT_NE(check_duration("9300000000000ms", 1ms, 1h).find("from 1ms to 1h"), std::string::npos);
}

TEST(OptionChecks, WholeNumbersWithinTheRangeOnly) {
  EXPECT_EQ(check_whole_number("1", 1, 10), "");
  EXPECT_EQ(check_whole_number("10", 1, 10), "");
  EXPECT_EQ(check_whole_number("0", 0, 0), "");
  EXPECT_EQ(check_whole_number("18446744073709551615", 0, UINT64_MAX), "");
  for (const char* text :
       {"0", "11", "", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x5", "abc", "18446744073709551615",
        "18446744073709551616", "99999999999999999999999"}) {
    const std::string message = check_whole_number(text, 1, 10);
    EXPECT_EQ(message, "must be a whole number from 1 to 10, got '" + std::string(text) + "'");
  }
  EXPECT_NE(check_whole_number("18446744073709551616", 0, UINT64_MAX), "");
}

TEST(OptionChecks, DurationsWithinTheRangeOnly) {
  EXPECT_EQ(check_duration("0", 0ms, 1h), "");
  EXPECT_EQ(check_duration("1h", 0ms, 1h), "");
  EXPECT_EQ(check_duration("3600000ms", 1ms, 1h), "");
  EXPECT_EQ(check_duration("3600001ms", 1ms, 1h),
            "must be a duration from 1ms to 1h, got '3600001ms'");
  EXPECT_EQ(check_duration("0", 1ms, 1h), "must be a duration from 1ms to 1h, got '0'");
  EXPECT_EQ(check_duration("30", 1ms, 1h), duration_error("30"));  // malformed: names the form
  EXPECT_EQ(check_duration("1.5s", 1ms, 1h), duration_error("1.5s"));
}

}  // namespace
}  // namespace wheel::apps

// ---- --log-format json -------------------------------------------------------------------

TEST(JsonLogFormatter, EscapesEveryMessageIntoOneJsonObjectPerLine) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("json-test", sink);
  logger.set_formatter(std::make_unique<wheel::apps::JsonLogFormatter>());
  wheel::apps::set_log_worker(3);
  logger.warn("say \"hi\" \\ twice\nsecond line\t\x01 end");
  wheel::apps::set_log_worker(-1);
  logger.info("{} \xff bad utf-8", "supervised");
  wheel::apps::set_log_worker(0);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<nlohmann::json> objects;
  while (std::getline(lines, line)) objects.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(objects.size(), 2u);  // the newline inside the message did not split the line
  EXPECT_EQ(objects[0]["message"], "say \"hi\" \\ twice\nsecond line\t\x01 end");
  EXPECT_EQ(objects[0]["level"], "warning");
  EXPECT_EQ(objects[0]["worker"], 3);
  EXPECT_EQ(objects[0]["fields"]["logger"], "json-test");
  EXPECT_EQ(objects[1]["worker"], "supervisor");
  EXPECT_EQ(objects[1]["message"], "supervised \xEF\xBF\xBD bad utf-8");  // U+FFFD
  const std::string time = objects[0]["time"];
  ASSERT_EQ(time.size(), 27u) << time;
  EXPECT_EQ(time[4], '-');
  EXPECT_EQ(time[10], 'T');
  EXPECT_EQ(time[19], '.');
  EXPECT_EQ(time.back(), 'Z');
}

namespace wheel::apps {
namespace {

using std::chrono::milliseconds;

TEST(IdleOptions, AllIdleAtOrPastWriterIdleWithoutReaderIdleIsRefused) {
  // The case: the server's own PINGs restart all-idle, nothing closes a silent client.
  const IdleCheck c = check_idle_options(milliseconds(0), milliseconds(1000), milliseconds(2000));
  EXPECT_NE(c.error.find("--all-idle 2s never fires with --writer-idle 1s"), std::string::npos)
      << c.error;
  EXPECT_NE(c.error.find("--reader-idle"), std::string::npos) << c.error;
  EXPECT_FALSE(
      check_idle_options(milliseconds(0), milliseconds(1000), milliseconds(1000)).error.empty());
}

TEST(IdleOptions, ShadowedAllIdleIsAWarningWhenReaderIdleCloses) {
  const IdleCheck by_writer =
      check_idle_options(milliseconds(60), milliseconds(30), milliseconds(90));
  EXPECT_TRUE(by_writer.error.empty());
  EXPECT_NE(by_writer.warning.find("--writer-idle 30ms"), std::string::npos) << by_writer.warning;
  const IdleCheck by_reader =
      check_idle_options(milliseconds(5000), milliseconds(0), milliseconds(5000));
  EXPECT_TRUE(by_reader.error.empty());
  EXPECT_NE(by_reader.warning.find("--all-idle 5s never fires with --reader-idle 5s"),
            std::string::npos)
      << by_reader.warning;
}

TEST(IdleOptions, CombinationsThatCanFireAreAccepted) {
  for (const auto& [r, w, a] : std::vector<std::tuple<int, int, int>>{{30000, 0, 0},
                                                                      {0, 0, 400},
                                                                      {0, 2000, 1000},
                                                                      {5000, 1000, 500},
                                                                      {0, 1000, 0},
                                                                      {3000, 1000, 0},
                                                                      {0, 0, 0},
                                                                      {2000, 0, 1999}}) {
    const IdleCheck c = check_idle_options(milliseconds(r), milliseconds(w), milliseconds(a));
    EXPECT_TRUE(c.error.empty() && c.warning.empty())
        << r << "/" << w << "/" << a << ": " << c.error << c.warning;
  }
}

}  // namespace
}  // namespace wheel::apps
