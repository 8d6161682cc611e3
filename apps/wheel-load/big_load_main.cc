// SPDX-License-Identifier: Apache-2.0
// wheel-big-load: the big case (scripts/big-load.sh; not in CI). N connections on this machine
// against wheel-server --workers W under wheel-load --processes auto, 10% active, the rest
// idle and each closed by the server on time. Planned by wheel::load::plan_big_load (its header
// gives the formulas); while all connections are open and idle it measures the server's CPU and
// memory and the kernel's, against their values before the load. Prints the machine limits
// that matter first, and refuses a run they cannot hold (exit 2).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli_style.h"
#include "duration_option.h"
#include "wheel/load/big_load_plan.h"
#include "wheel/load/process_plan.h"
#include "wheel/load/process_tree.h"
#include "wheel/version.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Starts `args` with stdout (or stderr) on a pipe; returns the pid and the pipe's read end.
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

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "wheel-big-load: N connections against wheel-server on this machine, planned to "
      "its limits; the server's CPU and memory while all are open and idle"};
  app.set_version_flag("--version", std::string("wheel-big-load ") + wheel::kVersion,
                       "print the version and exit");
  wheel::cli::apply_style(app);
  wheel::load::BigLoadRequest request;
  std::string server_path, load_path, report_path = "big-load-report.json",
                                      summary_path = "big-load-summary.txt";
  std::chrono::milliseconds reader_idle{0}, duration{0}, ping_interval{0};
  unsigned workers = 0;
  app.add_option("--server", server_path, "the wheel-server program")
      ->type_name(wheel::cli::kTypeFile)
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--load", load_path, "the wheel-load program")
      ->type_name(wheel::cli::kTypeFile)
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--connections", request.connections, "connections open at once")
      ->check(wheel::cli::integer_range(1000, 2'000'000))
      ->capture_default_str();
  app.add_option("--workers", workers, "server workers (default: planned)")
      ->check(wheel::cli::integer_range(1, 256));
  app.add_option("--connect-rate", request.connect_rate,
                 "connections opened per second (at 10,000 the 1,000,000 run's closes outran two "
                 "cores)")
      ->check(wheel::cli::positive_number(1'000'000))
      ->capture_default_str();
  app.add_option("--active-ratio", request.active_ratio, "share of connections that PING")
      ->check(wheel::cli::number_range(0, 1))
      ->capture_default_str();
  wheel::load_app::add_duration(app, "--reader-idle", &reader_idle, "default: planned", 24h);
  wheel::load_app::add_duration(app, "--duration", &duration, "default: planned", 24h);
  wheel::load_app::add_duration(app, "--ping-interval", &ping_interval, "default: planned", 1h);
  app.add_option("--report", report_path, "wheel-load's JSON report")
      ->type_name(wheel::cli::kTypeFile)
      ->capture_default_str();
  app.add_option("--summary", summary_path, "the summary, also printed on stderr")
      ->type_name(wheel::cli::kTypeFile)
      ->capture_default_str();
  if (const auto status = wheel::cli::parse_command_line(app, argc, argv, "wheel-big-load")) {
    return *status;
  }
  const auto secs = [](std::chrono::milliseconds d) -> std::optional<std::chrono::seconds> {
    if (d.count() == 0) return std::nullopt;
    return std::chrono::ceil<std::chrono::seconds>(d);
  };
  request.reader_idle = secs(reader_idle);
  request.duration = secs(duration);
  request.ping_interval = secs(ping_interval);
  if (workers > 0) request.workers = workers;

  wheel::load::raise_open_file_limit();  // the server and wheel-load inherit it
  const wheel::load::MachineLimits limits = wheel::load::read_machine_limits();
  std::fprintf(stderr,
               "=== machine\ncores %ld; open files per process %llu; ephemeral ports per source "
               "address %llu; fs.file-max %llu (%llu in use)\n",
               sysconf(_SC_NPROCESSORS_ONLN), static_cast<unsigned long long>(limits.open_files),
               static_cast<unsigned long long>(limits.ports),
               static_cast<unsigned long long>(limits.file_max),
               static_cast<unsigned long long>(limits.files_in_use));
  wheel::load::BigLoadPlan plan;
  try {
    plan = wheel::load::plan_big_load(request, limits);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wheel-big-load: %s\n", e.what());
    return 2;
  }
  const auto n = request.connections;
  std::fprintf(stderr,
               "plan: %zu connections need %u server workers at %llu each; using %u; %llu "
               "descriptors; sources %s\nplan: connect rate %.0f/s (ramp %llds), reader idle "
               "%llds, run %llds, active ratio %g with PING every %llds\n",
               n, plan.workers_needed, static_cast<unsigned long long>(plan.per_worker),
               plan.workers, static_cast<unsigned long long>(plan.files_needed),
               plan.sources.c_str(), request.connect_rate,
               static_cast<long long>(plan.ramp.count()),
               static_cast<long long>(plan.reader_idle.count()),
               static_cast<long long>(plan.duration.count()), request.active_ratio,
               static_cast<long long>(plan.ping_interval.count()));

  const wheel::load::KernelMemory kernel0 = wheel::load::read_kernel_memory();
  const auto run_start = Clock::now();
  int server_out = -1;
  const pid_t server = spawn_piped(
      {server_path, "--host", "127.0.0.1", "--port", "0", "--reader-idle",
       fmt::format("{}s", plan.reader_idle.count()), "--workers", std::to_string(plan.workers),
       "--max-connections", std::to_string(plan.per_worker), "--stats-interval", "30s",
       "--log-level", "warn"},
      STDOUT_FILENO, server_out);
  if (server < 0) {
    std::fprintf(stderr, "wheel-big-load: cannot start %s\n", server_path.c_str());
    return 1;
  }
  std::string out;
  std::smatch m;
  static const std::regex listening(R"(listening on .*:(\d+)\n)");
  for (const auto give_up = Clock::now() + 30s;
       !std::regex_search(out, m, listening) && Clock::now() < give_up;) {
    if (!read_some(server_out, out, 100)) break;
  }
  const auto stop_server = [&] {
    kill(server, SIGTERM);
    waitpid(server, nullptr, 0);
  };
  if (m.empty()) {
    std::fprintf(stderr, "wheel-big-load: wheel-server did not report its port\n");
    stop_server();
    return 1;
  }
  const std::string port = m[1];
  const auto server_ready = Clock::now();
  std::this_thread::sleep_for(1s);
  const auto tree = [&] { return wheel::load::process_and_children(server); };
  const std::uint64_t rss0 = wheel::load::rss_kib(tree()), pss0 = wheel::load::pss_kib(tree());

  std::fprintf(stderr, "=== wheel-load: %zu connections (%g active) over %s, %llds\n", n,
               request.active_ratio, plan.sources.c_str(),
               static_cast<long long>(plan.duration.count()));
  const double cpu_start = wheel::load::cpu_seconds(tree());
  const auto load_start = Clock::now();
  int progress = -1;
  const pid_t load = spawn_piped({load_path,
                                  "--host",
                                  "127.0.0.1",
                                  "--port",
                                  port,
                                  "--connections",
                                  std::to_string(n),
                                  "--active-ratio",
                                  fmt::format("{}", request.active_ratio),
                                  "--ping-interval",
                                  fmt::format("{}s", plan.ping_interval.count()),
                                  "--expect-idle-close",
                                  fmt::format("{}s", plan.reader_idle.count()),
                                  "--tolerance",
                                  "1s",
                                  "--duration",
                                  fmt::format("{}s", plan.duration.count()),
                                  "--connect-rate",
                                  fmt::format("{}", request.connect_rate),
                                  "--source-addresses",
                                  plan.sources,
                                  "--processes",
                                  "auto",
                                  "--json",
                                  report_path,
                                  "--log-level",
                                  "warn"},
                                 STDERR_FILENO, progress);
  // wheel-load's progress lines, passed on; the idle window measured meanwhile.
  const bool has_window = plan.window_to - plan.window_from >= 5s;
  std::optional<double> cpu0, cpu1, all_open_at;
  std::uint64_t rss = 0, pss = 0;
  wheel::load::KernelMemory kernel;
  const std::string all_connected = fmt::format("connected {}/{},", n, n);
  std::string lines;
  for (bool open = load > 0; open;) {
    open = read_some(progress, lines, 200);
    for (auto nl = lines.find('\n'); nl != std::string::npos; nl = lines.find('\n')) {
      const std::string line = lines.substr(0, nl + 1);
      lines.erase(0, nl + 1);
      std::fputs(line.c_str(), stderr);
      if (!all_open_at && line.find(all_connected) != std::string::npos) {
        all_open_at = std::chrono::duration<double>(Clock::now() - load_start).count();
      }
    }
    const auto since = Clock::now() - load_start;
    if (has_window && !cpu0 && since >= plan.window_from) cpu0 = wheel::load::cpu_seconds(tree());
    if (has_window && cpu0 && !cpu1 && since >= plan.window_to) {
      cpu1 = wheel::load::cpu_seconds(tree());
      rss = wheel::load::rss_kib(tree());
      pss = wheel::load::pss_kib(tree());
      kernel = wheel::load::read_kernel_memory();
    }
  }
  int status = 0;
  if (load > 0) waitpid(load, &status, 0);
  const int load_status = load < 0 ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  const auto load_end = Clock::now();
  const double cpu_end = wheel::load::cpu_seconds(tree());
  const auto s = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };

  std::string summary = fmt::format(
      "big-load: {} connections, {} server workers\ntime: server start to listening {:.1f} s; "
      "wheel-load {:.1f} s; whole run {:.1f} s\nserver CPU during the whole load: {:.1f} s "
      "(user+system, all processes)\n",
      n, plan.workers, s(server_ready - run_start), s(load_end - load_start),
      s(load_end - run_start), cpu_end - cpu_start);
  if (all_open_at) {
    summary += fmt::format(
        "connect rate held: {} connections open after {:.1f} s = {:.0f}/s "
        "(asked {:.0f}/s)\n",
        n, *all_open_at, static_cast<double>(n) / *all_open_at, request.connect_rate);
  }
  if (cpu1) {
    const double window = static_cast<double>((plan.window_to - plan.window_from).count());
    // Both ends of each connection are in sockstat's count; other programs' sockets count too.
    const double open = std::min<double>(
        static_cast<double>(n),
        (static_cast<double>(kernel.tcp_inuse) - static_cast<double>(kernel0.tcp_inuse)) / 2);
    summary += fmt::format(
        "all open: about {:.0f} connections (sockstat TCP inuse {}, {} before)\nserver CPU while "
        "all are open and idle: {:.1f} ms/s over {:.0f} s (user+system, all processes)\nserver "
        "memory: RSS {:.1f} MiB -> {:.1f} MiB, PSS {:.1f} MiB -> {:.1f} MiB; per connection RSS "
        "{:.0f} B, PSS {:.0f} B\nkernel memory (both ends): Slab {:.1f} MiB -> {:.1f} MiB ({:.0f} "
        "B "
        "per connection); TCP socket pages {:.1f} MiB -> {:.1f} MiB\n",
        open, kernel.tcp_inuse, kernel0.tcp_inuse, (*cpu1 - *cpu0) * 1000 / window, window,
        rss0 / 1024.0, rss / 1024.0, pss0 / 1024.0, pss / 1024.0,
        (static_cast<double>(rss) - static_cast<double>(rss0)) * 1024 / open,
        (static_cast<double>(pss) - static_cast<double>(pss0)) * 1024 / open,
        kernel0.slab_kib / 1024.0, kernel.slab_kib / 1024.0,
        (static_cast<double>(kernel.slab_kib) - static_cast<double>(kernel0.slab_kib)) * 1024 /
            open,
        kernel0.tcp_kib / 1024.0, kernel.tcp_kib / 1024.0);
  } else {
    summary += "(no idle window: the run is too short to measure one)\n";
  }
  summary += fmt::format("wheel-load exit status {}; its report: {}\n", load_status, report_path);
  std::fputs(summary.c_str(), stderr);
  std::ofstream(summary_path) << summary;
  stop_server();
  return load_status;
}
