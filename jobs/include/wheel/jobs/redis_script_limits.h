// SPDX-License-Identifier: Apache-2.0
// The bounds of what one Lua script of the Redis store (redis_store.h) does: a script holds
// Redis alone while it runs, so each bounds its work. Shared by the store and its scripts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wheel::jobs {

// Most jobs a kick moves in one command (one script: Redis serves nobody else meanwhile).
inline constexpr std::uint64_t kMaxKickPerCommand = 100'000;
// Most due timers one script promotes (the rest go with the next script or scan). Small: a
// script holds Redis alone, and 1,000 promotions took ~200 ms, timing out commands behind it.
inline constexpr std::size_t kMaxPromotePerScript = 100;
// Most leases one give_back script releases (the same reason: a script holds Redis alone).
inline constexpr std::size_t kMaxGiveBackPerScript = 1000;

}  // namespace wheel::jobs
