// SPDX-License-Identifier: Apache-2.0
// ReplySlot::complete_batch (beanstalk_backend.h): a backend completes several slots of one
// connection at once. BeanstalkFront over a backend of the test's that keeps every slot it is
// given and completes them when the test says (on the loop thread), with real TCP clients.
// Whatever the order of completion, the client reads the replies in request order; a batch of
// the oldest slots ends the barrier among them.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/loop_calls.h"
#include "support/wait_until.h"
#include "wheel/jobs/server/beanstalk_backend.h"
#include "wheel/jobs/server/beanstalk_front.h"
#include "wheel/net/tcp_server.h"

namespace {

namespace jobs = wheel::jobs;
using wheel_test::Client;

// Keeps the slots it runs, in order; the first request is a barrier when `barrier_first`.
class HoldingBackend final : public jobs::BeanstalkBackend {
 public:
  explicit HoldingBackend(bool barrier_first) : barrier_first_(barrier_first) {}
  void attach(jobs::BeanstalkFront&, wheel::net::LoopTimer&) override {}
  void open(std::uint64_t, const jobs::SessionTubes&) override {}
  void close(std::uint64_t) override {}
  bool change_tubes(std::uint64_t, jobs::TubeChange, std::string_view) override { return true; }
  jobs::beanstalk::CommandCounts& command_counts() override { return counts_; }
  jobs::Admit admit(std::uint64_t, const jobs::beanstalk::Request&, std::size_t) override {
    return jobs::Admit::kNow;
  }
  jobs::Flow run(std::uint64_t, jobs::beanstalk::Request&&, jobs::ReplySlot slot) override {
    slots.push_back(slot);
    return barrier_first_ && slots.size() == 1 ? jobs::Flow::kBarrier : jobs::Flow::kGoOn;
  }
  void set_draining() override {}
  void shutdown(std::function<void()> done) override { done(); }
  void detach() override {}

  std::vector<jobs::ReplySlot> slots;  // loop thread only

 private:
  const bool barrier_first_;
  jobs::beanstalk::CommandCounts counts_;
};

// The front over a HoldingBackend on a TcpServer on its own loop thread.
class BatchTest : public ::testing::Test {
 protected:
  void start(bool barrier_first) {
    std::promise<std::uint16_t> bound;
    std::future<std::uint16_t> port = bound.get_future();
    thread_ = std::thread([this, barrier_first, &bound] { serve(barrier_first, bound); });
    port_ = port.get();
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (wheel::net::TcpServer* s = server_.load()) s->shutdown();  // safe from any thread
    if (thread_.joinable()) thread_.join();
  }

  // Runs `f` with the backend on the loop thread.
  void call(const std::function<void(HoldingBackend&)>& f) {
    ASSERT_TRUE(calls_.load()->call([this, &f] { f(*backend_); }));
  }
  // Waits (bounded, on events) until the backend holds `n` slots.
  void await_slots(std::size_t n) {
    ASSERT_TRUE(wheel_test::wait_until([&] {
      std::size_t held = 0;
      EXPECT_TRUE(calls_.load()->call([&] { held = backend_->slots.size(); }));
      return held == n;
    }));
  }
  // Sends `requests` on the connected `c` and waits until the backend holds `slots` slots.
  void send_and_hold(Client& c, const char* requests, std::size_t slots) {
    ASSERT_TRUE(c.connected());
    c.send(requests);
    await_slots(slots);
  }
  // Completes slots [from, to) of the backend as one batch, each with `reply(i)`.
  void complete_batch(std::size_t from, std::size_t to) {
    call([&](HoldingBackend& b) {
      if (to > b.slots.size()) {
        ADD_FAILURE() << "slot " << to - 1 << " was never run";
        return;
      }
      std::string replies;
      std::vector<jobs::SlotEnd> batch;
      for (std::size_t i = from; i < to; ++i) {
        replies += reply(i);
        batch.push_back({b.slots[i], replies.size()});
      }
      jobs::ReplySlot::complete_batch(batch, replies);
    });
  }
  static std::string reply(std::size_t i) { return "REPLY " + std::to_string(i) + "\r\n"; }
  // The client reads the replies of slots [0, n) in that order.
  static void expect_in_order(Client& c, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(c.line(), "REPLY " + std::to_string(i));
  }

  std::uint16_t port_ = 0;

 private:
  void serve(bool barrier_first, std::promise<std::uint16_t>& bound) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    wheel_test::LoopCalls calls(&loop);
    {
      HoldingBackend backend(barrier_first);
      jobs::BeanstalkFront front(backend, {});
      wheel::net::TcpServerOptions so;
      so.port = 0;
      so.framing = wheel::net::Framing::kBytes;
      wheel::net::TcpServer server(&loop, so, front);
      const std::uint16_t port = server.listen();
      front.attach(server);
      backend_ = &backend;
      calls_ = &calls;
      server_ = &server;
      bound.set_value(port);
      uv_run(&loop, UV_RUN_DEFAULT);  // until TearDown's shutdown() completes
      server_ = nullptr;
    }
    calls.close();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }

  std::thread thread_;
  std::atomic<wheel_test::LoopCalls*> calls_{nullptr};
  std::atomic<wheel::net::TcpServer*> server_{nullptr};
  HoldingBackend* backend_ = nullptr;  // set before calls_, used on the loop thread
};

TEST_F(BatchTest, ABatchBehindAnIncompleteSlotWaitsForIt) {
  start(false);
  Client c(port_);
  ASSERT_NO_FATAL_FAILURE(send_and_hold(c, "stats\r\nstats\r\nstats\r\n", 3));
  complete_batch(1, 3);  // not the oldest: slot 0 is still open
  complete_batch(0, 1);
  expect_in_order(c, 3);
}

TEST_F(BatchTest, ABatchOfTheOldestSlotsGoesOutWithTheRepliesThatWaitedForIt) {
  start(false);
  Client c(port_);
  ASSERT_NO_FATAL_FAILURE(send_and_hold(c, "stats\r\nstats\r\nstats\r\nstats\r\n", 4));
  complete_batch(2, 3);  // alone, early: waits for 0 and 1
  complete_batch(0, 2);
  complete_batch(3, 4);
  expect_in_order(c, 4);
}

TEST_F(BatchTest, ABatchEndsTheBarrierAmongItsSlots) {
  start(true);
  Client c(port_);
  ASSERT_NO_FATAL_FAILURE(send_and_hold(c, "stats\r\nstats\r\n",
                                        1));  // the first is a barrier: the second waits for it
  complete_batch(0, 1);
  ASSERT_NO_FATAL_FAILURE(await_slots(2));
  complete_batch(1, 2);
  expect_in_order(c, 2);
}

}  // namespace
