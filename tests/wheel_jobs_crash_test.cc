// SPDX-License-Identifier: Apache-2.0
// kill -9, shown (issue 19 section 3): the real wheel-jobs (WHEEL_JOBS_PATH) runs with --dir in
// a temporary directory under a mixed load from several pipelined connections (puts with no,
// short and 1 h delays; reserve-with-timeout then delete, release with a delay or bury; deletes
// and kick-jobs of older jobs; one round in four ends with deletes of the newest jobs only), is
// SIGKILLed 50-500 ms into each round (with --fsync 50, 200 ms later), restarted on the same
// directory and checked: what is checked is written in support/crash_model.h. Rounds:
// WHEEL_CRASH_ROUNDS (default 20) with --fsync always, and a quarter as many (at least 5) with
// --fsync 50. WHEEL_CRASH_SEED fixes the random choices (default: random, printed). The figures
// (rounds, acknowledgements checked, losses, time per round, restart times) are printed at the end;
// scripts/soak.sh runs this binary with many rounds.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/beanstalk_conn.h"
#include "support/child_process.h"
#include "support/crash_model.h"

namespace {

using namespace std::chrono_literals;
using wheel_test::BeanstalkConn;
using wheel_test::Clock;
using wheel_test::CrashModel;
using wheel_test::Expect;
using wheel_test::pipeline;
using wheel_test::ServerProcess;

constexpr int kConnections = 4;
constexpr std::size_t kDepth = 16;      // requests in flight per connection
constexpr std::size_t kMaxLive = 1500;  // past it the load deletes more than it puts
constexpr auto kCheckLimit = 60s;       // one check, however slow the build
// --fsync MS: how late a sync may come after its MS on a loaded machine (a late loop turn).
constexpr std::int64_t kSlackMs = 150;

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

std::int64_t ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

struct Pending {
  enum Kind { kPut, kReserve, kDelete, kRelease, kBury, kKick } kind;
  std::uint64_t x = 0;  // the put's key, else the job id
  bool long_delay = false;
};

struct LoadConn {
  BeanstalkConn conn;
  std::deque<Pending> pending;
};

// One test run: a directory, a server, the model, and the figures.
class CrashRun {
 public:
  CrashRun(std::string fsync, std::int64_t interval_ms, std::uint64_t seed)
      : fsync_(std::move(fsync)),
        promise_window_ms_(interval_ms > 0 ? interval_ms + kSlackMs : 0),
        model_(interval_ms, interval_ms > 0 ? kSlackMs : 0),
        rng_(seed) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wheel-crash-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~CrashRun() {
    server_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void run(std::uint64_t rounds) {
    ASSERT_FALSE(dir_.empty());
    ASSERT_TRUE(restart());
    check();  // an empty server: only the probe
    const auto t0 = Clock::now();
    for (std::uint64_t r = 0; r < rounds && !::testing::Test::HasFatalFailure(); ++r) {
      load_and_kill();
      ASSERT_TRUE(restart()) << "round " << r << ": wheel-jobs did not restart on " << dir_;
      check();
      if (!model_.failures().empty()) {
        ADD_FAILURE() << "round " << r << " of " << rounds << " (--fsync " << fsync_ << ")";
        break;
      }
      ++rounds_done_;
      if (rounds_done_ % 100 == 0) {  // a sign of life in long soaks
        std::printf("crash --fsync %s: %llu of %llu rounds, no loss\n", fsync_.c_str(),
                    static_cast<unsigned long long>(rounds_done_),
                    static_cast<unsigned long long>(rounds));
        std::fflush(stdout);
      }
    }
    report(ms_since(t0));
  }

 private:
  bool restart() {
    server_.reset();
    const auto t = Clock::now();
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        WHEEL_JOBS_PATH, "--port", "0", "--dir", dir_, "--fsync", fsync_, "--log-level", "error"});
    restart_ms_.push_back(ms_since(t));
    return server_->port() > 0;
  }

