// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_cluster_slot.h"

namespace wheel::jobs {

std::uint16_t redis_crc16(std::string_view data) {
  // Bit by bit: keys are short, and eight shifts a byte keep the polynomial in plain sight.
  std::uint16_t crc = 0;
  for (unsigned char byte : data) {
    crc ^= static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

std::string_view redis_hash_tag(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t redis_key_slot(std::string_view key) {
  return redis_crc16(redis_hash_tag(key)) & (kRedisClusterSlots - 1);
}

}  // namespace wheel::jobs
