// SPDX-License-Identifier: Apache-2.0
// The driver of a jobs load: one libuv loop, a FIFO of requests in flight per connection
// (replies come in request order in both protocols), a 1 s tick for progress and stalls, a
// one-shot timer for the run's duration and a 5 ms pacer for lateness probes. The lateness
// and drain phases share the reservers: reserve-with-timeout, then delete what came.
#include "wheel/load/jobs_load.h"

#include <uv.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>

namespace wheel::load {

namespace {

using Expect = JobsReplyParser::Expect;
using Kind = JobsReply::Kind;

std::int64_t unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Pending {
  Expect expect;
  double sent_ms;
};

class Driver;

struct Conn {
  uv_tcp_t tcp;  // first member: the handle's address is the connection's
  uv_connect_t connect_req;
  Driver* driver = nullptr;
  bool probe = false;  // lateness: the probe putter
  bool ready = false;  // connected and hello answered
  bool open = false;   // uv_tcp_init done, uv_close not yet called
  int hello_left = 0;
  std::vector<std::string> shas;
  std::deque<Pending> pending;
  JobsRequestWriter writer;
  JobsReplyParser parser;
  std::vector<JobsReply> replies;
  char read_buffer[64 * 1024];
  explicit Conn(JobsProtocol p) : writer(p), parser(p) {}
};

struct WriteReq {
  uv_write_t req;
  std::string data;
};

class Driver {
 public:
  explicit Driver(const JobsLoadConfig& c) : c_(c), random_(c.seed) {}

  JobsLoadResult run() {
    uv_loop_init(&loop_);
    start_ms_ = now_ms();
    last_reply_ms_ = start_ms_;
    uv_timer_init(&loop_, &tick_);
    tick_.data = this;
    uv_timer_start(
        &tick_, [](uv_timer_t* t) { static_cast<Driver*>(t->data)->on_tick(); }, 1000, 1000);
    uv_timer_init(&loop_, &deadline_);
    if (!connect_all()) finish();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
    summarize_result();
    return std::move(r_);
  }

 private:
  double now_ms() { return static_cast<double>(uv_hrtime()) / 1e6; }
  // The phases whose connections reserve and delete (the lateness probe excepted).
  bool reserves() const {
    return c_.phase == JobsPhase::kLateness || c_.phase == JobsPhase::kDrain;
  }

  bool connect_all() {
    sockaddr_storage address{};
    const bool v6 = c_.host.find(':') != std::string::npos;
    const int e =
        v6 ? uv_ip6_addr(c_.host.c_str(), c_.port, reinterpret_cast<sockaddr_in6*>(&address))
           : uv_ip4_addr(c_.host.c_str(), c_.port, reinterpret_cast<sockaddr_in*>(&address));
    if (e != 0) {
      r_.error = "bad host '" + c_.host + "': " + uv_strerror(e);
      return false;
    }
    const std::uint32_t n = c_.connections + (c_.phase == JobsPhase::kLateness ? 1 : 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      auto conn = std::make_unique<Conn>(c_.protocol);
      conn->driver = this;
      conn->probe = c_.phase == JobsPhase::kLateness && i == 0;
      uv_tcp_init(&loop_, &conn->tcp);
      conn->open = true;
      uv_tcp_nodelay(&conn->tcp, 1);
      conn->connect_req.data = conn.get();
      const int ce = uv_tcp_connect(&conn->connect_req, &conn->tcp,
                                    reinterpret_cast<const sockaddr*>(&address), on_connect);
      conns_.push_back(std::move(conn));
      if (ce != 0) {
        r_.error =
            "cannot connect to " + c_.host + ":" + std::to_string(c_.port) + ": " + uv_strerror(ce);
        return false;
      }
    }
    return true;
  }

  static void on_connect(uv_connect_t* req, int status) {
    auto* conn = static_cast<Conn*>(req->data);
    Driver* d = conn->driver;
    if (status != 0) {
      if (status != UV_ECANCELED && !d->finished_) {
        d->fail("cannot connect to " + d->c_.host + ":" + std::to_string(d->c_.port) + ": " +
                uv_strerror(status));
      }
      return;
    }
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(&conn->tcp),
        [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
          auto* c = reinterpret_cast<Conn*>(h);
          *buf = uv_buf_init(c->read_buffer, sizeof c->read_buffer);
        },
        on_read);
    std::string out;
    conn->hello_left = conn->writer.append_hello(out);
    for (int i = 0; i < conn->hello_left; ++i) conn->pending.push_back({Expect::kHello, 0});
    if (conn->hello_left == 0) {
      d->on_ready(*conn);
    } else {
      d->send(*conn, std::move(out));
    }
  }

