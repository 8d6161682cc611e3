// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/soak.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "free_port.h"
#include "wheel/load/load_runner.h"
#include "wheel/load/percentiles.h"
#include "wheel/load/process_tree.h"
#include "wheel/load/report.h"
#include "wheel/load/server_metrics_check.h"

extern char** environ;

namespace wheel::load {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// wheel-server, its stdout and stderr in files; SIGTERMed (then SIGKILLed) if still running
// when destroyed.
class Server {
 public:
  Server(const SoakOptions& o, int metrics_port) : out_(o.dir + "/server.out") {
    const std::string log = o.dir + "/server.log";
    const std::vector<std::string> args = {o.server_path,
                                           "--host",
                                           "127.0.0.1",
                                           "--port",
                                           "0",
                                           "--workers",
                                           "2",
                                           "--reader-idle",
                                           "5s",
                                           "--stats-interval",
                                           "1s",
                                           "--log-level",
                                           "info",
                                           "--metrics-port",
                                           std::to_string(metrics_port)};
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    const int e = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) throw std::runtime_error("cannot start " + o.server_path + ": " + strerror(e));
    static const std::regex listening(R"(listening on .*:(\d+)\n)");
    for (int i = 0; i < 300 && port_ == 0; ++i) {  // up to 30 s: sanitizer builds start slowly
      std::smatch m;
      const std::string text = slurp(out_);
      if (std::regex_search(text, m, listening)) port_ = std::stoi(m[1]);
      if (port_ == 0) std::this_thread::sleep_for(100ms);
    }
    if (port_ == 0) throw std::runtime_error("wheel-server did not start: " + slurp(log));
  }
  ~Server() {
    if (pid_ > 0) stop();
  }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // SIGTERM, then waits up to 30 s (SIGKILL after). Returns the exit status, -1 if killed.
  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 300; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(100ms);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }

 private:
  std::string out_;
  pid_t pid_ = -1;
  int port_ = 0;
};

LoadConfig round_config(const SoakOptions& o, int port, unsigned round) {
  LoadConfig c;
  c.port = static_cast<std::uint16_t>(port);
  c.connections = c.share = 1000;
  c.active_ratio = 0.6;
  c.ping_interval = 1s;
  c.expect_idle_close = 5s;
  c.tolerance = o.tolerance;
  c.duration = o.round;
  c.connect_rate = 500;
  c.source_addresses = {0x7f000001, 0x7f000002, 0x7f000003, 0x7f000004,
                        0x7f000005, 0x7f000006, 0x7f000007, 0x7f000008};
  c.delay_share = 0.25;
  c.delay = 2s;
  c.slow_share = 0.15;
  c.slow_burst = 32;
  c.garbage_share = 0.15;
  c.churn = 20;
  c.churn_rate = 100;
  c.seed = round;
  return c;
}

// Each worker's last "worker N: stats k=v ..." line in the log, summed: key -> value.
std::map<std::string, std::uint64_t> last_stats(const std::string& log, unsigned workers,
                                                std::vector<std::string>& failures) {
  std::map<std::string, std::uint64_t> sum;
  std::map<unsigned, std::string> last;
  std::istringstream in(log);
  static const std::regex stats_line(R"(worker (\d+): stats (.*))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, stats_line)) last[std::stoul(m[1])] = m[2];
  }
  static const std::regex pair(R"(([a-z_]+)=(\d+))");
  for (unsigned w = 0; w < workers; ++w) {
    if (!last.contains(w)) {
      failures.push_back(fmt::format("counters: no stats line from worker {}", w));
      continue;
    }
    for (std::sregex_iterator it(last[w].begin(), last[w].end(), pair), end; it != end; ++it) {
      sum[(*it)[1]] += std::stoull((*it)[2]);
    }
  }
  return sum;
}

}  // namespace

