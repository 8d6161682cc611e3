// SPDX-License-Identifier: Apache-2.0
// JobTable: a JobQueue's jobs by id, owning them. Open addressing with linear probing over an
// array of Job pointers (the key is the job's own id) and a parallel array of one-byte tags
// (7 bits of the id's hash, 0 = empty), so a slot is 9 bytes against about 40 for a node of
// std::unordered_map, and a probe reads a job only when its tag matches. Deletion by backward
// shift (no tombstones); grown to twice the slots past 3/4 full. Ids only grow and are hashed
// by Fibonacci multiplication, which spreads consecutive ids evenly over the slots.
//
// Threads: as the queue that owns it (one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "wheel/jobs/model/job.h"

namespace wheel::jobs {

class JobTable {
 public:
  JobTable() = default;
  ~JobTable();  // deletes every job it holds
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  // The job with `id`, or nullptr.
  Job* find(std::uint64_t id) const;
  // Takes `job` (REQUIRES: not null). False, and `job` deleted, when a job with its id is
  // already here. Throws std::bad_alloc (the job is then deleted).
  bool insert(std::unique_ptr<Job> job);
  // Deletes the job with `id`; false when there is none.
  bool erase(std::uint64_t id);
  std::size_t size() const { return size_; }
  // Makes room for `n` jobs without growing (a restart knows how many come).
  void reserve(std::size_t n);

 private:
  static std::uint64_t hash(std::uint64_t id) { return id * 0x9E3779B97F4A7C15ull; }
  // The slot a probe for `id` starts at: the hash's top bits.
  std::size_t home(std::uint64_t id) const { return static_cast<std::size_t>(hash(id) >> shift_); }
  // 128..255 from the hash's bits 8..14 (not the top bits the home comes from): never 0.
  static std::uint8_t tag(std::uint64_t id) {
    return static_cast<std::uint8_t>(((hash(id) >> 8) & 0x7F) | 0x80);
  }
  void rehash(std::size_t slots);  // REQUIRES: a power of two >= 8, room for size_

  std::unique_ptr<Job*[]> slots_;
  std::unique_ptr<std::uint8_t[]> tags_;  // 0: the slot is empty
  std::size_t mask_ = 0;                  // slots - 1 (0: no array yet)
  int shift_ = 64;                        // 64 - log2(slots)
  std::size_t size_ = 0;
};

}  // namespace wheel::jobs