  std::string put_request(LoadConn& c, bool* long_delay) {
    std::uniform_int_distribution<int> pct(0, 99);
    const int size_class = pct(rng_);
    std::size_t len = size_class < 80   ? 20 + rng_() % 280
                      : size_class < 95 ? 300 + rng_() % 3700
                                        : 4000 + rng_() % 56000;
    const int delay_class = pct(rng_);
    std::string delay = "0";
    *long_delay = false;
    if (delay_class >= 30 && delay_class < 70) {
      char text[16];
      std::snprintf(text, sizeof text, "0.%03d", 10 + static_cast<int>(rng_() % 491));
      delay = text;
    } else if (delay_class >= 70) {
      delay = "3600";
      *long_delay = true;
    }
    std::uint64_t key = 0;
    const std::string body = model_.new_put(len, &key);
    c.pending.push_back({Pending::kPut, key, *long_delay});
    return "put " + std::to_string(rng_() % 1000) + " " + delay + " 60 " +
           std::to_string(body.size()) + "\r\n" + body + "\r\n";
  }

  void send_reserve(LoadConn& c) {
    c.conn.queue("reserve-with-timeout 0\r\n");
    c.pending.push_back({Pending::kReserve});
  }
  // delete (or with `kick`, kick-job) of job `id`; the model learns that a change is in flight.
  void send_change(LoadConn& c, std::uint64_t id, bool kick = false) {
    model_.change_sent(id, !kick);
    c.conn.queue((kick ? "kick-job " : "delete ") + std::to_string(id) + "\r\n");
    c.pending.push_back({kick ? Pending::kKick : Pending::kDelete, id});
  }

  void issue(LoadConn& c) {
    if (quiet_) {  // the queue drains before the crash: newest jobs first
      if (const std::uint64_t id = model_.highest_live_id()) {
        send_change(c, id);
      } else {
        send_reserve(c);
      }
      return;
    }
    const int r = static_cast<int>(rng_() % 100);
    const bool crowded = model_.live_count() > kMaxLive;
    if (r < (crowded ? 20 : 45)) {
      bool long_delay = false;
      c.conn.queue(put_request(c, &long_delay));
    } else if (r < 70) {
      send_reserve(c);
    } else if (r < 92 && pick(false) != 0) {
      send_change(c, pick(false));
    } else if (pick(true) != 0) {
      send_change(c, pick(true), /*kick=*/true);
    } else {
      send_reserve(c);
    }
  }

  // A random acknowledged live job (buried ones for kick-job); 0 when none. The candidates are
  // refreshed every 64 picks: a stale one only earns a NOT_FOUND.
  std::uint64_t pick(bool buried) {
    auto& cache = buried ? buried_cache_ : live_cache_;
    if (picks_++ % 64 == 0) {
      live_cache_ = model_.live_ids(false);
      buried_cache_ = model_.live_ids(true);
    }
    return cache.empty() ? 0 : cache[rng_() % cache.size()];
  }

  // Handles one reply of connection `index`; `now` is the test's clock.
  void on_reply(int index, LoadConn& c, const std::string& line, const std::string& data) {
    if (c.pending.empty()) {
      ADD_FAILURE() << "reply without a request: " << line;
      return;
    }
    const Pending p = c.pending.front();
    c.pending.pop_front();
    const std::int64_t now = ms_since(t0_);
    auto bad = [&] { ADD_FAILURE() << "unexpected reply '" << line << "' to request " << p.kind; };
    switch (p.kind) {
      case Pending::kPut: {
        if (!line.starts_with("INSERTED ")) return bad();
        model_.put_acked(index, p.x, std::stoull(line.substr(9)), p.long_delay, now);
        return;
      }
      case Pending::kReserve: {
        if (line == "TIMED_OUT" || line == "DEADLINE_SOON") return;
        if (!line.starts_with("RESERVED ")) return bad();
        const std::uint64_t id = std::stoull(line.substr(9));
        model_.reserved(id, data);
        const int what = static_cast<int>(rng_() % 100);
        const std::string ids = std::to_string(id);
        if (what < 70) {
          send_change(c, id);
        } else if (what < 85) {
          const bool long_delay = rng_() % 2 == 0;
          model_.change_sent(id, false);
          c.conn.queue("release " + ids + " 7 " + (long_delay ? "3600" : "0.150") + "\r\n");
          c.pending.push_back({Pending::kRelease, id, long_delay});
        } else {
          model_.change_sent(id, false);
          c.conn.queue("bury " + ids + " 9\r\n");
          c.pending.push_back({Pending::kBury, id});
        }
        return;
      }
      case Pending::kDelete:
        if (line != "DELETED" && line != "NOT_FOUND") return bad();
        return model_.change_answered(p.x, true, line == "DELETED", Expect::kAny, now);
      case Pending::kRelease:
        if (line != "RELEASED" && line != "NOT_FOUND") return bad();
        return model_.change_answered(p.x, false, line == "RELEASED",
                                      p.long_delay ? Expect::kDelayed : Expect::kAny, now);
      case Pending::kBury:
        if (line != "BURIED" && line != "NOT_FOUND") return bad();
        return model_.change_answered(p.x, false, line == "BURIED", Expect::kBuried, now);
      case Pending::kKick:
        if (line != "KICKED" && line != "NOT_FOUND") return bad();
        return model_.change_answered(p.x, false, line == "KICKED", Expect::kAny, now);
    }
  }

