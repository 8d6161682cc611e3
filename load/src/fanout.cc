// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/fanout.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <sys/wait.h>
#include <unistd.h>
#include "wheel/logger.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "wheel/load/load_runner.h"
#include "wheel/load/progress.h"
#include "wheel/load/stop_signals.h"

namespace wheel::load {
namespace {

void print_progress(const Progress& p) {
  std::fprintf(stderr, "%s\n", format_progress(p).c_str());
}

bool write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

LoadConfig slice(const LoadConfig& whole, unsigned k, unsigned processes) {
  LoadConfig c = whole;
  c.first_index = whole.connections * k / processes;
  c.share = whole.connections * (k + 1) / processes - c.first_index;
  c.connect_rate = whole.connect_rate / processes;
  c.churn = whole.churn * (k + 1) / processes - whole.churn * k / processes;
  c.churn_rate = whole.churn_rate / processes;
  c.seed = whole.seed + k;
  c.processes = processes;
  return c;
}

// In a child: runs the slice, reports to the parent through `fd`, never returns.
[[noreturn]] void run_child(const LoadConfig& config, int fd, pid_t parent,
                            const sigset_t& unblock) {
  int status = 0;
  try {
    install_stop_signals_in_child(parent);
    sigprocmask(SIG_SETMASK, &unblock, nullptr);
    LoadRunner runner(
        config, [fd](const Progress& p) { write_all(fd, "P " + encode_progress(p) + "\n"); },
        stop_signal_fd());
    const LoadResult result = runner.run();
    if (!write_all(fd, "R " + nlohmann::json(result).dump() + "\n")) status = 1;
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel-load child: {}", e.what());
    status = 1;
  }
  ::close(fd);
  std::fflush(stderr);
  _exit(status);  // not exit(): the parent's atexit handlers and buffers are not ours to run
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  LoadConfig config;
  std::string buffer;
  Progress last;
  bool have_result = false;
  LoadResult result;
};

void consume_lines(Child& child) {
  std::size_t start = 0;
  while (true) {
    const auto nl = child.buffer.find('\n', start);
    if (nl == std::string::npos) break;
    const std::string line = child.buffer.substr(start, nl - start);
    start = nl + 1;
    if (line.starts_with("P ")) {
      decode_progress(line.substr(2), child.last);
    } else if (line.starts_with("R ")) {
      try {
        child.result = nlohmann::json::parse(line.substr(2)).get<LoadResult>();
        child.have_result = true;
      } catch (const std::exception& e) {
        wheel::logger()->error("wheel-load: unreadable result from child {}: {}", child.pid,
                               e.what());
      }
    }
  }
  child.buffer.erase(0, start);
}

LoadResult run_children(const LoadConfig& config, unsigned processes,
                        const ProgressCallback& on_progress) {
  std::vector<Child> children(processes);
  std::fflush(stdout);
  std::fflush(stderr);
  // SIGINT and SIGTERM wait while a child is forked: until it has its own handlers, one would
  // run the parent's (whose state it copied) in the child.
  sigset_t stop_set, old_mask;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  const pid_t parent = getpid();
  for (unsigned k = 0; k < processes; ++k) {
    Child& child = children[k];
    child.config = slice(config, k, processes);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      wheel::logger()->error("wheel-load: pipe: {}", std::generic_category().message(errno));
      continue;
    }
    sigprocmask(SIG_BLOCK, &stop_set, &old_mask);
    const pid_t pid = fork();
    if (pid == 0) {
      ::close(fds[0]);
      for (unsigned j = 0; j < k; ++j) {
        if (children[j].fd >= 0) ::close(children[j].fd);
      }
      run_child(child.config, fds[1], parent, old_mask);
    }
    if (pid > 0) register_child_for_stop(pid);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::close(fds[1]);
    if (pid < 0) {
      wheel::logger()->error("wheel-load: fork: {}", std::generic_category().message(errno));
      ::close(fds[0]);
      continue;
    }
    child.pid = pid;
    child.fd = fds[0];
  }

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // A little after each whole second, so every child's once-a-second report is in.
  auto next_print = start + std::chrono::milliseconds(1100);
  std::uint64_t peak_open = 0;
  const auto sum = [&] {
    Progress total;
    for (const Child& c : children) total += c.last;
    total.requested = config.connections;
    total.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    return total;
  };
  int interrupted_by = 0;
  const int stop_fd = stop_signal_fd();
  while (true) {
    std::vector<pollfd> pfds;
    std::vector<Child*> owners;
    for (Child& c : children) {
      if (c.fd >= 0) {
        pfds.push_back({c.fd, POLLIN, 0});
        owners.push_back(&c);
      }
    }
    if (pfds.empty()) break;
    if (stop_fd >= 0 && interrupted_by == 0) {
      pfds.push_back({stop_fd, POLLIN, 0});
      owners.push_back(nullptr);
    }
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_print - Clock::now());
    const int n = poll(pfds.data(), pfds.size(), static_cast<int>(std::max<long>(0, wait.count())));
    if (n < 0 && errno != EINTR) {
      wheel::logger()->error("wheel-load: poll: {}", std::generic_category().message(errno));
      break;
    }
    for (std::size_t i = 0; n > 0 && i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      if (owners[i] == nullptr) {
        // The first SIGINT or SIGTERM: passed on, so that every child ends its slice and
        // reports. A second one is the handler's (stop_signals.cc): it kills them all.
        unsigned char sig = 0;
        if (::read(stop_fd, &sig, 1) == 1 && sig != 0) {
          interrupted_by = sig;
          for (const Child& child : children) {
            if (child.pid > 0 && child.fd >= 0) ::kill(child.pid, sig);
          }
        }
        continue;
      }
      Child& c = *owners[i];
      char buf[65536];
      const ssize_t got = ::read(c.fd, buf, sizeof buf);
      if (got > 0) {
        c.buffer.append(buf, static_cast<std::size_t>(got));
        consume_lines(c);
      } else if (got == 0 || errno != EINTR) {
        ::close(c.fd);
        c.fd = -1;
      }
    }
    if (Clock::now() >= next_print) {
      const Progress total = sum();
      peak_open = std::max(peak_open, total.active_open + total.idle_open);
      print_progress(total);
      if (on_progress) on_progress(total);
      next_print += std::chrono::seconds(1);
    }
  }

