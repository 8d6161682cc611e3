// SPDX-License-Identifier: Apache-2.0
// wheel-jobs' /metrics end to end: the program (WHEEL_JOBS_PATH) with a durable log, driven over
// beanstalkd's protocol, scraped over HTTP and parsed with the format's rules
// (support/prometheus_parser.h): changes by kind, delivery lateness, the group commit's
// histograms, live and dead log bytes, and per-tube series capped however many tubes exist.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "support/child_process.h"
#include "support/free_port.h"
#include "support/metrics_scrape.h"
#include "support/prometheus_parser.h"

namespace {

using wheel::testing::Exposition;
using wheel::testing::parse_exposition;
using wheel_test::Scrape;
using wheel_test::scrape;
using wheel_test::series_of;
using wheel_test::ServerProcess;

// One blocking TCP client with a bounded read.
class Conn {
 public:
  explicit Conn(int port) : fd_(wheel_test::connect_loopback(static_cast<std::uint16_t>(port))) {}
  ~Conn() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  void send(const std::string& s) {
    for (std::size_t sent = 0; sent < s.size();) {
      const ssize_t n = ::send(fd_, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }
  // Reads until `done(buffer)` or EOF or 20 s without a byte; returns what came.
  template <typename Done>
  std::string read_until(Done done) {
    while (!done(buf_) && wheel_test::read_more(fd_, buf_)) {
    }
    return std::move(buf_);
  }
  // Sends `request` and returns the reply's lines until `lines` "\r\n" arrived.
  std::string ask(const std::string& request, std::size_t lines = 1) {
    send(request);
    return read_until([&](const std::string& b) { return count(b, "\r\n") >= lines; });
  }
  static std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

class WheelJobsMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("wheel-jobs-metrics-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void start(std::vector<std::string> extra) {
    mport_ = static_cast<std::uint16_t>(wheel_test::free_port());
    std::vector<std::string> args{WHEEL_JOBS_PATH,        "--port",      "0",   "--metrics-port",
                                  std::to_string(mport_), "--log-level", "warn"};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<ServerProcess>(args);
    ASSERT_GT(server_->port(), 0) << "wheel-jobs did not start";
  }
  // Issue 34 item 4: wheel_build_info and the process_* families, as wheel-server serves them.
  static void expect_process_and_build(const Exposition& e) {
    ASSERT_EQ(e.families.count("wheel_build_info"), 1u);
    const auto& build = e.families.at("wheel_build_info");
    EXPECT_EQ(build.type, "gauge");
    ASSERT_EQ(build.samples.size(), 1u);
    EXPECT_FALSE(build.samples[0].labels.at("version").empty());
    EXPECT_EQ(build.samples[0].value, 1);
    EXPECT_EQ(e.families.at("process_cpu_seconds_total").type, "counter");
    EXPECT_GT(e.value("process_resident_memory_bytes"), 0);
    EXPECT_GE(e.value("process_virtual_memory_bytes"), e.value("process_resident_memory_bytes"));
    EXPECT_GE(e.value("process_open_fds"), 3) << "the listeners at least";
    EXPECT_GE(e.value("process_max_fds"), e.value("process_open_fds"));
    // Started after 2020 and not in the future (seconds since the epoch, not ticks since boot).
    EXPECT_GT(e.value("process_start_time_seconds"), 1.5e9);
    EXPECT_LE(e.value("process_start_time_seconds"), static_cast<double>(std::time(nullptr)) + 1);
  }
  double changes(const Exposition& e, const char* kind) {
    return e.value("wheel_jobs_changes_total", {{"kind", kind}});
  }

  std::filesystem::path dir_;
  std::uint16_t mport_ = 0;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(WheelJobsMetricsTest, ChangesLatenessSyncsAndLogBytesWithADurableLog) {
  start({"--dir", dir_.string(), "--metrics-tubes", "2"});
  Conn producer(server_->port());
  Conn worker(server_->port());
  ASSERT_TRUE(producer.ok() && worker.ok());
  ASSERT_EQ(worker.ask("watch later\r\nignore default\r\n", 2), "WATCHING 2\r\nWATCHING 1\r\n");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(producer.ask("put 0 0 60 3\r\nabc\r\n").rfind("INSERTED ", 0), 0u);
  }
  const Scrape before = scrape(mport_);
  // A job delayed by 100 ms goes to the worker already waiting in reserve.
  worker.send("reserve-with-timeout 10\r\n");
  const std::string put = producer.ask("use later\r\nput 0 0.100 60 2\r\nhi\r\n", 2);
  ASSERT_NE(put.find("\r\nINSERTED "), std::string::npos) << put;
  const std::string reserved =
      worker.read_until([](const std::string& b) { return Conn::count(b, "\r\n") >= 2; });
  ASSERT_EQ(reserved.rfind("RESERVED ", 0), 0u) << reserved;
  const std::string id = reserved.substr(9, reserved.find(' ', 9) - 9);
  ASSERT_EQ(worker.ask("delete " + id + "\r\n"), "DELETED\r\n");
  const Scrape after = scrape(mport_);
  const Exposition& e = after.e;

  EXPECT_EQ(changes(e, "put"), 6);
  EXPECT_EQ(changes(e, "reserve"), 1);
  EXPECT_EQ(changes(e, "delete"), 1);
  EXPECT_EQ(changes(e, "delay_ended"), 1);
  EXPECT_EQ(e.families.at("wheel_jobs_changes_total").type, "counter");
  EXPECT_EQ(e.value("wheel_jobs_delivery_lateness_seconds_count"), 1);
  EXPECT_EQ(e.value("wheel_jobs_delay_lateness_seconds_count"), 1);
  EXPECT_EQ(e.value("wheel_jobs_ready_wait_seconds_count"), 1);
  EXPECT_LT(e.value("wheel_jobs_delivery_lateness_seconds_sum"), 5.0) << "bounded, not exact";

  // Group commit: every acknowledged change was in one of the batches.
  const double batches = e.value("wheel_jobs_log_sync_seconds_count");
  EXPECT_GE(batches, 1);
  EXPECT_EQ(e.value("wheel_jobs_log_sync_batch_records_count"), batches);
  EXPECT_EQ(e.value("wheel_jobs_log_sync_batch_bytes_count"), batches);
  EXPECT_GE(e.value("wheel_jobs_log_sync_batch_records_sum"), 7) << "6 puts and a delete";
  EXPECT_EQ(e.families.at("wheel_jobs_log_sync_seconds").type, "histogram");
  // No refusal yet; the causes a log can have are there from the start (for alerts).
  EXPECT_EQ(e.value("wheel_jobs_internal_errors_total", {{"cause", "log_failed"}}), 0);
  EXPECT_EQ(e.value("wheel_jobs_internal_errors_total", {{"cause", "body_unreadable"}}), 0);

  // The delete moved the job's record from live to dead.
  const double live0 = before.e.value("wheel_jobs_log_bytes", {{"state", "live"}});
  const double dead0 = before.e.value("wheel_jobs_log_bytes", {{"state", "dead"}});
  const double live1 = e.value("wheel_jobs_log_bytes", {{"state", "live"}});
  const double dead1 = e.value("wheel_jobs_log_bytes", {{"state", "dead"}});
  EXPECT_GT(live0, 0);
  EXPECT_EQ(live1, live0) << "one put added, the same one deleted";
  EXPECT_GT(dead1, dead0);
  EXPECT_EQ(e.value("wheel_jobs_log_segments"), 1);
  EXPECT_EQ(e.value("wheel_jobs_log_disk_full"), 0);

  // Per tube: the cap of 2 tubes ("default" with 5 jobs, "later" with 0).
  EXPECT_EQ(e.value("wheel_jobs_tube_jobs", {{"tube", "default"}, {"state", "ready"}}), 5);
  EXPECT_EQ(series_of(e, "wheel_jobs_tube_jobs"), 8u);
  EXPECT_EQ(e.value("wheel_jobs_tubes_unlisted"), 0);
  EXPECT_EQ(e.value("wheel_jobs_jobs", {{"state", "ready"}}), 5);
  expect_process_and_build(e);
}

TEST_F(WheelJobsMetricsTest, TenThousandTubesKeepTheScrapeBounded) {
  start({});  // memory only: no log metrics at all
  Conn producer(server_->port());
  ASSERT_TRUE(producer.ok());
  std::string batch;
  for (int i = 0; i < 10'000; ++i)
    batch += "use t" + std::to_string(i) + "\r\nput 0 0 60 1\r\nx\r\n";
  producer.send(batch);
  const std::string replies = producer.read_until(
      [](const std::string& b) { return Conn::count(b, "INSERTED") >= 10'000; });
  ASSERT_EQ(Conn::count(replies, "INSERTED"), 10'000u);
  const Scrape s = scrape(mport_);
  EXPECT_EQ(s.e.value("wheel_jobs_tubes"), 10'001);
  EXPECT_EQ(series_of(s.e, "wheel_jobs_tube_jobs"), 4u * 100) << "the default cap: 100 tubes";
  EXPECT_EQ(s.e.value("wheel_jobs_tubes_unlisted"), 10'001 - 100);
  EXPECT_LT(s.bytes, 64u * 1024) << "one scrape stays small";
  EXPECT_EQ(s.e.families.count("wheel_jobs_log_bytes"), 0u);
  EXPECT_EQ(s.e.value("wheel_jobs_changes_total", {{"kind", "put"}}), 10'000);
  expect_process_and_build(s.e);
}

TEST_F(WheelJobsMetricsTest, MetricsTubesZeroTurnsPerTubeSeriesOff) {
  start({"--metrics-tubes", "0"});
  const Scrape s = scrape(mport_);
  EXPECT_EQ(s.e.families.count("wheel_jobs_tube_jobs"), 0u);
  EXPECT_EQ(s.e.value("wheel_jobs_tubes_unlisted"), 1);  // "default"
}

// wheel-jobs run with `args` until it exits (wheel_test::run_to_exit).
std::pair<int, std::string> run_to_exit(const std::string& args) {
  return wheel_test::run_to_exit(WHEEL_JOBS_PATH, args);
}

TEST(WheelJobsMetricsOptionsTest, MetricsTubesIsRangeChecked) {
  const auto [status, err] = run_to_exit("--metrics-tubes 1001");
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("--metrics-tubes"), std::string::npos) << err;
  EXPECT_NE(err.find("0 to 1000"), std::string::npos) << err;
}

// A fleet node has no per-tube series (the counts are Redis's): the option is refused, not
// ignored. Refused before any connection, so no Redis is needed.
TEST(WheelJobsMetricsOptionsTest, MetricsTubesIsRefusedWithStore) {
  const auto [status, err] = run_to_exit("--store redis://127.0.0.1:1 --metrics-tubes 5");
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("--metrics-tubes: not available with --store"), std::string::npos) << err;
}

}  // namespace
