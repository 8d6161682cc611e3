// SPDX-License-Identifier: Apache-2.0
// SIGINT and SIGTERM for a load run, as wrk, k6 and vegeta treat them: the first signal stops
// the run, which still reports what it measured; a second one ends the process at once.
//
// The handlers only do async-signal-safe work: the first signal's number is written to a pipe
// whose read end a loop watches (LoadRunner's stop_fd, the fan-out's poll); a second signal
// removes the temporary report file, SIGKILLs the registered child processes and dies of the
// signal (its default action), so a shell sees the usual 128 + signal status.
//
// Process-wide state, like the signal dispositions themselves. Not for use from several threads.
#pragma once

#include <sys/types.h>

namespace wheel::load {

// Installs the handlers for SIGINT and SIGTERM and makes the pipe. Call once, before the run.
// Throws std::runtime_error if the pipe cannot be made.
void install_stop_signals();

// In a forked child of the fan-out: a pipe of its own, no children, and every signal only stops
// the run (the parent decides when to kill). Also asks the kernel to SIGKILL this process when
// its parent dies (PR_SET_PDEATHSIG), and exits at once if the parent is already gone.
// `parent` is the parent's pid, read before fork().
void install_stop_signals_in_child(pid_t parent);

// The read end of the pipe: readable once a signal arrived (one byte, its number); -1 before
// install. Non-blocking.
int stop_signal_fd();

// The first signal caught, or 0.
int stop_signal_caught();

// Remembers a child to SIGKILL on the second signal (at most kMaxProcesses are kept).
void register_child_for_stop(pid_t child);

// A file to remove on the second signal (the report's temporary file); nullptr for none. The
// path is copied (at most 4095 bytes; a longer one is not removed).
void remove_on_abort(const char* path);

}  // namespace wheel::load
