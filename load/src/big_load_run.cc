// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/big_load_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace wheel::load {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Starts `args` with stdout (or stderr) on a pipe; returns the pid and the pipe's read end, or
// -1 when it cannot start.
pid_t spawn_piped(const std::vector<std::string>& args, int target_fd, int& read_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], target_fd);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  read_end = fds[0];
  return pid;
}

// Reads what is there on `fd` within `wait_ms` into `buffer`; false at end of file.
bool read_some(int fd, std::string& buffer, int wait_ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return true;
  char chunk[4096];
  const ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<std::size_t>(n));
  return true;
}

std::string secs_arg(std::chrono::seconds s) {
  return fmt::format("{}s", s.count());
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// wheel-server started with its stdout on a pipe, until its "listening on" line gives the port.
// Its stdout stays open until it is stopped: a later write must not meet a closed pipe.
struct StartedServer {
  pid_t pid = -1;
  int out = -1;
  std::string port;

  void stop() const {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    ::close(out);
  }
};

StartedServer start_server(const BigLoadPlan& plan, const std::string& program) {
  StartedServer s;
  s.pid = spawn_piped(
      {program, "--host", "127.0.0.1", "--port", "0", "--reader-idle", secs_arg(plan.reader_idle),
       "--workers", std::to_string(plan.workers), "--max-connections",
       std::to_string(plan.per_worker), "--stats-interval", "30s", "--log-level", "warn"},
      STDOUT_FILENO, s.out);
  if (s.pid < 0) throw std::runtime_error("cannot start " + program);
  std::string text;
  std::smatch m;
  static const std::regex listening(R"(listening on .*:(\d+)\n)");
  for (const auto give_up = Clock::now() + 30s;
       !std::regex_search(text, m, listening) && Clock::now() < give_up;) {
    if (!read_some(s.out, text, 100)) break;
  }
  if (m.empty()) {
    s.stop();
    throw std::runtime_error("wheel-server did not report its port");
  }
  s.port = m[1];
  return s;
}

}  // namespace

BigLoadFigures run_big_load(const BigLoadRequest& request, const BigLoadPlan& plan,
                            const BigLoadPrograms& programs) {
  BigLoadFigures f;
  const std::size_t n = request.connections;
  f.connections = n;
  f.workers = plan.workers;
  f.connect_rate_asked = request.connect_rate;
  f.kernel_before = read_kernel_memory();
  const auto run_start = Clock::now();
  const StartedServer server = start_server(plan, programs.server);
  f.server_start_s = seconds_between(run_start, Clock::now());
  std::this_thread::sleep_for(1s);
  const auto tree = [&] { return process_and_children(server.pid); };
  f.rss_before_kib = rss_kib(tree());
  f.pss_before_kib = pss_kib(tree());

  std::fprintf(stderr, "=== wheel-load: %zu connections (%g active) over %s, %llds\n", n,
               request.active_ratio, plan.sources.c_str(),
               static_cast<long long>(plan.duration.count()));
  const double cpu_start = cpu_seconds(tree());
  const auto load_start = Clock::now();
  int progress = -1;
  const pid_t load = spawn_piped({programs.load,
                                  "--host",
                                  "127.0.0.1",
                                  "--port",
                                  server.port,
                                  "--connections",
                                  std::to_string(n),
                                  "--active-ratio",
                                  fmt::format("{}", request.active_ratio),
                                  "--ping-interval",
                                  secs_arg(plan.ping_interval),
                                  "--expect-idle-close",
                                  secs_arg(plan.reader_idle),
                                  "--tolerance",
                                  "1s",
                                  "--duration",
                                  secs_arg(plan.duration),
                                  "--connect-rate",
                                  fmt::format("{}", request.connect_rate),
                                  "--source-addresses",
                                  plan.sources,
                                  "--processes",
                                  "auto",
                                  "--json",
                                  programs.report,
                                  "--log-level",
                                  "warn"},
                                 STDERR_FILENO, progress);
  // wheel-load's progress lines, passed on; the idle window measured meanwhile.
  const bool has_window = plan.window_to - plan.window_from >= 5s;
  std::optional<double> cpu0;
  const std::string all_connected = fmt::format("connected {}/{},", n, n);
  std::string lines;
  for (bool open = load > 0; open;) {
    open = read_some(progress, lines, 200);
    for (auto nl = lines.find('\n'); nl != std::string::npos; nl = lines.find('\n')) {
      const std::string line = lines.substr(0, nl + 1);
      lines.erase(0, nl + 1);
      std::fputs(line.c_str(), stderr);
      if (!f.all_open_after_s && line.find(all_connected) != std::string::npos) {
        f.all_open_after_s = seconds_between(load_start, Clock::now());
      }
    }
    const auto since = Clock::now() - load_start;
    if (has_window && !cpu0 && since >= plan.window_from) cpu0 = cpu_seconds(tree());
    if (has_window && cpu0 && !f.idle && since >= plan.window_to) {
      BigLoadFigures::Window w;
      w.seconds = static_cast<double>((plan.window_to - plan.window_from).count());
      w.server_cpu_s = cpu_seconds(tree()) - *cpu0;
      w.rss_kib = rss_kib(tree());
      w.pss_kib = pss_kib(tree());
      w.kernel = read_kernel_memory();
      f.idle = w;
    }
  }
  if (progress >= 0) ::close(progress);
  int status = 0;
  if (load > 0) waitpid(load, &status, 0);
  f.load_status = load < 0 ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  const auto load_end = Clock::now();
  f.server_cpu_s = cpu_seconds(tree()) - cpu_start;
  f.load_s = seconds_between(load_start, load_end);
  f.whole_s = seconds_between(run_start, load_end);
  server.stop();
  return f;
}