SoakResult run_soak(const SoakOptions& o) {
  SoakResult out;
  auto& failures = out.failures;
  const unsigned rounds =
      std::max<unsigned>(2, (o.minutes * 60 + static_cast<unsigned>(o.round.count()) - 1) /
                                static_cast<unsigned>(o.round.count()));
  const MetricsUrl metrics{"127.0.0.1", free_loopback_port(), "/metrics"};
  Server server(o, metrics.port);
  // Ready: both workers forked and counted by the supervisor's endpoint.
  MetricSamples before;
  for (int i = 0; i < 300; ++i) {
    try {
      before = scrape(metrics, 2s);
      if (before["wheel_workers"] == 2 && process_and_children(server.pid()).size() == 3) break;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(100ms);
  }
  const std::vector<pid_t> pids = process_and_children(server.pid());
  const auto fds_before = fd_targets(pids);
  std::fprintf(stderr,
               "soak: %u min = %u rounds of %llds against port %d; server pids %s; %zu "
               "descriptors; RSS %llu MiB; logs in %s\n",
               o.minutes, rounds, static_cast<long long>(o.round.count()), server.port(),
               fmt::format("{}", fmt::join(pids, " ")).c_str(), fds_before.size(),
               static_cast<unsigned long long>(rss_kib(pids) / 1024), o.dir.c_str());

  LoadResult clients;
  std::vector<std::uint64_t> rss;  // per round, mid-round
  std::vector<unsigned> failed_rounds;
  for (unsigned r = 1; r <= rounds; ++r) {
    const LoadConfig config = round_config(o, server.port(), r);
    std::uint64_t sample = 0;
    LoadRunner runner(config, [&](const Progress& p) {
      if (sample == 0 && p.elapsed_s * 2 >= static_cast<double>(o.round.count())) {
        sample = rss_kib(process_and_children(server.pid()));
      }
    });
    const LoadResult result = runner.run();
    if (sample == 0) sample = rss_kib(process_and_children(server.pid()));
    rss.push_back(sample);
    const auto report = make_report(result, config);
    std::ofstream(fmt::format("{}/round-{}.json", o.dir, r)) << report.dump(2) << "\n";
    merge(clients, result);
    std::fprintf(stderr,
                 "soak: round %u/%u: %s, %llu conns, churn %llu, DELAY %llu/%llu, server "
                 "RSS %llu MiB, %zu descriptors\n",
                 r, rounds, report["ok"].get<bool>() ? "ok" : "FAILED",
                 static_cast<unsigned long long>(result.connections_established),
                 static_cast<unsigned long long>(result.churn_completed),
                 static_cast<unsigned long long>(result.delayed_on_time),
                 static_cast<unsigned long long>(result.delays_sent),
                 static_cast<unsigned long long>(sample / 1024), fd_targets(pids).size());
    if (!report["ok"].get<bool>()) {
      failed_rounds.push_back(r);
      std::fprintf(stderr, "%s", format_summary(report).c_str());
    }
  }

  // Let the last closes land: descriptors back where they were, the server's books settled.
  std::vector<std::string> fd_diff;
  for (int i = 0; i < 50; ++i) {
    fd_diff = fd_changes(fds_before, fd_targets(pids), server.pid());
    if (fd_diff.empty()) break;
    std::this_thread::sleep_for(200ms);
  }
  MetricSamples after;
  const auto delta = [&](const std::string& name) { return after[name] - before[name]; };
  for (int i = 0; i < 50; ++i) {
    try {
      after = scrape(metrics, 2s);
    } catch (const std::exception& e) {
      failures.push_back(std::string("counters: cannot scrape the server: ") + e.what());
      break;
    }
    if (after["wheel_connections_open"] == 0 && after["wheel_delayed_pending"] == 0) break;
    std::this_thread::sleep_for(200ms);
  }
  std::this_thread::sleep_for(2500ms);  // a fresh stats line from each worker
  const std::uint64_t rss_end = rss_kib(process_and_children(server.pid()));

  if (!failed_rounds.empty()) {
    failures.push_back(fmt::format("rounds: {} failed their own checks ({})", failed_rounds.size(),
                                   fmt::join(failed_rounds, " ")));
  }
  const std::uint64_t bound = rss.front() + rss.front() * o.rss_slack_pct / 100 + 4096;
  if (rss.back() > bound) {
    failures.push_back(fmt::format("rss: {} KiB at the last round > bound {} KiB (warm-up {} KiB)",
                                   rss.back(), bound, rss.front()));
  }
  if (!fd_diff.empty()) {
    failures.push_back(fmt::format("fds: changed: {}", fmt::join(fd_diff, "; ")));
  }
  // The clients' sums against the server's counts over the load.
  const double slack = static_cast<double>(clients.churn_interrupted);
  const auto check = [&](const char* what, double server_count, double client_count,
                         double allowed) {
    if (server_count < client_count || server_count > client_count + allowed) {
      failures.push_back(fmt::format("counters: server {} {} vs clients {}{}", what, server_count,
                                     client_count,
                                     allowed > 0 ? fmt::format(" (+ up to {})", allowed) : ""));
    }
  };
  const double delayed =
      static_cast<double>(clients.delayed_on_time + clients.delayed_early + clients.delayed_late);
  check("accepted", delta("wheel_connections_accepted_total"),
        static_cast<double>(clients.connections_established + clients.churn_established), slack);
  check("PINGs answered", delta("wheel_pings_total"), static_cast<double>(clients.pongs_received),
        slack);
  check("DELAYED sent", delta("wheel_delayed_sent_total"), delayed, 0);
  check("idle closes", delta("wheel_connections_closed_total{reason=\"reader_idle\"}"),
        static_cast<double>(clients.bye_idle_received), 0);
  for (const char* zero : {"wheel_connections_open", "wheel_delayed_pending",
                           "wheel_connections_rejected_total{reason=\"full\"}",
                           "wheel_connections_rejected_total{reason=\"emfile\"}",
                           "wheel_connections_closed_total{reason=\"slow_consumer\"}"}) {
    if (after[zero] != 0) failures.push_back(fmt::format("counters: {} is {}", zero, after[zero]));
  }
  const unsigned workers = static_cast<unsigned>(pids.size() - 1);
  auto stats = last_stats(slurp(o.dir + "/server.log"), workers, failures);
  check("errors (unknown commands)", static_cast<double>(stats["errors"]),
        static_cast<double>(clients.garbage_sent), 0);
  if (stats["accept_errors"] != 0) {
    failures.push_back(fmt::format("counters: accept_errors is {}", stats["accept_errors"]));
  }

  if (const int status = server.stop(); status != 0) {
    failures.push_back(fmt::format("shutdown: wheel-server exited with status {}", status));
  }
  const std::string log = slurp(o.dir + "/server.log");
  static const std::regex bad(R"(\[(warning|error|critical)\][^\n]*)");
  if (std::smatch m; std::regex_search(log, m, bad)) {
    failures.push_back("logs: a warning or error line, the first: " + m.str());
  }
  std::size_t finals = 0;
  for (auto at = log.find("final counters"); at != std::string::npos;
       at = log.find("final counters", at + 1)) {
    ++finals;
  }
  if (finals != workers) failures.push_back("shutdown: not every worker logged its final counters");

  const auto max_of = [](const std::vector<double>& v) {
    const auto s = summarize(v);
    return s ? s->max : 0.0;
  };
  out.figures = fmt::format(
      "rounds {}; server RSS warm-up {} MiB, last {} MiB, after the load {} MiB (bound {} MiB); "
      "descriptors {} before; accepted {} (clients {} + churn {}); PINGs {}; DELAYED {} of {} "
      "sent; unknown commands {}; idle closes {}; worst: DELAYED {:.0f} ms late, idle close "
      "{:.0f} ms late",
      rounds, rss.front() / 1024, rss.back() / 1024, rss_end / 1024, bound / 1024,
      fds_before.size(), delta("wheel_connections_accepted_total"), clients.connections_established,
      clients.churn_established, delta("wheel_pings_total"), delta("wheel_delayed_sent_total"),
      clients.delays_sent, stats["errors"],
      delta("wheel_connections_closed_total{reason=\"reader_idle\"}"),
      max_of(clients.delayed_lateness_ms), max_of(clients.idle_lateness_ms));
  return out;
}

}  // namespace wheel::load
