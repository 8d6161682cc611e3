// SPDX-License-Identifier: Apache-2.0
// Internal: where timeout nodes live. A process-wide pool of fixed-size slots with a cache per
// thread, so new_timeout() and the release of a node cost a few instructions instead of a
// malloc/free, and a node takes exactly its size (glibc would round 56 bytes up to a 64-byte
// chunk). The pool outlives every timer and handle; its memory is reused, never returned to the
// system. Safe from any thread; a node may be freed on another thread than the one that
// allocated it.
#pragma once

#include <cstddef>

namespace wheel::detail {

// Sizes up to this many bytes (8-byte aligned) come from the pool; larger ones from ::operator new.
inline constexpr std::size_t kMaxPooledNodeSize = 256;

// Returns `size` bytes aligned to 8. Throws std::bad_alloc.
void* allocate_node(std::size_t size);
// Returns a node of `size` bytes (the size it was allocated with) to the pool.
void deallocate_node(void* p, std::size_t size) noexcept;

}  // namespace wheel::detail
