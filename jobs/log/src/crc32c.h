// SPDX-License-Identifier: Apache-2.0
// Internal. CRC32C (Castagnoli), the checksum of every log record: the SSE4.2 crc32
// instruction when the CPU has it (chosen once at run time), else a slicing table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wheel::jobs::crc32c {

// Continues a CRC32C over `n` bytes at `data`, starting from `crc` (0 for a fresh checksum).
std::uint32_t extend(std::uint32_t crc, const void* data, std::size_t n);
inline std::uint32_t value(const void* data, std::size_t n) {
  return extend(0, data, n);
}

// The portable path alone (tests compare both paths on the same input).
std::uint32_t extend_portable(std::uint32_t crc, const void* data, std::size_t n);
// True when extend() uses the SSE4.2 instruction on this CPU.
bool hardware_accelerated();

// A stored CRC is masked (rotated and offset, as LevelDB does) so that the CRC of bytes that
// themselves contain CRCs stays well-distributed.
inline std::uint32_t mask(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline std::uint32_t unmask(std::uint32_t masked) {
  const std::uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace wheel::jobs::crc32c