std::string format_big_load_summary(const BigLoadFigures& f, const std::string& report) {
  const auto n = static_cast<double>(f.connections);
  std::string summary = fmt::format(
      "big-load: {} connections, {} server workers\ntime: server start to listening {:.1f} s; "
      "wheel-load {:.1f} s; whole run {:.1f} s\nserver CPU during the whole load: {:.1f} s "
      "(user+system, all processes)\n",
      f.connections, f.workers, f.server_start_s, f.load_s, f.whole_s, f.server_cpu_s);
  if (f.all_open_after_s) {
    summary += fmt::format(
        "connect rate held: {} connections open after {:.1f} s = {:.0f}/s (asked {:.0f}/s)\n",
        f.connections, *f.all_open_after_s, n / *f.all_open_after_s, f.connect_rate_asked);
  }
  if (!f.idle) {
    return summary + "(no idle window: the run is too short to measure one)\n" +
           fmt::format("wheel-load exit status {}; its report: {}\n", f.load_status, report);
  }
  const BigLoadFigures::Window& w = *f.idle;
  const KernelMemory& k0 = f.kernel_before;
  // Both ends of each connection are in sockstat's count; other programs' sockets count too.
  // At least 1, so that a count that fell (sockets closed elsewhere) divides by no zero.
  const double open =
      std::clamp((static_cast<double>(w.kernel.tcp_inuse) - static_cast<double>(k0.tcp_inuse)) / 2,
                 1.0, std::max(n, 1.0));
  const auto per_conn = [open](std::uint64_t before_kib, std::uint64_t after_kib) {
    return (static_cast<double>(after_kib) - static_cast<double>(before_kib)) * 1024 / open;
  };
  summary += fmt::format(
      "all open: about {:.0f} connections (sockstat TCP inuse {}, {} before)\nserver CPU while "
      "all are open and idle: {:.1f} ms/s over {:.0f} s (user+system, all processes)\nserver "
      "memory: RSS {:.1f} MiB -> {:.1f} MiB, PSS {:.1f} MiB -> {:.1f} MiB; per connection RSS "
      "{:.0f} B, PSS {:.0f} B\nkernel memory (both ends): Slab {:.1f} MiB -> {:.1f} MiB ({:.0f} B "
      "per connection); TCP socket pages {:.1f} MiB -> {:.1f} MiB\n",
      open, w.kernel.tcp_inuse, k0.tcp_inuse, w.server_cpu_s * 1000 / w.seconds, w.seconds,
      f.rss_before_kib / 1024.0, w.rss_kib / 1024.0, f.pss_before_kib / 1024.0, w.pss_kib / 1024.0,
      per_conn(f.rss_before_kib, w.rss_kib), per_conn(f.pss_before_kib, w.pss_kib),
      k0.slab_kib / 1024.0, w.kernel.slab_kib / 1024.0, per_conn(k0.slab_kib, w.kernel.slab_kib),
      k0.tcp_kib / 1024.0, w.kernel.tcp_kib / 1024.0);
  return summary +
         fmt::format("wheel-load exit status {}; its report: {}\n", f.load_status, report);
}

}  // namespace wheel::load
