// SPDX-License-Identifier: Apache-2.0
// The soak (scripts/soak.sh; CI runs one minute): wheel-server --workers 2 under back-to-back
// rounds of a mixed wheel-load, then checks that nothing grew or leaked and that the server's
// counters agree with what the clients saw.
//
// Load: rounds of `round` seconds, each 1,000 connections: 40% idle (the server must close each
// after --reader-idle 5s, at most `tolerance` late), and of the active 60%: DELAY senders (a 2 s
// DELAY each second, each DELAYED on time), slow readers (bursts of 32 PINGs read at ~5 KB/s),
// garbage senders (each unknown command answered "ERR unknown command") and PING senders; plus
// 20 churn slots cycling connect / PING / QUIT (every 4th: reset) at 100 cycles/s. Every round
// must pass wheel-load's own checks. A failed round is reported and the soak goes on.
//
// Checks at the end (each failure is one sentence of the result):
//   rss       the server's RSS (supervisor + workers), sampled in the middle of each round, is at
//             the last round at most rss_slack_pct % + 4 MiB above the first round's sample
//   fds       the descriptors of supervisor + workers are those from before the load, except one
//             /dev/null per worker (libuv's EMFILE reserve; see fd_changes)
//   counters  the server's Prometheus counters over the load (its /metrics, scraped before and
//             after, as wheel-load --metrics-url does) against the clients' sums: accepted
//             connections, PINGs answered, DELAYED delivered, idle closes; none left open, no
//             DELAY pending, nothing rejected, no slow consumer closed. A churn cycle cut off by
//             the end of a round may be accepted (and its PING answered) unseen by the client:
//             that many more are allowed. Unknown commands answered and accept errors, which
//             /metrics does not carry, come from each worker's last stats line in its log.
//   shutdown  SIGTERM ends the server with status 0 and every worker logs its final counters
//   logs      no warning, error or critical line in the server's log
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace wheel::load {

struct SoakOptions {
  std::string server_path;  // the wheel-server program
  unsigned minutes = 1;     // the soak's length: ceil(minutes * 60 / round) rounds, at least 2
  std::chrono::seconds round{30};
  std::chrono::milliseconds tolerance{3000};  // how late an idle close or DELAYED may be
  unsigned rss_slack_pct = 25;
  std::string dir;  // the server's logs and each round's report go here; must exist
};

struct SoakResult {
  std::vector<std::string> failures;  // empty: the soak held
  std::string figures;                // one paragraph for a human
};

// Runs the soak; progress lines go to stderr. Throws std::runtime_error when the server cannot
// be started (the message says why). REQUIRES: no other thread in this process (the rounds run
// wheel-load's loop here).
SoakResult run_soak(const SoakOptions& options);

}  // namespace wheel::load
