// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-server: run_workers, the pre-fork supervisor behind `--workers N`. One machine
// goes past the per-process open-file limit by running N processes, each a full Server (own loop,
// own timer), all accepting on one port through SO_REUSEPORT.
#pragma once

#include "wheel/server/line_server_options.h"

namespace wheel::server {

// Binds options.host:options.port itself first (so that port 0 resolves once and every worker
// shares it; the bound socket is not listening and receives no clients), forks `workers`
// processes that each listen on that port with SO_REUSEPORT, waits until all listen, then
// prints "listening on HOST:PORT" once on stdout. It then forwards SIGINT/SIGTERM to the
// workers and restarts, with a log line, any worker that dies (at most once a second each).
// Returns the process exit code: 0 after a signal made every worker exit cleanly, 1 when a
// worker could not start or did not exit cleanly.
// REQUIRES: called from a single-threaded process (it forks), with workers >= 1.
int run_workers(LineServerOptions options, int workers);

}  // namespace wheel::server
