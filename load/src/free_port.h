// SPDX-License-Identifier: Apache-2.0
// Internal to load/: a loopback TCP port that nothing listens on, for a server the load tools
// start (its metrics endpoint, a peer's port).
#pragma once

#include <cstdint>

namespace wheel::load {

// Binds an ephemeral port on 127.0.0.1, reads it back and releases it: free at the time of the
// call (another process may take it before it is used). Throws std::runtime_error when there
// is none. Safe from any thread.
std::uint16_t free_loopback_port();

}  // namespace wheel::load
