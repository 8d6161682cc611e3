// SPDX-License-Identifier: Apache-2.0
#include "worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "json_log.h"
#include "wheel/net/listen_socket.h"
#include "wheel/net/socket_address.h"
#include "wheel/server/line_server.h"
#include "wheel/server/metrics_http_server.h"
#include "wheel/server/server_metrics.h"

namespace wheel::server {

using net::bind_reuseport_socket;
using net::bound_port;
using net::format_host_port;

namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
  pid_t pid = -1;
  Clock::time_point started{};
  bool restart_due = false;  // died; restart once a second has passed since `started`
};

// The body of a worker process: a full Server on the shared port. Tells the parent it listens
// by writing one byte to `ready_fd` (when >= 0). Returns the process exit code.
int worker_main(LineServerOptions options, int ready_fd) {
  apps::set_log_worker(options.worker_index);
  try {
    LineServer server(std::move(options));
    server.listen();
    server.handle_signals();
    if (ready_fd >= 0) {
      const char byte = 'r';
      if (::write(ready_fd, &byte, 1) != 1) spdlog::warn("worker: cannot report readiness");
      ::close(ready_fd);
    }
    server.run();
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("worker {}: {}", options.worker_index, e.what());
    return 1;
  }
}

// Forks worker `index`; in the child, never returns. `ready_fd` as for worker_main. `slot`:
// where the worker publishes its metrics (null: none). `inherited`: the supervisor's
// descriptors that the worker closes (the held port, the claim, which lives exactly as long as
// the supervisor, the ready pipe's read end, and the metrics endpoint's: a scrape must never
// reach a worker). Not a blanket close of every descriptor: libuv's fork handler has just
// opened descriptors of its own in the child.
pid_t spawn(const LineServerOptions& options, int index, int ready_fd, const sigset_t& old_mask,
            ServerMetricsSlot* slot, const std::vector<int>& inherited) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;            // parent (or -1)
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // an orphaned worker shuts down gracefully
  for (const int fd : inherited) {
    if (fd >= 0) ::close(fd);
  }
  // The supervisor is single-threaded (see run_workers), so these process-wide calls are safe.
  ::signal(SIGINT, SIG_DFL);                       // NOLINT(concurrency-mt-unsafe)
  ::signal(SIGTERM, SIG_DFL);                      // NOLINT(concurrency-mt-unsafe)
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // NOLINT(concurrency-mt-unsafe)
  LineServerOptions mine = options;
  mine.worker_index = index;
  mine.reuse_port = true;
  mine.metrics_port.reset();  // the supervisor serves the scrapes
  mine.metrics_slot = slot;
  ::_exit(worker_main(std::move(mine), ready_fd));  // _exit: never flush the parent's stdio
}

// Claims `addr` for this supervisor, or returns -1 with errno EADDRINUSE when another
// wheel-server supervisor holds it. Why: the workers bind with SO_REUSEPORT, and Linux lets any
// process of the same user join a SO_REUSEPORT group, so a second multi-worker server on a busy
// port would bind without error and silently take half of the new connections. (A plain bind
// cannot prove the port free: the first server's own bound sockets and TIME_WAIT connections
// make it fail or pass for reasons of its own.) The claim is an abstract-namespace Unix socket
// named after the address: the kernel refuses a second bind of the name, it needs no file, and
// it vanishes with the process (even after kill -9), so a stale claim cannot outlive its server.
// A single-worker server binds without SO_REUSEPORT and so already conflicts with either kind.
int claim_address(const std::string& addr) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un name{};
  name.sun_family = AF_UNIX;
  const std::string label = "wheel-server " + addr;  // sun_path[0] = 0: the abstract namespace
  const std::size_t length = std::min(label.size(), sizeof(name.sun_path) - 1);
  std::memcpy(name.sun_path + 1, label.data(), length);
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&name), size) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// The supervisor's scrape endpoint (--metrics-port with --workers): a libuv loop of its own
// that the supervisor runs between signals. A scrape sums the workers' shared slots and the
// counters that dead workers left (see server_metrics.h); it never asks a worker anything.
class SupervisorMetrics {
 public:
  SupervisorMetrics(const LineServerOptions& options, ServerMetricsRegion& region,
                    const sigset_t& signals, const std::size_t& alive)
      : region_(region), alive_(alive) {
    check(uv_loop_init(&loop_), "uv_loop_init");
    loop_open_ = true;
    // The signals stay blocked (sigtimedwait takes them); a signalfd only wakes the loop.
    signal_fd_ = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
    check(uv_poll_init(&loop_, &signal_poll_, signal_fd_), "uv_poll_init");
    signal_poll_open_ = true;
    check(uv_poll_start(&signal_poll_, UV_READABLE, [](uv_poll_t*, int, int) {}), "uv_poll_start");
    // Restarts and the shutdown deadline are checked at least every 100 ms, as without metrics.
    check(uv_timer_init(&loop_, &tick_), "uv_timer_init");
    tick_open_ = true;
    check(uv_timer_start(
              &tick_, [](uv_timer_t*) {}, 100, 100),
          "uv_timer_start");
    // Last: from here on the destructor closes it.
    endpoint_ = std::make_unique<MetricsHttpServer>(
        &loop_, MetricsHttpOptions{.host = options.metrics_host, .port = *options.metrics_port},
        [this] { return render(); });
  }
  ~SupervisorMetrics() {
    if (endpoint_) endpoint_->close();
    if (signal_poll_open_) uv_close(reinterpret_cast<uv_handle_t*>(&signal_poll_), nullptr);
    if (tick_open_) uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    if (loop_open_) {
      uv_run(&loop_, UV_RUN_DEFAULT);
      uv_loop_close(&loop_);
    }
    if (signal_fd_ >= 0) ::close(signal_fd_);
  }
  SupervisorMetrics(const SupervisorMetrics&) = delete;
  SupervisorMetrics& operator=(const SupervisorMetrics&) = delete;

