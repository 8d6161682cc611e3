// SPDX-License-Identifier: Apache-2.0
// The hash slot of a key in Redis Cluster: CRC16 (XMODEM: polynomial 0x1021, initial 0) of the
// key's hash tag, modulo 16384, as the cluster specification defines it. The hash tag is what
// lies between the first '{' and the first '}' after it, when that is not empty; otherwise the
// whole key. So "{user1}.name" and "{user1}.mail" share a slot, and a script whose keys all
// carry one tag runs on one node.
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace wheel::jobs {

inline constexpr std::uint16_t kRedisClusterSlots = 16384;

// CRC16/XMODEM of `data` (Redis's crc16.c): "123456789" gives 0x31C3.
std::uint16_t redis_crc16(std::string_view data);

// The part of `key` that is hashed: its hash tag, or the whole key.
std::string_view redis_hash_tag(std::string_view key);

// The slot of `key`, 0 to kRedisClusterSlots - 1.
std::uint16_t redis_key_slot(std::string_view key);

}  // namespace wheel::jobs
