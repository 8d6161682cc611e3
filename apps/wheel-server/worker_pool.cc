// SPDX-License-Identifier: Apache-2.0
#include "worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

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
#include "supervisor_metrics.h"
#include "wheel/logger.h"
#include "wheel/net/listen_socket.h"
#include "wheel/net/socket_address.h"
#include "wheel/server/line_server.h"
#include "wheel/server/server_metrics.h"

namespace wheel::server {

using net::bind_reuseport_socket;
using net::bound_port;
using net::format_host_port;

namespace {

using Clock = std::chrono::steady_clock;

// The project's logger (wheel/logger.h; the program installed it), never spdlog's default.
spdlog::logger& log() {
  return *wheel::logger();
}

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
      if (::write(ready_fd, &byte, 1) != 1) log().warn("worker: cannot report readiness");
      ::close(ready_fd);
    }
    server.run();
    return 0;
  } catch (const std::exception& e) {
    log().error("worker {}: {}", options.worker_index, e.what());
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
  const pid_t supervisor = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;            // parent (or -1)
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // an orphaned worker shuts down gracefully
  // A supervisor that died between fork and prctl sends no signal: the orphan would serve on.
  if (::getppid() != supervisor) ::_exit(1);
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

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// The supervisor of run_workers, one step a method. It owns the held port, the claim, the
// metrics endpoint and the workers; its destructor releases the descriptors, whatever step
// failed.
class Supervisor {
 public:
  Supervisor(LineServerOptions options, int workers, const sigset_t& signals,
             const sigset_t& old_mask)
      : options_(std::move(options)),
        pool_(static_cast<std::size_t>(workers)),
        signals_(signals),
        old_mask_(old_mask) {}
  ~Supervisor() {
    metrics_.reset();  // before the region its scrapes read
    if (held_fd_ >= 0) ::close(held_fd_);
    if (claim_fd_ >= 0) ::close(claim_fd_);
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Binds the port (port 0 resolves once, and a restarted worker can always bind it again)
  // and claims its address. False, after logging why, when either fails.
  bool hold_port() {
    const std::string where = format_host_port(options_.host, options_.port);
    try {
      held_fd_ = bind_reuseport_socket(options_.host, options_.port);
      options_.port = bound_port(held_fd_);
    } catch (const std::system_error& e) {
      log().error("wheel-server: cannot listen on {}: {} ({})", where, e.code().message(),
                  e.code().value() == EADDRINUSE ? "EADDRINUSE" : e.what());
      return false;
    } catch (const std::exception& e) {
      log().error("wheel-server: cannot listen on {}: {}", where, e.what());
      return false;
    }
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof(bound);
    ::getsockname(held_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_length);
    claim_fd_ = claim_address(net::format_address(reinterpret_cast<const sockaddr*>(&bound)));
    if (claim_fd_ < 0) {
      const int error = errno;
      log().error("wheel-server: cannot listen on {}: {} ({}: another wheel-server listens there)",
                  where, std::generic_category().message(error),
                  error == EADDRINUSE ? "EADDRINUSE" : "claim");
      return false;
    }
    return true;
  }

  // With --metrics-port: maps the shared region (before any fork, so every worker inherits it)
  // and starts the endpoint. False, after logging why, when it cannot.
  bool start_metrics() {
    if (!options_.metrics_port) return true;
    try {
      region_ = std::make_unique<ServerMetricsRegion>(pool_.size());
      // The pids as reap() leaves them: a worker is dropped only once waited for, when its CPU
      // time moves to the supervisor's cutime (process_metrics.h).
      metrics_ = std::make_unique<SupervisorMetrics>(options_, *region_, signals_, alive_, [this] {
        std::vector<pid_t> pids;
        for (const Worker& w : pool_) pids.push_back(w.pid);
        return pids;
      });
      const std::uint16_t port = metrics_->listen();
      log().info("wheel-server: metrics on http://{}/metrics",
                 format_host_port(options_.metrics_host, port));
      return true;
    } catch (const std::system_error& e) {  // listen(): as the single-process server says it
      log().error(
          "wheel-server: {}",
          MetricsListenError::from(options_.metrics_host, *options_.metrics_port, e).what());
      return false;
    } catch (const std::exception& e) {
      log().error("wheel-server: cannot serve metrics on {}: {}",
                  format_host_port(options_.metrics_host, *options_.metrics_port), e.what());
      return false;
    }
  }

  // Forks every worker and waits until each listens. False, after logging and stopping those
  // that started, when one could not start.
  bool start_workers() {
    std::vector<int> ready(pool_.size(), -1);
    bool failed = false;
    for (std::size_t i = 0; i < pool_.size() && !failed; ++i) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        log().error("wheel-server: pipe: {}", std::generic_category().message(errno));
        failed = true;
        break;
      }
      pool_[i].pid =
          spawn(options_, static_cast<int>(i), fds[1], old_mask_, slot_of(i), inherited(fds[0]));
      pool_[i].started = Clock::now();
      ::close(fds[1]);
      ready[i] = fds[0];
      if (pool_[i].pid < 0) failed = true;
      if (pool_[i].pid > 0) ++alive_;
    }
    // "listening on" below must mean "connect now": wait for every worker's byte.
    for (std::size_t i = 0; i < pool_.size() && !failed; ++i) {
      pollfd p{ready[i], POLLIN, 0};
      char byte = 0;
      if (::poll(&p, 1, 30'000) != 1 || ::read(ready[i], &byte, 1) != 1) failed = true;
    }
    for (const int fd : ready) {
      if (fd >= 0) ::close(fd);
    }
    if (!failed) return true;
    log().error("wheel-server: a worker failed to start; stopping");
    for (const Worker& w : pool_) {
      if (w.pid > 0) ::kill(w.pid, SIGTERM);
    }
    for (const Worker& w : pool_) {
      if (w.pid > 0) ::waitpid(w.pid, nullptr, 0);
    }
    return false;
  }

  // Prints the one "listening on HOST:PORT" line that scripts read.
  void announce() const {
    const std::string where = format_host_port(options_.host, options_.port);
    std::printf("listening on %s\n", where.c_str());
    std::fflush(stdout);
    log().info("wheel-server: {} workers listening on {}", pool_.size(), where);
  }

  // Until every worker is gone: forwards SIGINT/SIGTERM, reaps, restarts, enforces the
  // shutdown deadline. Returns the exit code (0: every worker stopped cleanly on a signal).
  int supervise() {
    while (alive_ > 0) {
      const int sig = wait_for_signal();
      if ((sig == SIGINT || sig == SIGTERM) && !stopping_) begin_stop(sig);
      reap();  // whatever woke us
      if (!stopping_) {
        restart_due();
      } else if (Clock::now() > deadline_) {
        kill_stragglers();
      }
    }
    log().info("wheel-server: all workers stopped");
    return clean_ ? 0 : 1;
  }

 private:
  ServerMetricsSlot* slot_of(std::size_t i) const { return region_ ? &region_->slot(i) : nullptr; }
  // The supervisor's descriptors a new worker closes.
  std::vector<int> inherited(int ready_read_fd) const {
    std::vector<int> fds{held_fd_, claim_fd_, ready_read_fd};
    if (metrics_) metrics_->add_descriptors(&fds);
    return fds;
  }

  // Sleeps until a signal (serving scrapes meanwhile) or 100 ms; returns it, or -1.
  int wait_for_signal() {
    timespec ts{0, 100'000'000};
    if (metrics_) {
      metrics_->run_once();  // returns on a signal or after 100 ms
      ts = timespec{0, 0};
    }
    siginfo_t info{};
    return ::sigtimedwait(&signals_, &info, &ts);
  }

  void begin_stop(int sig) {
    log().info("wheel-server: got signal {}, stopping {} workers", sig, alive_);
    stopping_ = true;
    deadline_ = Clock::now() + std::chrono::seconds(5);
    for (const Worker& w : pool_) {
      if (w.pid > 0) ::kill(w.pid, sig);
    }
  }

  // Reaps every dead child: while stopping, notes an unclean exit; otherwise schedules the
  // worker's restart.
  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (std::size_t i = 0; i < pool_.size(); ++i) {
        if (pool_[i].pid != pid) continue;
        pool_[i].pid = -1;
        --alive_;
        if (metrics_) metrics_->retire(i);
        if (!stopping_) {
          log().warn("wheel-server: worker {} (pid {}) {}; restarting it", i, pid,
                     describe(status));
          pool_[i].restart_due = true;
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
          clean_ = false;
          log().warn("wheel-server: worker {} (pid {}) {}", i, pid, describe(status));
        }
      }
    }
  }

  // Restarts the dead workers whose last start is over a second old.
  void restart_due() {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < pool_.size(); ++i) {
      Worker& w = pool_[i];
      if (!w.restart_due || now - w.started < std::chrono::seconds(1)) continue;
      w.restart_due = false;
      w.started = now;
      w.pid = spawn(options_, static_cast<int>(i), -1, old_mask_, slot_of(i), inherited(-1));
      if (w.pid < 0) {
        log().error("wheel-server: fork: {}", std::generic_category().message(errno));
        w.restart_due = true;
      } else {
        ++alive_;
        log().info("wheel-server: worker {} restarted as pid {}", i, w.pid);
      }
    }
  }

  // Past the shutdown deadline: SIGKILL whoever is left (once).
  void kill_stragglers() {
    for (const Worker& w : pool_) {
      if (w.pid > 0) {
        log().warn("wheel-server: worker pid {} did not stop in time, killing it", w.pid);
        ::kill(w.pid, SIGKILL);
      }
    }
    clean_ = false;
    deadline_ = Clock::now() + std::chrono::hours(1);
  }

  LineServerOptions options_;
  std::vector<Worker> pool_;
  const sigset_t signals_;
  const sigset_t old_mask_;
  std::size_t alive_ = 0;
  int held_fd_ = -1;
  int claim_fd_ = -1;
  std::unique_ptr<ServerMetricsRegion> region_;
  std::unique_ptr<SupervisorMetrics> metrics_;  // declared after region_: destroyed first
  bool stopping_ = false;
  bool clean_ = true;
  Clock::time_point deadline_{};
};

}  // namespace

int run_workers(LineServerOptions options, int workers) {
  // Signals arrive through sigtimedwait; block them before any child exists.
  sigset_t wanted, old_mask;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGINT);
  sigaddset(&wanted, SIGTERM);
  sigaddset(&wanted, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &wanted, &old_mask);  // NOLINT(concurrency-mt-unsafe): single thread
  Supervisor supervisor(std::move(options), workers, wanted, old_mask);
  if (!supervisor.hold_port() || !supervisor.start_metrics() || !supervisor.start_workers()) {
    return 1;
  }
  supervisor.announce();
  return supervisor.supervise();
}

}  // namespace wheel::server
