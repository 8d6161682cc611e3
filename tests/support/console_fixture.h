// SPDX-License-Identifier: Apache-2.0
// The web console's JSON API (ConsoleService) on a local queue (QueueConsole) whose clock moves by
// hand, called as the HTTP server calls it: the fixture of jobs_console_test.cc and
// jobs_console_pages_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "wheel/jobs/console/console_service.h"
#include "wheel/jobs/console/queue_console.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/model/queue_journal.h"

namespace wheel::jobs::console {

using nlohmann::json;
inline constexpr const char* kToken = "0123456789abcdef0123456789abcdef";
inline constexpr const char* kHost = "127.0.0.1:8080";

class ConsoleTest : public ::testing::Test {
 protected:
  explicit ConsoleTest(JobQueueLimits limits = {})
      : queue_(limits, &journal_, Millis(1000)),
        backend_(queue_, journal_, "memory", nullptr, [] { return 3; }) {}

  ConsoleService& service(ConsoleOptions o = {}) {
    if (o.token.empty()) o.token = kToken;
    o.allowed_hosts = {kHost};
    o.clock = [this] { return clock_ms_; };
    service_.emplace(backend_, std::move(o));
    return *service_;
  }
  server::HttpResponse call(const std::string& method, const std::string& target,
                            const std::string& body = {}, std::string head = {}) {
    if (!service_) service();
    server::HttpRequest r;
    r.method = method;
    const std::size_t q = target.find('?');
    r.raw_path = target.substr(0, q);
    r.path = r.raw_path;
    if (q != std::string::npos) r.query = target.substr(q + 1);
    r.head = head.empty() ? std::string("Host: ") + kHost + "\r\n" : std::move(head);
    r.body = body;
    std::optional<server::HttpResponse> out;
    service_->handle(r, [&](server::HttpResponse response) { out = std::move(response); });
    EXPECT_TRUE(out.has_value()) << "no answer at once from the local queue";
    return out.value_or(server::HttpResponse{});
  }
  // A change as the page sends it: token, JSON, its own origin.
  server::HttpResponse change(const std::string& target, const std::string& body = "{}") {
    return call("POST", target, body,
                std::string("Host: ") + kHost + "\r\nOrigin: http://" + kHost +
                    "\r\nContent-Type: application/json\r\nX-Wheel-Token: " + kToken + "\r\n");
  }
  static json parse(const server::HttpResponse& r) { return json::parse(r.body); }

  std::uint64_t put(const std::string& tube, const std::string& body, std::uint32_t pri = 100,
                    Millis delay = Millis(0)) {
    const SessionId s = queue_.open_session();
    queue_.use(s, tube);
    const PutResult r = queue_.put(s, pri, delay, Millis(60'000), body);
    queue_.close_session(s);
    return r.id;
  }
  void bury(std::uint64_t id) {
    const SessionId s = queue_.open_session();
    ASSERT_EQ(queue_.reserve_job(s, id).outcome, Outcome::kOk);
    ASSERT_EQ(queue_.bury(s, id, 5), Outcome::kOk);
  }

  MemoryOnlyJournal journal_;
  JobQueue queue_;
  QueueConsole backend_;
  std::optional<ConsoleService> service_;
  std::int64_t clock_ms_ = 1'000'000;
};

}  // namespace wheel::jobs::console
