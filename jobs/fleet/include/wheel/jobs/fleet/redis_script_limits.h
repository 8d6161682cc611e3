// SPDX-License-Identifier: Apache-2.0
// The bounds of what one Lua script of the Redis store (redis_store.h) does: a script holds
// Redis alone while it runs, so each bounds its work. Shared by the store and its scripts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wheel::jobs {

// Most jobs one kick script moves; a larger kick runs script after script, so that other
// clients' commands run between them (100,000 jobs in one script held Redis for ~2 s).
inline constexpr std::uint64_t kMaxKickPerScript = 1000;
// Most due timers one script promotes (the rest go with the next script or scan). Small: a
// script holds Redis alone, and 1,000 promotions took ~200 ms, timing out commands behind it.
inline constexpr std::size_t kMaxPromotePerScript = 100;
// Most leases one give_back script releases (the same reason: a script holds Redis alone).
inline constexpr std::size_t kMaxGiveBackPerScript = 1000;

// Most requests one batch script carries (puts, deletes or claims of one tube that queued while
// the previous script of their kind was in flight), and most body bytes in one batch of puts
// past its first: one script serves them all, and holds Redis alone while it runs.
inline constexpr std::size_t kMaxBatchPerScript = 256;
inline constexpr std::size_t kMaxBatchBytes = 1 << 20;
// Scripts of one kind in flight at once: a loop turn's requests go at the turn's end while
// fewer are, else they queue for the next batch. One (classic group commit) measured best here:
// 2 halved the batches, costing ~35% more Redis commands per job and ~15-25% of the throughput.
inline constexpr std::size_t kMaxBatchesInFlight = 1;

}  // namespace wheel::jobs
