// SPDX-License-Identifier: Apache-2.0
// Test support: the one front end (BeanstalkFront) over the in-process queue's backend
// (QueueBackend), as BeanstalkServerHandler wires them, on a TcpServer on its own loop thread,
// memory only or journalled by a DurableJournal on a JobLog (e.g. on the fault-injecting file
// system); real TCP clients talk to it over loopback. A test may put a backend of its own
// between the front and the queue's (`wrap`: one that records what the front hands over).
//
// With a ManualClock (`manual`), the front's net::LoopTimer reads the test's clock_, which only
// advance() moves, on the loop thread: the queue's deadlines (delays, TTRs, reserve timeouts,
// DEADLINE_SOON) and the log's housekeeping then run when the test says, never on real time.
//
// Threads: construct, advance() and call() from the test's thread; everything the server owns
// lives on its loop thread.
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "loop_calls.h"
#include "wheel/jobs/durable/durable_journal.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/server/beanstalk_front.h"
#include "wheel/jobs/server/queue_backend.h"
#include "wheel/manual_clock.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server.h"

namespace wheel_test {

struct EmbeddedQueueOptions {
  // The journal's log; none: memory only (a MemoryOnlyJournal).
  std::optional<wheel::jobs::JobLogOptions> log;
  // The front's timer reads a ManualClock starting at `manual_start` (see above).
  bool manual = false;
  std::chrono::nanoseconds manual_start{0};
  // The tick of the front's timer on the ManualClock (wheel-jobs' own is 1 ms).
  std::chrono::nanoseconds manual_tick = std::chrono::milliseconds(1);
  wheel::jobs::JobQueueLimits limits{};
  // Called on the loop thread with the queue's backend: the backend the front is given
  // instead (it lives until the server stops).
  std::function<std::unique_ptr<wheel::jobs::BeanstalkBackend>(wheel::jobs::BeanstalkBackend&)>
      wrap{};
};

class EmbeddedQueueServer {
 public:
  explicit EmbeddedQueueServer(EmbeddedQueueOptions options)
      : manual_(options.manual), clock_(options.manual_start) {
    std::promise<std::uint16_t> bound;
    std::future<std::uint16_t> port = bound.get_future();
    thread_ = std::thread([this, options, &bound] { serve(options, bound); });
    port_ = port.get();
  }
  ~EmbeddedQueueServer() {
    if (wheel::net::TcpServer* s = server_.load()) s->shutdown();  // safe from any thread
    thread_.join();
  }
  EmbeddedQueueServer(const EmbeddedQueueServer&) = delete;
  EmbeddedQueueServer& operator=(const EmbeddedQueueServer&) = delete;

  // 0 when the server did not start (the test has failed).
  std::uint16_t port() const { return port_; }
  // Moves the front's clock (REQUIRES: made with `manual`) by `by` / to `to` since its origin;
  // what comes due runs on the loop thread before this returns.
  void advance(std::chrono::nanoseconds by) {
    ASSERT_TRUE(manual_);
    ASSERT_TRUE(calls_.load()->call([this, by] { clock_.advance(by); }));
  }
  void advance_to(std::chrono::nanoseconds to) {
    ASSERT_TRUE(manual_);
    ASSERT_TRUE(calls_.load()->call([this, to] { clock_.advance_to(to); }));
  }
  // Runs `f` with the queue on the loop thread; false when the loop did not run it in 10 s.
  bool call(const std::function<void(const wheel::jobs::JobQueue&)>& f) {
    return calls_.load()->call([this, &f] { f(*queue_); });
  }
  // Runs `f` on the loop thread (what a `wrap` backend keeps is loop thread only).
  bool run(const std::function<void()>& f) { return calls_.load()->call(f); }

 private:
  void serve(const EmbeddedQueueOptions& options, std::promise<std::uint16_t>& bound) {
    namespace jobs = wheel::jobs;
    uv_loop_t loop;
    uv_loop_init(&loop);
    LoopCalls calls(&loop);
    {
      std::unique_ptr<jobs::JobLog> log;
      if (options.log) {
        jobs::Recovered recovered;
        std::string error;
        log = jobs::JobLog::open(*options.log, &recovered, &error);
        if (!log) {
          ADD_FAILURE() << error;
          bound.set_value(0);
          calls.close();
          uv_run(&loop, UV_RUN_DEFAULT);
          uv_loop_close(&loop);
          return;
        }
      }
      std::unique_ptr<wheel::net::LoopTimer> timer;
      if (manual_) {
        wheel::TimerOptions tick;
        tick.tick_duration = options.manual_tick;
        timer = std::make_unique<wheel::net::LoopTimer>(&loop, clock_, tick);
      }
      const auto now = static_cast<std::int64_t>(manual_ ? timer->now_ms() : uv_now(&loop));
      std::unique_ptr<jobs::QueueJournal> journal;
      if (log) {
        journal = std::make_unique<jobs::DurableJournal>(*log, options.log->sync);
      } else {
        journal = std::make_unique<jobs::MemoryOnlyJournal>();
      }
      jobs::JobQueue queue(options.limits, journal.get(), jobs::Millis(now));
      jobs::BeanstalkDispatcher dispatcher(queue, {});
      jobs::QueueBackend backend(queue, *journal, dispatcher);
      std::unique_ptr<jobs::BeanstalkBackend> wrapper;
      if (options.wrap) wrapper = options.wrap(backend);
      jobs::BeanstalkFront handler(wrapper ? *wrapper : backend, {});
      wheel::net::TcpServerOptions so;
      so.port = 0;
      so.framing = wheel::net::Framing::kBytes;
      wheel::net::TcpServer server(&loop, so, handler);
      const std::uint16_t port = server.listen();
      handler.attach(server, timer.get());  // sets up the log's wake-up
      if (timer) handler.on_shutdown_also([&timer] { timer->close(); });
      queue_ = &queue;
      calls_ = &calls;
      server_ = &server;
      bound.set_value(port);
      uv_run(&loop, UV_RUN_DEFAULT);  // until the destructor's shutdown() completes
    }
    calls.close();
    uv_run(&loop, UV_RUN_DEFAULT);  // closes the handler's wake-up and the test's calls
    uv_loop_close(&loop);
  }

  const bool manual_;
  wheel::ManualClock clock_;  // the loop thread's only (advance())
  std::thread thread_;
  std::atomic<LoopCalls*> calls_{nullptr};
  std::atomic<wheel::net::TcpServer*> server_{nullptr};
  const wheel::jobs::JobQueue* queue_ = nullptr;  // set before calls_, read on the loop thread
  std::uint16_t port_ = 0;
};

}  // namespace wheel_test