  LoadResult merged;
  merged.processes = processes;
  merged.interrupted_by = interrupted_by;
  for (Child& c : children) {
    int status = 0;
    if (c.pid > 0) waitpid(c.pid, &status, 0);
    if (c.have_result) {
      merge(merged, c.result);
      continue;
    }
    wheel::logger()->error(
        "wheel-load: child {} (connections {}..{}) ended without a result (status {})", c.pid,
        c.config.first_index, c.config.first_index + c.config.share, status);
    merged.connections_requested += c.config.share;
    merged.connect_errors += c.config.share;
    merged.connect_errors_by_kind["child_failed"] += c.config.share;
  }
  // Children's own peaks happened at different moments; the sampled sum is the honest figure,
  // and no lower than any single child's peak.
  merged.peak_open = std::max(merged.peak_open, peak_open);
  return merged;
}

}  // namespace

LoadResult run_load(const LoadConfig& config, unsigned processes,
                    const ProgressCallback& on_progress) {
  if (processes <= 1) {
    LoadConfig whole = config;
    whole.first_index = 0;
    whole.share = config.connections;
    whole.processes = 1;
    LoadRunner runner(
        whole,
        [&on_progress](const Progress& p) {
          print_progress(p);
          if (on_progress) on_progress(p);
        },
        stop_signal_fd());
    return runner.run();
  }
  return run_children(config, processes, on_progress);
}

}  // namespace wheel::load
