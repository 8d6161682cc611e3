// SPDX-License-Identifier: Apache-2.0
// wheel-idle-bench, implementation "wheel": wheel::net::IdleDetector on a LoopTimer, a reader
// idle time per connection. A read is IdleWatch::record_read(loop time): a store, no timer call;
// the detector's timeout re-checks the time when it fires (Netty's IdleStateHandler pattern).
#include <memory>

#include "impls.h"
#include "uv_per_read.h"
#include "wheel/net/idle_detector.h"
#include "wheel/net/loop_timer.h"

namespace wheel::bench {

namespace {

class WheelPerRead final : public UvPerReadImpl, private net::IdleDetector::Owner {
 public:
  explicit WheelPerRead(const PerReadParams& p)
      : p_(p),
        timer_(runner_.loop(), options(p)),
        detector_(timer_, *this),
        watches_(new net::IdleWatch[static_cast<std::size_t>(p.n)]) {}

  ~WheelPerRead() override {
    for (std::int64_t i = 0; i < p_.n; ++i) detector_.unwatch(watches_[i]);
    timer_.close();
  }

  const char* name() const override { return "wheel"; }

  void open_all() override {
    uv_update_time(runner_.loop());
    const net::IdleTimes times{.reader = std::chrono::milliseconds(p_.idle_ms)};
    for (std::int64_t i = 0; i < p_.n; ++i) {
      detector_.watch(static_cast<std::uint64_t>(i), watches_[i], times);
    }
  }

  void read_batch(ConnPicker& picker, std::int64_t count) override {
    const std::uint64_t now = detector_.now_ms();
    for (std::int64_t k = 0; k < count; ++k) watches_[picker.next()].record_read(now);
  }

  std::string read_note() const override {
    return "IdleWatch::record_read(uv_now): a store; the timeout re-checks when it fires";
  }

 private:
  static TimerOptions options(const PerReadParams& p) {
    TimerOptions o;
    o.tick_duration = std::chrono::milliseconds(p.tick_ms);
    return o;
  }

  net::IdleWatch* find_watch(std::uint64_t id) override {
    return id < static_cast<std::uint64_t>(p_.n) ? &watches_[id] : nullptr;
  }
  void on_idle(std::uint64_t, net::IdleEvent) override { ++idle_events_; }

  PerReadParams p_;
  net::LoopTimer timer_;
  net::IdleDetector detector_;
  std::unique_ptr<net::IdleWatch[]> watches_;
};

}  // namespace

PerReadImpl* make_wheel_per_read(const PerReadParams& p) {
  return new WheelPerRead(p);
}

}  // namespace wheel::bench
