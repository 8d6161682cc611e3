// SPDX-License-Identifier: Apache-2.0
// Internal to the apps: which combinations of --reader-idle, --writer-idle and --all-idle can
// never fire. The idle kinds have Netty's IdleStateHandler semantics: all-idle waits for a
// time without input *or* output, so
//   - with --writer-idle W (the server sends PING after W without output) and --all-idle
//     A >= W, the PING is output and restarts the all-idle time: all-idle never fires;
//   - with --reader-idle R and --all-idle A >= R, reader-idle closes a silent client first.
// When nothing else closes a silent client (reader-idle 0), the first case is an error: the
// operator asked for idle closes that never happen. Otherwise it is a warning.
#pragma once

#include <chrono>
#include <string>

namespace wheel::apps {

struct IdleCheck {
  std::string error;    // non-empty: refuse the command line (exit 2) with this message
  std::string warning;  // non-empty: run, but say this once on stderr
};

// Checks the three idle times (0 = off). Safe from any thread.
IdleCheck check_idle_options(std::chrono::milliseconds reader, std::chrono::milliseconds writer,
                             std::chrono::milliseconds all);

}  // namespace wheel::apps
