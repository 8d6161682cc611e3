// SPDX-License-Identifier: Apache-2.0
// Tests of wheel-bench's metrics over pending timeouts (apps/wheel-bench/pending_metrics.h) and
// of the worker-clock lookup they rely on: a benchmark that silently reads the wrong thread, or
// lets timeouts expire during a "nothing expires" measurement, would report fiction.
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench_options.h"
#include "metric_support.h"
#include "pending_metrics.h"
#include "timer_impls.h"
#include "timer_metrics.h"

namespace wheel::bench {
namespace {

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    if (!line.empty() && line.front() == '{') out.push_back(nlohmann::json::parse(line));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::int64_t own_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

TEST(WorkerClockTest, ReadsTheCpuTimeOfTheThreadWithThatName) {
  std::atomic<bool> burnt{false}, done{false};
  std::atomic<std::int64_t> own{0};
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "bench-test-burn");
    const std::int64_t start = own_cpu_ns();
    while (own_cpu_ns() - start < 50'000'000) {
    }
    own = own_cpu_ns();
    burnt = true;
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!burnt) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::int64_t seen = worker_cpu_ns("bench-test-burn");
  done = true;
  worker.join();
  EXPECT_GE(seen, own.load());  // the burner's own clock, read a moment earlier
  EXPECT_LT(seen, own.load() + 1'000'000'000);
  EXPECT_EQ(thread_cpu_ns("bench-no-such-thread"), -1);
}

BenchOptions small_options() {
  BenchOptions o;
  o.wheel = 64;
  o.long_n = 2'000;
  o.long_secs = 0.3;
  o.long_min_s = 60;
  o.long_max_s = 120;
  o.lateness_n = 300;
  o.scaling_n = {100, 1'000};
  o.scaling_tick = 10;
  o.scaling_secs = 0.2;
  return o;
}

template <class Impl>
class PendingMetricsTest : public ::testing::Test {};
using Impls = ::testing::Types<WheelImpl, HierImpl, HeapImpl>;
TYPED_TEST_SUITE(PendingMetricsTest, Impls);

// Every timeout is still pending at the end (none expired), and the worker's clock was read.
TYPED_TEST(PendingMetricsTest, LongDelayMeasuresTheWorkerWithAllTimeoutsPending) {
  const BenchOptions o = small_options();
  std::mt19937_64 rng(1);
  ::testing::internal::CaptureStdout();
  long_delay<TypeParam>(o, rng, 1);
  const auto lines = json_lines(::testing::internal::GetCapturedStdout());
  ASSERT_EQ(lines.size(), 1u);
  const auto& l = lines[0];
  EXPECT_EQ(l["impl"], TypeParam::kName);
  EXPECT_EQ(l["metric"], "long_delay_worker_cpu_ms_per_s");
  EXPECT_EQ(l["n"], 2'000);
  EXPECT_EQ(l["tick_ms"], 1);
  EXPECT_EQ(l["pending"], 2'000);
  ASSERT_TRUE(l["value"].is_number()) << l.dump();  // null: the worker's clock was not found
  EXPECT_GE(l["value"].get<double>(), 0.0);
  EXPECT_LE(l["value"].get<double>(), 1'100.0);  // one thread: at most ~1000 ms per second
}

TYPED_TEST(PendingMetricsTest, ScalingReportsWorkerCostPerTickForEachCount) {
  const BenchOptions o = small_options();
  std::mt19937_64 rng(2);
  ::testing::internal::CaptureStdout();
  scaling<TypeParam>(o, rng);
  const auto lines = json_lines(::testing::internal::GetCapturedStdout());
  std::vector<std::int64_t> counts;
  for (const auto& l : lines) {
    if (l["metric"] != "scaling_worker_us_per_tick") continue;
    counts.push_back(l["n"]);
    EXPECT_EQ(l["pending"], l["n"]);
    EXPECT_EQ(l["tick_ms"], 1);
    EXPECT_TRUE(l["value"].is_number()) << l.dump();
  }
  EXPECT_EQ(counts, (std::vector<std::int64_t>{100, 1'000}));
}

// Delays of one to four turns (8 buckets of 1 ms here); nothing may fire before its deadline.
TYPED_TEST(PendingMetricsTest, UpperLatenessUsesDelaysBeyondOneTurnAndNeverEarly) {
  BenchOptions o = small_options();
  o.wheel = 8;
  std::mt19937_64 rng(3);
  ::testing::internal::CaptureStdout();
  upper_lateness<TypeParam>(o, rng, 1);
  const auto lines = json_lines(::testing::internal::GetCapturedStdout());
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& l : lines) {
    EXPECT_EQ(l["min_delay_ms"], 9);
    EXPECT_EQ(l["max_delay_ms"], 32);
    EXPECT_EQ(l["n"], 300);
  }
  EXPECT_EQ(lines[3]["metric"], "upper_lateness_min_us");
  EXPECT_GE(lines[3]["value"].get<double>(), 0.0);
}

int run_bench(const std::string& args) {
  const int status =
      std::system((std::string(WHEEL_BENCH_PATH) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(WheelBenchOptionsTest, LongDelayOptionsAreRangeChecked) {
  EXPECT_EQ(run_bench("--metrics longdelay --long-min-s 100 --long-max-s 50"), 2);
  EXPECT_EQ(run_bench("--metrics longdelay --long-n 0"), 2);
  EXPECT_EQ(run_bench("--metrics longdelay --long-max-s 100000001"), 2);
  EXPECT_EQ(run_bench("--metrics longdelay --long-ticks 0"), 2);
  EXPECT_EQ(run_bench("--impl nope"), 2);
  EXPECT_EQ(run_bench("--help"), 0);
}

TEST(WheelBenchOptionsTest, HelpShowsTheDefaultsAndRanges) {
  FILE* out = ::popen(WHEEL_BENCH_PATH " --help", "r");
  ASSERT_NE(out, nullptr);
  std::string help;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), out)) > 0;) help.append(buf, n);
  EXPECT_EQ(::pclose(out), 0);
  for (const char* line :
       {"--n N", "1 to 100000000 (default 1000000)", "--ticks N", "1 to 60000 (default 1,100)",
        "--wheel N", "ticks per wheel, 1 to 1073741824 (default 512)", "(default 42)",
        "(default wheel)", "(default 1,10)"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << " is not in:\n" << help;
  }
}

TEST(WheelBenchOptionsTest, EveryTimerImplRunsTheLongDelayMetric) {
  EXPECT_EQ(run_bench("--impl wheel,hier,heap --metrics longdelay --long-n 10 --long-secs 0.1"), 0);
}

}  // namespace
}  // namespace wheel::bench
