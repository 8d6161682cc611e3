// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/redis_deliver.h"

#include <uv.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "wheel/jobs/fleet/redis_store.h"
#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_endpoint.h"

namespace wheel::load {

namespace {

namespace jobs = wheel::jobs;

constexpr std::chrono::milliseconds kFailureRetry{50};
constexpr std::uint64_t kProgressEveryMs = 1000;

class Deliverer {
 public:
  Deliverer(uv_loop_t* loop, const RedisDeliverConfig& c, jobs::RedisClientOptions options)
      : c_(c),
        shown_url_(jobs::format_redis_url(options.endpoint)),
        client_(loop, std::move(options)),
        store_(client_, {c.prefix}),
        tubes_{c.tube} {
    uv_timer_init(loop, &deadline_);
    deadline_.data = this;
    uv_timer_init(loop, &progress_);
    progress_.data = this;
    client_.set_on_connect([this] { start(); });
  }

  void run(uv_loop_t* loop) {
    client_.start();
    uv_timer_start(
        &deadline_, [](uv_timer_t* t) { static_cast<Deliverer*>(t->data)->finish(); },
        static_cast<std::uint64_t>(c_.timeout.count()), 0);
    if (c_.progress) {
      uv_timer_start(
          &progress_, [](uv_timer_t* t) { static_cast<Deliverer*>(t->data)->report_progress(); },
          kProgressEveryMs, kProgressEveryMs);
    }
    uv_run(loop, UV_RUN_DEFAULT);
  }

  RedisDeliverResult result() const { return r_; }

 private:
  void start() {
    if (started_) return;  // a reconnect: the chains are running
    started_ = true;
    t0_ = uv_hrtime();
    for (std::uint32_t i = 0; i < c_.concurrency; ++i) reserve();
  }

  void reserve() {
    // At most `concurrency` reserves in flight, and none past what is left to deliver (a
    // delete in flight counts as delivered; if it is lost, its callback reserves again).
    if (done_ || reserving_ >= c_.concurrency) return;
    if (reserving_ + deleting_ + r_.delivered >= c_.count) return;
    ++reserving_;
    store_.reserve(tubes_, [this](jobs::ClaimResult&& claim) {
      --reserving_;
      if (done_) return;
      if (claim.status == jobs::StoreStatus::kNotFound) {
        ++r_.empty_reserves;
        return retry_later(c_.retry);
      }
      if (claim.status != jobs::StoreStatus::kOk) {
        failed(claim.error);
        return retry_later(kFailureRetry);  // Redis down: the client fails fast, do not spin
      }
      ++deleting_;
      store_.remove(claim.id, claim.token, [this](jobs::ChangeResult&& del) {
        --deleting_;
        if (done_) return;
        if (del.status == jobs::StoreStatus::kOk) {
          ++r_.delivered;
          last_ = uv_hrtime();
        } else if (del.status == jobs::StoreStatus::kNotFound) {
          ++r_.lost_deletes;
        } else {
          failed(del.error);
        }
        if (r_.delivered >= c_.count) return finish();
        reserve();  // after a lost delete, the job still to deliver
      });
      reserve();  // the next job goes with this delete, as a beanstalk worker pipelines them
    });
  }

  void retry_later(std::chrono::milliseconds after) {
    auto* t = new uv_timer_t;
    uv_timer_init(deadline_.loop, t);
    t->data = this;
    uv_timer_start(
        t,
        [](uv_timer_t* h) {
          auto* self = static_cast<Deliverer*>(h->data);
          uv_close(reinterpret_cast<uv_handle_t*>(h),
                   [](uv_handle_t* x) { delete reinterpret_cast<uv_timer_t*>(x); });
          self->reserve();
        },
        static_cast<std::uint64_t>(after.count()), 0);
  }

  void report_progress() {
    if (!client_.connected()) {  // not yet, or lost: its commands fail fast meanwhile
      c_.progress("waiting for Redis at " + shown_url_ + ", " + std::to_string(r_.failures) +
                  " failures");  // never the URL's password
      return;
    }
    char line[200];
    std::snprintf(line, sizeof line, "deliver %.0fs: %llu delivered (%llu/s), %llu failures",
                  static_cast<double>(uv_hrtime() - t0_) / 1e9,
                  static_cast<unsigned long long>(r_.delivered),
                  static_cast<unsigned long long>(r_.delivered - last_progress_delivered_),
                  static_cast<unsigned long long>(r_.failures));
    last_progress_delivered_ = r_.delivered;
    c_.progress(line);
  }

  void failed(const std::string& why) {
    if (r_.failures++ == 0) r_.first_failure = why;
  }

  void finish() {
    if (done_) return;
    done_ = true;
    const std::uint64_t end = r_.delivered >= c_.count ? last_ : uv_hrtime();
    r_.secs = started_ ? static_cast<double>(end - t0_) / 1e9 : 0;
    r_.complete = r_.delivered >= c_.count;
    uv_close(reinterpret_cast<uv_handle_t*>(&deadline_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&progress_), nullptr);
    client_.stop();  // the commands in flight fail; nothing else keeps the loop
  }

  const RedisDeliverConfig& c_;
  std::string shown_url_;
  jobs::RedisClient client_;
  jobs::RedisStore store_;
  std::vector<std::string> tubes_;
  uv_timer_t deadline_{};
  uv_timer_t progress_{};
  RedisDeliverResult r_;
  bool started_ = false;
  bool done_ = false;
  std::uint64_t reserving_ = 0;  // reserves in flight
  std::uint64_t deleting_ = 0;   // deletes in flight
  std::uint64_t t0_ = 0;
  std::uint64_t last_ = 0;
  std::uint64_t last_progress_delivered_ = 0;
};

}  // namespace

RedisDeliverResult run_redis_deliver(const RedisDeliverConfig& config) {
  std::string error;
  auto endpoint = jobs::parse_redis_url(config.url, &error);
  if (!endpoint) throw std::invalid_argument("redis url: " + error);
  if (config.count < 1 || config.count > 1'000'000'000)
    throw std::invalid_argument("count must be from 1 to 1000000000");
  if (config.concurrency < 1 || config.concurrency > 10'000)
    throw std::invalid_argument("concurrency must be from 1 to 10000");
  if (config.timeout.count() <= 0 || config.retry.count() <= 0)
    throw std::invalid_argument("timeout and retry must be > 0");
  jobs::RedisClientOptions options;
  options.endpoint = *endpoint;
  options.name = "redis-deliver";
  uv_loop_t loop;
  uv_loop_init(&loop);
  RedisDeliverResult result;
  {
    Deliverer d(&loop, config, options);
    d.run(&loop);
    result = d.result();
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the client's handles close
  uv_loop_close(&loop);
  return result;
}

nlohmann::json redis_deliver_json(const RedisDeliverConfig& config, const RedisDeliverResult& r,
                                  double cpu_secs) {
  nlohmann::json j = {
      {"peer", "wheel-jobs-lib"},
      {"role", "worker"},
      {"delivered", r.delivered},
      {"n", config.count},
      {"complete", r.complete},
      {"secs", r.secs},
      {"delivered_per_s", r.secs > 0 ? static_cast<double>(r.delivered) / r.secs : 0},
      {"empty_reserves", r.empty_reserves},
      {"errors", nlohmann::json::object()},
      {"cpu_secs", cpu_secs}};
  if (r.lost_deletes > 0) j["errors"]["lost_deletes"] = r.lost_deletes;
  if (r.failures > 0) j["errors"]["failures"] = r.failures;
  if (!r.first_failure.empty()) j["first_failure"] = r.first_failure;
  return j;
}

}  // namespace wheel::load
