// SPDX-License-Identifier: Apache-2.0
// wheel::logger(): the library logs through the logger named "wheel", which a program can
// replace or silence, and never through spdlog's default logger.
#include "wheel/logger.h"

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "wheel/hashed_wheel_timer.h"

namespace {

using namespace std::chrono_literals;

// A timer whose options make it log a warning (a tick below 1 ms is raised to 1 ms).
void construct_timer_that_warns() {
  wheel::TimerOptions options;
  options.tick_duration = 100us;
  wheel::HashedWheelTimer timer(options);
}

struct CapturedLogger {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> logger = std::make_shared<spdlog::logger>(
      "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
};

TEST(LoggerTest, DefaultLoggerIsRegisteredUnderTheNameWheel) {
  wheel::set_logger(nullptr);
  auto logger = wheel::logger();
  ASSERT_NE(logger, nullptr);
  EXPECT_EQ(logger->name(), "wheel");
  EXPECT_EQ(spdlog::get("wheel"), logger);
}

TEST(LoggerTest, ReplacedLoggerReceivesTheLibrarysMessagesAndTheDefaultLoggerNone) {
  CapturedLogger captured;
  std::ostringstream default_text;
  auto previous_default = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "default-capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(default_text)));
  wheel::set_logger(captured.logger);
  construct_timer_that_warns();
  wheel::set_logger(nullptr);
  spdlog::set_default_logger(previous_default);
  EXPECT_NE(captured.text.str().find("below 1ms"), std::string::npos) << captured.text.str();
  EXPECT_EQ(default_text.str(), "");
}

TEST(LoggerTest, LevelOffSilencesTheLibrary) {
  CapturedLogger captured;
  captured.logger->set_level(spdlog::level::off);
  wheel::set_logger(captured.logger);
  construct_timer_that_warns();
  wheel::set_logger(nullptr);
  EXPECT_EQ(captured.text.str(), "");
}

// Run under ThreadSanitizer (scripts/run-tests.sh tsan): the first use from several threads at
// once, and a replacement racing with readers, are synchronised; all threads see one logger.
TEST(LoggerTest, FirstUseAndReplacementFromManyThreadsAgreeOnOneLogger) {
  CapturedLogger captured;
  for (int round = 0; round < 20; ++round) {
    wheel::set_logger(nullptr);
    std::vector<std::shared_ptr<spdlog::logger>> seen(4);
    std::vector<std::thread> threads;
    for (auto& slot : seen) threads.emplace_back([&slot] { slot = wheel::logger(); });
    wheel::set_logger(captured.logger);
    for (auto& thread : threads) thread.join();
    for (const auto& logger : seen) {
      ASSERT_NE(logger, nullptr);
      EXPECT_TRUE(logger == captured.logger || logger->name() == "wheel");
    }
  }
  wheel::set_logger(nullptr);
}

}  // namespace