  // Throws as MetricsHttpServer::listen().
  std::uint16_t listen() { return endpoint_->listen(); }
  // Appends the descriptors a forked worker must close.
  void add_descriptors(std::vector<int>* fds) const {
    endpoint_->add_descriptors(fds);
    fds->push_back(signal_fd_);
    fds->push_back(uv_backend_fd(&loop_));
  }
  // Serves scrapes until a signal is pending or 100 ms have passed.
  void run_once() { uv_run(&loop_, UV_RUN_ONCE); }
  // Worker `i` died: keeps its counters (not its gauges) and clears its slot for the next one.
  void retire(std::size_t i) {
    retired_.add_counters(region_.slot(i).read());
    region_.slot(i).reset();
  }

 private:
  static void check(int rc, const char* what) {
    if (rc != 0) throw std::system_error(-rc, std::generic_category(), what);
  }
  std::string render() const {
    ServerMetricsValues total = retired_;
    for (std::size_t i = 0; i < region_.size(); ++i) total.add_all(region_.slot(i).read());
    return render_server_metrics(total, alive_);
  }

  ServerMetricsRegion& region_;
  const std::size_t& alive_;
  ServerMetricsValues retired_;  // counters of dead workers
  uv_loop_t loop_{};
  bool loop_open_ = false;
  std::unique_ptr<MetricsHttpServer> endpoint_;
  int signal_fd_ = -1;
  uv_poll_t signal_poll_{};
  bool signal_poll_open_ = false;
  uv_timer_t tick_{};
  bool tick_open_ = false;
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

}  // namespace