  // Polls the connections once (`ms` at most); reads and handles every whole reply.
  void turn(std::vector<LoadConn>& conns, int ms) {
    std::vector<pollfd> fds;
    for (auto& c : conns) {
      short events = POLLIN;
      if (c.conn.wants_write()) events |= POLLOUT;
      fds.push_back({c.conn.open() ? c.conn.fd() : -1, events, 0});
    }
    if (poll(fds.data(), fds.size(), ms) <= 0) return;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (fds[i].revents == 0) continue;
      LoadConn& c = conns[i];
      if (fds[i].revents & POLLOUT) c.conn.flush();
      c.conn.fill();
      std::string line, data;
      while (c.conn.next_reply(&line, &data)) on_reply(static_cast<int>(i), c, line, data);
    }
  }

  void load_and_kill() {
    std::vector<LoadConn> conns(kConnections);
    for (auto& c : conns) ASSERT_TRUE(c.conn.connect_to(server_->port()));
    const auto start = Clock::now();
    // With --fsync MS the round is longer by the MS + slack window, so that each round has
    // acknowledgements old enough to be promised.
    const auto kill_at = start + std::chrono::milliseconds(promise_window_ms_ + 50 + rng_() % 451);
    // One round in four ends quiet: no puts in its last 40 ms, only deletes of the newest jobs,
    // so that the job with the highest id is often deleted when the SIGKILL comes (a restart
    // that took its next id from the live jobs would hand that id out again).
    const bool quiet_end = rng_() % 4 == 0;
    quiet_ = false;
    while (Clock::now() < kill_at && !::testing::Test::HasFailure()) {
      quiet_ = quiet_end && Clock::now() >= kill_at - 40ms;
      for (auto& c : conns) {
        while (c.pending.size() < kDepth) issue(c);
        c.conn.flush();
      }
      turn(conns, 2);
    }
    const std::int64_t kill_ms = ms_since(t0_);
    server_->kill_now();
    // Replies the server wrote before it died are acknowledgements too: read them to the end.
    const auto drain_until = Clock::now() + 5s;
    auto any_open = [&] {
      return std::any_of(conns.begin(), conns.end(), [](auto& c) { return c.conn.open(); });
    };
    while (any_open() && Clock::now() < drain_until) turn(conns, 50);
    model_.crashed(kill_ms);
  }

  void check() {
    BeanstalkConn c;
    ASSERT_TRUE(c.connect_to(server_->port()));
    const std::vector<std::uint64_t> ids = model_.ids_to_peek();
    std::vector<std::string> requests;
    for (auto id : ids) requests.push_back("peek " + std::to_string(id) + "\r\n");
    const auto deadline = Clock::now() + kCheckLimit;
    ASSERT_TRUE(pipeline(
        c, requests,
        [&](std::size_t i, const std::string& l, const std::string& d) {
          if (l != "NOT_FOUND" && l.rfind("FOUND " + std::to_string(ids[i]) + " ", 0) != 0) {
            ADD_FAILURE() << "peek " << ids[i] << ": " << l;
          }
          model_.peeked(ids[i], l != "NOT_FOUND", d);
        },
        deadline))
        << "the restarted server stopped answering peeks";
    const auto states = model_.states_to_check();
    requests.clear();
    for (auto& [id, e] : states) requests.push_back("stats-job " + std::to_string(id) + "\r\n");
    ASSERT_TRUE(pipeline(
        c, requests,
        [&](std::size_t i, const std::string&, const std::string& d) {
          const auto at = d.find("\nstate: ");
          model_.state_seen(states[i].first, at == std::string::npos
                                                 ? ""
                                                 : d.substr(at + 8, d.find('\n', at + 8) - at - 8));
        },
        deadline));
    std::uint64_t key = 0;
    const std::string body = model_.new_put(100, &key);
    ASSERT_TRUE(pipeline(
        c, {"put 5 3600 60 100\r\n" + body + "\r\n"},
        [&](std::size_t, const std::string& l, const std::string&) {
          ASSERT_TRUE(l.starts_with("INSERTED ")) << l;
          model_.probe_put(key, std::stoull(l.substr(9)), ms_since(t0_));
        },
        deadline));
    model_.check_done();
    for (const auto& f : model_.failures()) ADD_FAILURE() << f;
  }

  void report(std::int64_t total_ms) {
    const auto& s = model_.stats();
    std::vector<std::int64_t> r = restart_ms_;
    std::sort(r.begin(), r.end());
    std::printf(
        "crash --fsync %s: %llu rounds in %lld ms (%.1f ms per round); checked %llu acknowledged "
        "puts and %llu acknowledged deletes (%llu found whole, %llu found gone, %llu states); "
        "%llu puts unanswered at a kill, %llu of them there after; young acknowledgements %llu "
        "(%llu kept); losses %llu; restart ms median %lld max %lld\n",
        fsync_.c_str(), static_cast<unsigned long long>(rounds_done_),
        static_cast<long long>(total_ms),
        rounds_done_ ? static_cast<double>(total_ms) / static_cast<double>(rounds_done_) : 0.0,
        static_cast<unsigned long long>(s.puts_acked),
        static_cast<unsigned long long>(s.deletes_acked),
        static_cast<unsigned long long>(s.present_checked),
        static_cast<unsigned long long>(s.gone_checked),
        static_cast<unsigned long long>(s.states_checked),
        static_cast<unsigned long long>(s.unknown_puts),
        static_cast<unsigned long long>(s.unknown_puts_found),
        static_cast<unsigned long long>(s.young_acks),
        static_cast<unsigned long long>(s.young_acks_kept),
        static_cast<unsigned long long>(s.losses), static_cast<long long>(r[r.size() / 2]),
        static_cast<long long>(r.back()));
    std::fflush(stdout);
  }

  std::string fsync_;
  std::int64_t promise_window_ms_;
  CrashModel model_;
  std::mt19937_64 rng_;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  Clock::time_point t0_ = Clock::now();
  std::vector<std::int64_t> restart_ms_;
  std::uint64_t rounds_done_ = 0;
  std::uint64_t picks_ = 0;
  bool quiet_ = false;
  std::vector<std::uint64_t> live_cache_, buried_cache_;
};

std::uint64_t seed() {
  const std::uint64_t s = env_number("WHEEL_CRASH_SEED", std::random_device{}());
  std::printf("WHEEL_CRASH_SEED=%llu\n", static_cast<unsigned long long>(s));
  return s;
}

TEST(WheelJobsCrash, AcknowledgedChangesSurviveKillMinus9WithFsyncAlways) {
  CrashRun("always", 0, seed()).run(env_number("WHEEL_CRASH_ROUNDS", 20));
}

// --fsync 50 promises only what was acknowledged more than 50 ms (plus 150 ms of slack for a
// late loop turn) before the SIGKILL; younger acknowledgements are counted, not required.
TEST(WheelJobsCrash, AcknowledgementsOlderThanTheIntervalSurviveWithFsync50) {
  CrashRun("50", 50, seed())
      .run(std::max<std::uint64_t>(5, env_number("WHEEL_CRASH_ROUNDS", 20) / 4));
}

}  // namespace