  static void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
    auto* conn = reinterpret_cast<Conn*>(stream);
    Driver* d = conn->driver;
    if (d->finished_) return;
    if (n < 0) {
      d->fail(std::string("the server closed a connection: ") + uv_strerror(static_cast<int>(n)));
      return;
    }
    conn->replies.clear();
    const bool ok = conn->parser.feed(
        std::string_view(buf->base, static_cast<std::size_t>(n)),
        [conn](std::size_t i) {
          return i < conn->pending.size() ? conn->pending[i].expect : Expect::kPut;
        },
        conn->replies);
    for (JobsReply& reply : conn->replies) {
      if (conn->pending.empty()) {
        d->fail("a reply no request asked for");
        return;
      }
      const Pending p = conn->pending.front();
      conn->pending.pop_front();
      d->on_reply(*conn, p, reply);
      if (d->finished_) return;
    }
    if (!ok) {
      d->fail("protocol fault: " + conn->parser.error());
      return;
    }
    d->pump(*conn);
    d->check_done();
  }

  void send(Conn& conn, std::string data) {
    if (data.empty()) return;
    auto* w = new WriteReq;
    w->data = std::move(data);
    w->req.data = this;
    uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    const int e = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&conn.tcp), &b, 1,
                           [](uv_write_t* req, int status) {
                             auto* wr = reinterpret_cast<WriteReq*>(req);
                             auto* self = static_cast<Driver*>(req->data);
                             delete wr;
                             if (status != 0 && status != UV_ECANCELED && !self->finished_) {
                               self->fail(std::string("write failed: ") + uv_strerror(status));
                             }
                           });
    if (e != 0) {
      delete w;
      fail(std::string("write failed: ") + uv_strerror(e));
    }
  }

  void on_ready(Conn& conn) {
    conn.ready = true;
    if (++ready_ == conns_.size()) {
      t0_ms_ = now_ms();
      last_reply_ms_ = t0_ms_;
      if (c_.duration.count() > 0) {
        deadline_.data = this;
        uv_timer_start(
            &deadline_, [](uv_timer_t* t) { static_cast<Driver*>(t->data)->on_deadline(); },
            static_cast<std::uint64_t>(c_.duration.count()), 0);
      }
      if (c_.phase == JobsPhase::kLateness) {
        uv_timer_init(&loop_, &pacer_);
        pacer_open_ = true;
        pacer_.data = this;
        uv_timer_start(
            &pacer_, [](uv_timer_t* t) { static_cast<Driver*>(t->data)->pace_probes(); }, 5, 5);
      }
      for (auto& c : conns_) {
        if (reserves() && !c->probe) {
          std::string out;
          c->writer.append_reserve(out, 1);
          c->pending.push_back({Expect::kReserve, now_ms()});
          send(*c, std::move(out));
        } else {
          pump(*c);
        }
      }
      check_done();
    }
  }

  std::uint32_t draw_delay() {
    return std::uniform_int_distribution<std::uint32_t>(c_.delay_min_s, c_.delay_max_s)(random_);
  }

  // Tops up the connection's window with puts or deletes.
  void pump(Conn& conn) {
    if (!conn.ready || stopping_ || reserves()) return;
    std::string out;
    const double t = now_ms();
    const std::int64_t us = unix_us();
    while (conn.pending.size() < c_.window) {
      if (c_.phase == JobsPhase::kPut) {
        if (c_.count != 0 && r_.sent >= c_.count) break;
        const std::uint32_t delay = draw_delay();
        conn.writer.append_put(out,
                               make_job_body(c_.body_size, us, std::uint64_t{delay} * 1000, false),
                               delay, c_.ttr_s, us / 1000);
        conn.pending.push_back({Expect::kPut, t});
      } else {
        if (r_.sent >= c_.delete_ids.size()) break;
        conn.writer.append_delete(out, c_.delete_ids[r_.sent]);
        conn.pending.push_back({Expect::kDelete, t});
      }
      ++r_.sent;
    }
    send(conn, std::move(out));
  }

  void pace_probes() {
    if (stopping_) return;
    const double elapsed = now_ms() - t0_ms_;
    if (elapsed > static_cast<double>(c_.probe_span.count())) {
      probes_done_ = true;
      check_done();
      return;
    }
    Conn& probe = *conns_.front();
    const auto target = static_cast<std::uint64_t>(c_.probe_rate * elapsed / 1000.0);
    if (probe.pending.empty() && r_.probes_put < target) {
      const std::uint32_t delay = draw_delay();
      std::string out;
      const std::int64_t us = unix_us();
      probe.writer.append_put(out,
                              make_job_body(c_.body_size, us, std::uint64_t{delay} * 1000, true),
                              delay, c_.ttr_s, us / 1000);
      probe.pending.push_back({Expect::kPut, now_ms()});
      ++r_.sent;
      ++r_.probes_put;
      send(probe, std::move(out));
    }
  }

  void on_reply(Conn& conn, const Pending& p, JobsReply& reply) {
    const double t = now_ms();
    last_reply_ms_ = t;
    if (p.expect == Expect::kDelete && reserves()) --deletes_in_flight_;
    if (p.expect == Expect::kHello) {
      if (reply.kind != Kind::kText) {
        fail("the server refused the set-up: " + reply.text);
        return;
      }
      conn.shas.push_back(std::move(reply.text));
      if (--conn.hello_left == 0) {
        conn.writer.set_script_shas(conn.shas[0], conn.shas[1]);
        on_ready(conn);
      }
      return;
    }
    switch (reply.kind) {
      case Kind::kInserted:
      case Kind::kDeleted:
        if (stopping_) return;  // after the deadline: not counted
        ++r_.acknowledged;
        last_counted_ms_ = t;
        if (!reserves()) {
          reply_ms_.push_back(t - p.sent_ms);
          if (reply.kind == Kind::kInserted) r_.ids.push_back(reply.id);
        }
        if (reply.kind == Kind::kInserted && c_.on_acknowledged)
          c_.on_acknowledged(r_.acknowledged);
        return;
      case Kind::kNotFound:
        ++r_.not_found;
        last_counted_ms_ = t;
        return;
      case Kind::kReserved: {
        std::int64_t sent_us = 0;
        std::uint64_t delay_ms = 0;
        bool probe = false;
        if (c_.phase == JobsPhase::kDrain) {
          ++r_.reserved;
          if (c_.on_reserved(reply.id, reply.text)) r_.drained = true;
          if (!stopping_ && !r_.drained) {  // no delete: the next job waits on no fsync
            std::string out;
            conn.writer.append_reserve(out, 1);
            conn.pending.push_back({Expect::kReserve, t});
            send(conn, std::move(out));
          }
          return;
        }
        if (parse_job_body(reply.text, sent_us, delay_ms, probe) && probe) {
          const double late_ms =
              static_cast<double>(unix_us() - sent_us) / 1000.0 - static_cast<double>(delay_ms);
          lateness_ms_.push_back(late_ms);
        } else {
          ++r_.others_reserved;
        }
        std::string out;
        conn.writer.append_delete(out, reply.id);
        conn.pending.push_back({Expect::kDelete, t});
        ++deletes_in_flight_;
        if (!stopping_) {
          conn.writer.append_reserve(out, 1);
          conn.pending.push_back({Expect::kReserve, t});
        }
        send(conn, std::move(out));
        return;
      }
      case Kind::kTimedOut:
        if (!stopping_ && !r_.drained) {
          std::string out;
          conn.writer.append_reserve(out, 1);
          conn.pending.push_back({Expect::kReserve, t});
          send(conn, std::move(out));
        }
        return;
      default:
        ++r_.error_replies;
        last_counted_ms_ = t;
        if (r_.first_error_reply.empty()) r_.first_error_reply = reply.text;
        return;
    }
  }

  void check_done() {
    if (finished_ || ready_ < conns_.size()) return;
    const std::uint64_t answered = r_.acknowledged + r_.not_found + r_.error_replies;
    switch (c_.phase) {
      case JobsPhase::kPut:
        if (c_.count != 0 && answered >= c_.count) finish();
        return;
      case JobsPhase::kDelete:
        if (answered >= c_.delete_ids.size()) finish();
        return;
      case JobsPhase::kLateness:
        if (probes_done_ && conns_.front()->pending.empty() &&
            lateness_ms_.size() >= r_.probes_put && deletes_in_flight_ == 0) {
          finish();
        }
        return;
      case JobsPhase::kDrain:
        if (r_.drained) finish();
        return;
    }
  }

  void on_deadline() {
    stopping_ = true;
    end_ms_ = now_ms();
    finish();
  }

  void on_tick() {
    const double t = now_ms();
    bool in_flight = false;
    for (auto& c : conns_) in_flight |= !c->pending.empty();
    if (in_flight && t - last_reply_ms_ > static_cast<double>(c_.stall_timeout.count())) {
      fail("no reply for " + std::to_string(c_.stall_timeout.count() / 1000) + " s");
      return;
    }
    if (ready_ < conns_.size() && t - start_ms_ > static_cast<double>(c_.stall_timeout.count())) {
      fail("the connections did not open in " + std::to_string(c_.stall_timeout.count() / 1000) +
           " s");
      return;
    }
    if (!c_.progress) return;
    char line[200];
    const double second = static_cast<double>(r_.acknowledged - last_progress_acks_);
    last_progress_acks_ = r_.acknowledged;
    if (c_.phase == JobsPhase::kDrain) {
      std::snprintf(line, sizeof line, "drain %.0fs: %llu reserved", (t - t0_ms_) / 1000.0,
                    static_cast<unsigned long long>(r_.reserved));
    } else if (c_.phase == JobsPhase::kLateness) {
      std::snprintf(line, sizeof line, "lateness %.0fs: probes put %llu timed %zu, others %llu",
                    (t - t0_ms_) / 1000.0, static_cast<unsigned long long>(r_.probes_put),
                    lateness_ms_.size(), static_cast<unsigned long long>(r_.others_reserved));
    } else {
      std::snprintf(line, sizeof line, "%s %.0fs: %llu acknowledged (%.0f/s), %llu errors",
                    c_.phase == JobsPhase::kPut ? "put" : "delete", (t - t0_ms_) / 1000.0,
                    static_cast<unsigned long long>(r_.acknowledged), second,
                    static_cast<unsigned long long>(r_.error_replies));
    }
    c_.progress(line);
  }

  void fail(std::string why) {
    if (r_.error.empty()) r_.error = std::move(why);
    finish();
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    stopping_ = true;
    if (end_ms_ == 0) end_ms_ = last_counted_ms_ != 0 ? last_counted_ms_ : now_ms();
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&deadline_), nullptr);
    if (pacer_open_) {
      uv_close(reinterpret_cast<uv_handle_t*>(&pacer_), nullptr);
    }
    for (auto& c : conns_) {
      if (c->open) {
        c->open = false;
        uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), nullptr);
      }
    }
  }

  void summarize_result() {
    r_.elapsed_s = t0_ms_ > 0 && end_ms_ > t0_ms_ ? (end_ms_ - t0_ms_) / 1000.0 : 0;
    r_.per_second = r_.elapsed_s > 0 ? static_cast<double>(r_.acknowledged) / r_.elapsed_s : 0;
    r_.reply_ms = summarize(std::move(reply_ms_));
    r_.probes_missing = r_.probes_put - std::min<std::uint64_t>(r_.probes_put, lateness_ms_.size());
    r_.lateness_ms = summarize(std::move(lateness_ms_));
  }

  JobsLoadConfig c_;
  std::mt19937_64 random_;
  uv_loop_t loop_{};
  uv_timer_t tick_{};
  uv_timer_t deadline_{};
  uv_timer_t pacer_{};
  std::vector<std::unique_ptr<Conn>> conns_;
  std::size_t ready_ = 0;
  bool stopping_ = false;
  bool finished_ = false;
  bool probes_done_ = false;
  bool pacer_open_ = false;
  double start_ms_ = 0;
  double t0_ms_ = 0;
  double end_ms_ = 0;
  double last_reply_ms_ = 0;
  double last_counted_ms_ = 0;
  std::uint64_t last_progress_acks_ = 0;
  std::uint64_t deletes_in_flight_ = 0;  // lateness: the reservers' deletes not yet answered
  std::vector<double> reply_ms_;
  std::vector<double> lateness_ms_;
  JobsLoadResult r_;
};

}  // namespace

JobsLoadResult run_jobs_load(const JobsLoadConfig& config) {
  return Driver(config).run();
}

}  // namespace wheel::load