int run_workers(LineServerOptions options, int workers) {
  // Signals arrive through sigtimedwait; block them before any child exists.
  sigset_t wanted, old_mask;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGINT);
  sigaddset(&wanted, SIGTERM);
  sigaddset(&wanted, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &wanted, &old_mask);  // NOLINT(concurrency-mt-unsafe): single thread

  // Hold the port: port 0 resolves once, and a restarted worker can always bind it again.
  int held_fd = -1;
  try {
    held_fd = bind_reuseport_socket(options.host, options.port);
    options.port = bound_port(held_fd);
  } catch (const std::system_error& e) {
    spdlog::error("wheel-server: cannot listen on {}: {} ({})",
                  format_host_port(options.host, options.port), e.code().message(),
                  e.code().value() == EADDRINUSE ? "EADDRINUSE" : e.what());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("wheel-server: cannot listen on {}: {}",
                  format_host_port(options.host, options.port), e.what());
    return 1;
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  ::getsockname(held_fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  const int claim_fd =
      claim_address(net::format_address(reinterpret_cast<const sockaddr*>(&bound)));
  if (claim_fd < 0) {
    const int error = errno;
    spdlog::error("wheel-server: cannot listen on {}: {} ({}: another wheel-server listens there)",
                  format_host_port(options.host, options.port),
                  std::generic_category().message(error),
                  error == EADDRINUSE ? "EADDRINUSE" : "claim");
    ::close(held_fd);
    return 1;
  }

  std::vector<Worker> pool(static_cast<std::size_t>(workers));
  std::size_t alive = 0;
  // Metrics: the shared region is mapped before any fork, so every worker inherits it.
  std::unique_ptr<ServerMetricsRegion> region;
  std::unique_ptr<SupervisorMetrics> metrics;
  if (options.metrics_port) {
    try {
      region = std::make_unique<ServerMetricsRegion>(pool.size());
      metrics = std::make_unique<SupervisorMetrics>(options, *region, wanted, alive);
      const std::uint16_t port = metrics->listen();
      spdlog::info("wheel-server: metrics on http://{}/metrics",
                   format_host_port(options.metrics_host, port));
    } catch (const std::exception& e) {
      spdlog::error("wheel-server: cannot serve metrics on {}: {}",
                    format_host_port(options.metrics_host, *options.metrics_port), e.what());
      metrics.reset();
      ::close(held_fd);
      ::close(claim_fd);
      return 1;
    }
  }
  const auto slot_of = [&region](std::size_t i) {
    return region ? &region->slot(i) : static_cast<ServerMetricsSlot*>(nullptr);
  };
  const auto inherited = [&](int ready_read_fd) {
    std::vector<int> fds{held_fd, claim_fd, ready_read_fd};
    if (metrics) metrics->add_descriptors(&fds);
    return fds;
  };
  std::vector<int> ready(pool.size(), -1);
  bool failed = false;
  for (std::size_t i = 0; i < pool.size() && !failed; ++i) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      spdlog::error("wheel-server: pipe: {}", std::generic_category().message(errno));
      failed = true;
      break;
    }
    pool[i].pid =
        spawn(options, static_cast<int>(i), fds[1], old_mask, slot_of(i), inherited(fds[0]));
    pool[i].started = Clock::now();
    ::close(fds[1]);
    ready[i] = fds[0];
    if (pool[i].pid < 0) failed = true;
    if (pool[i].pid > 0) ++alive;
  }
  // Wait until every worker listens (or one fails), so that the line below means "connect now".
  for (std::size_t i = 0; i < pool.size() && !failed; ++i) {
    pollfd p{ready[i], POLLIN, 0};
    char byte = 0;
    if (::poll(&p, 1, 30'000) != 1 || ::read(ready[i], &byte, 1) != 1) failed = true;
  }
  for (int fd : ready) {
    if (fd >= 0) ::close(fd);
  }
  if (failed) {
    spdlog::error("wheel-server: a worker failed to start; stopping");
    for (Worker& w : pool) {
      if (w.pid > 0) ::kill(w.pid, SIGTERM);
    }
    for (Worker& w : pool) {
      if (w.pid > 0) ::waitpid(w.pid, nullptr, 0);
    }
    ::close(held_fd);
    ::close(claim_fd);
    return 1;
  }
  std::printf("listening on %s\n", format_host_port(options.host, options.port).c_str());
  std::fflush(stdout);
  spdlog::info("wheel-server: {} workers listening on {}", workers,
               format_host_port(options.host, options.port));

  bool stopping = false;
  bool clean = true;
  Clock::time_point deadline{};
  while (alive > 0) {
    // Sleep until a signal (serving scrapes meanwhile); due restarts and the shutdown deadline
    // are checked every 100 ms.
    timespec ts{0, 100'000'000};
    if (metrics) {
      metrics->run_once();
      ts = timespec{0, 0};
    }
    siginfo_t info{};
    const int sig = ::sigtimedwait(&wanted, &info, &ts);
    if ((sig == SIGINT || sig == SIGTERM) && !stopping) {
      spdlog::info("wheel-server: got signal {}, stopping {} workers", sig, alive);
      stopping = true;
      deadline = Clock::now() + std::chrono::seconds(5);
      for (Worker& w : pool) {
        if (w.pid > 0) ::kill(w.pid, sig);
      }
    }
    // Reap every dead child, whatever woke us.
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (std::size_t i = 0; i < pool.size(); ++i) {
        if (pool[i].pid != pid) continue;
        pool[i].pid = -1;
        --alive;
        if (metrics) metrics->retire(i);
        if (stopping) {
          if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            clean = false;
            spdlog::warn("wheel-server: worker {} (pid {}) {}", i, pid, describe(status));
          }
        } else {
          spdlog::warn("wheel-server: worker {} (pid {}) {}; restarting it", i, pid,
                       describe(status));
          pool[i].restart_due = true;
        }
      }
    }
    const auto now = Clock::now();
    if (!stopping) {
      for (std::size_t i = 0; i < pool.size(); ++i) {
        Worker& w = pool[i];
        if (!w.restart_due || now - w.started < std::chrono::seconds(1)) continue;
        w.restart_due = false;
        w.started = now;
        w.pid = spawn(options, static_cast<int>(i), -1, old_mask, slot_of(i), inherited(-1));
        if (w.pid < 0) {
          spdlog::error("wheel-server: fork: {}", std::generic_category().message(errno));
          w.restart_due = true;
        } else {
          ++alive;
          spdlog::info("wheel-server: worker {} restarted as pid {}", i, w.pid);
        }
      }
    } else if (now > deadline) {
      for (Worker& w : pool) {
        if (w.pid > 0) {
          spdlog::warn("wheel-server: worker pid {} did not stop in time, killing it", w.pid);
          ::kill(w.pid, SIGKILL);
        }
      }
      clean = false;
      deadline = now + std::chrono::hours(1);
    }
  }
  ::close(held_fd);
  ::close(claim_fd);
  spdlog::info("wheel-server: all workers stopped");
  return clean ? 0 : 1;
}

}  // namespace wheel::server
