// SPDX-License-Identifier: Apache-2.0
// wheel-idle-bench, implementation "asio": one boost::asio::steady_timer per connection. A read
// is what most Asio code does per read: expires_after(idle time), which cancels the pending wait
// (its handler is queued with operation_aborted and runs on the io_context), and a new
// async_wait. A wait that completes normally is an idle event: re-arm for the full time.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cmath>
#include <vector>

#include "impls.h"

namespace wheel::bench {

namespace {

namespace asio = boost::asio;

class AsioPerRead final : public PerReadImpl {
 public:
  explicit AsioPerRead(const PerReadParams& p) : p_(p), idle_(p.idle_ms) {
    timers_.reserve(static_cast<std::size_t>(p.n));
  }

  ~AsioPerRead() override {
    for (auto& t : timers_) t.cancel();
    io_.restart();
    io_.poll();
  }

  const char* name() const override { return "asio"; }

  void open_all() override {
    for (std::int64_t i = 0; i < p_.n; ++i) {
      timers_.emplace_back(io_);
      timers_.back().expires_after(idle_);
      arm(static_cast<std::uint32_t>(i));
    }
  }

  void read_batch(ConnPicker& picker, std::int64_t count) override {
    for (std::int64_t k = 0; k < count; ++k) {
      const std::uint32_t i = picker.next();
      timers_[i].expires_after(idle_);
      arm(i);
    }
  }

  void run_for(double secs, const std::function<void()>& every_ms) override {
    io_.restart();
    asio::steady_timer stop(io_, std::chrono::milliseconds(std::llround(secs * 1000)));
    stop.async_wait([this](const boost::system::error_code&) { io_.stop(); });
    asio::steady_timer tick(io_);
    std::function<void(const boost::system::error_code&)> on_tick;
    if (every_ms) {
      // A 1 ms period from the previous expiry, as uv_timer_t's repeat does.
      on_tick = [&](const boost::system::error_code& ec) {
        if (ec) return;
        every_ms();
        tick.expires_at(tick.expiry() + std::chrono::milliseconds(1));
        tick.async_wait(on_tick);
      };
      tick.expires_after(std::chrono::milliseconds(1));
      tick.async_wait(on_tick);
    }
    io_.run();
    stop.cancel();
    tick.cancel();
    io_.restart();
    io_.poll();  // the two cancelled waits complete while their timers exist
  }

  void run_once_then_drain(const std::function<void()>& fn) override {
    io_.restart();
    fn();
    io_.poll();
  }

  std::uint64_t idle_events() const override { return idle_events_; }
  std::string read_note() const override {
    return "steady_timer::expires_after (cancels the wait: its handler runs aborted) + "
           "async_wait";
  }

 private:
  void arm(std::uint32_t i) {
    timers_[i].async_wait([this, i](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;  // a read pushed the deadline
      // Expired in the same turn as a read that re-armed it: that read's wait is pending.
      if (timers_[i].expiry() > asio::steady_timer::clock_type::now()) return;
      ++idle_events_;
      timers_[i].expires_after(idle_);
      arm(i);
    });
  }

  PerReadParams p_;
  std::chrono::milliseconds idle_;
  asio::io_context io_{1};
  std::vector<asio::steady_timer> timers_;
  std::uint64_t idle_events_ = 0;
};

}  // namespace

PerReadImpl* make_asio_per_read(const PerReadParams& p) {
  return new AsioPerRead(p);
}

}  // namespace wheel::bench
