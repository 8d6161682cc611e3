// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/stop_signals.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

#include "wheel/load/process_plan.h"

namespace wheel::load {
namespace {

// Everything the handlers touch: plain storage and lock-free atomics.
int g_pipe[2] = {-1, -1};
std::atomic<int> g_caught{0};
bool g_child = false;
pid_t g_children[kMaxProcesses];
std::atomic<unsigned> g_child_count{0};
char g_abort_path[4096];
std::atomic<bool> g_has_abort_path{false};

void on_signal(int sig) {
  const int saved_errno = errno;
  int expected = 0;
  if (g_caught.compare_exchange_strong(expected, sig)) {
    const unsigned char byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &byte, 1);
  } else if (!g_child) {
    // The second signal: nothing more is waited for.
    if (g_has_abort_path.load()) ::unlink(g_abort_path);
    const unsigned n = g_child_count.load();
    for (unsigned i = 0; i < n; ++i) ::kill(g_children[i], SIGKILL);
    // Die of the signal itself: default action, unblocked (a handler runs with its own
    // signal blocked), so the shell sees the usual status.
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
    _exit(128 + sig);  // if the signal was blocked after all
  }
  errno = saved_errno;
}

void make_pipe_and_handlers() {
  if (g_pipe[0] >= 0) ::close(g_pipe[0]);
  if (g_pipe[1] >= 0) ::close(g_pipe[1]);
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  g_caught = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

void install_stop_signals() {
  g_child = false;
  make_pipe_and_handlers();
}

void install_stop_signals_in_child(pid_t parent) {
  g_child = true;
  g_child_count = 0;
  g_has_abort_path = false;
  // Whatever kills the parent, even SIGKILL, takes this child with it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent died before prctl took effect
  make_pipe_and_handlers();
}

int stop_signal_fd() {
  return g_pipe[0];
}

int stop_signal_caught() {
  return g_caught.load();
}

void register_child_for_stop(pid_t child) {
  const unsigned n = g_child_count.load();
  if (n >= kMaxProcesses) return;
  g_children[n] = child;
  g_child_count.store(n + 1);
}

void remove_on_abort(const char* path) {
  g_has_abort_path = false;
  if (path == nullptr || std::strlen(path) >= sizeof g_abort_path) return;
  std::strcpy(g_abort_path, path);
  g_has_abort_path = true;
}

}  // namespace wheel::load
