// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/model/job_table.h"

#include <bit>

namespace wheel::jobs {

JobTable::~JobTable() {
  for (std::size_t i = 0; mask_ != 0 && i <= mask_; ++i) delete slots_[i];
}

Job* JobTable::find(std::uint64_t id) const {
  if (mask_ == 0) return nullptr;
  const std::uint8_t t = tag(id);
  for (std::size_t i = home(id);; i = (i + 1) & mask_) {
    if (tags_[i] == 0) return nullptr;
    if (tags_[i] == t && slots_[i]->id == id) return slots_[i];
  }
}

void JobTable::rehash(std::size_t slots) {
  std::unique_ptr<Job*[]> old = std::move(slots_);
  std::unique_ptr<std::uint8_t[]> old_tags = std::move(tags_);
  const std::size_t old_slots = mask_ == 0 ? 0 : mask_ + 1;
  slots_ = std::make_unique<Job*[]>(slots);         // zeroed
  tags_ = std::make_unique<std::uint8_t[]>(slots);  // zeroed: every slot empty
  mask_ = slots - 1;
  shift_ = 64 - std::countr_zero(slots);
  for (std::size_t i = 0; i < old_slots; ++i) {
    if (old_tags[i] == 0) continue;
    Job* job = old[i];
    std::size_t j = home(job->id);
    while (tags_[j] != 0) j = (j + 1) & mask_;
    slots_[j] = job;
    tags_[j] = old_tags[i];
  }
}

void JobTable::reserve(std::size_t n) {
  std::size_t slots = 8;
  while (slots / 4 * 3 < n) slots *= 2;
  if (mask_ == 0 || slots > mask_ + 1) rehash(slots);
}

bool JobTable::insert(std::unique_ptr<Job> job) {
  if (mask_ == 0 || size_ + 1 > (mask_ + 1) / 4 * 3) reserve(size_ + 1);
  const std::uint64_t id = job->id;
  const std::uint8_t t = tag(id);
  std::size_t i = home(id);
  for (; tags_[i] != 0; i = (i + 1) & mask_) {
    if (tags_[i] == t && slots_[i]->id == id) return false;  // `job` is deleted
  }
  slots_[i] = job.release();
  tags_[i] = t;
  ++size_;
  return true;
}

bool JobTable::erase(std::uint64_t id) {
  if (mask_ == 0) return false;
  const std::uint8_t t = tag(id);
  std::size_t i = home(id);
  for (;; i = (i + 1) & mask_) {
    if (tags_[i] == 0) return false;
    if (tags_[i] == t && slots_[i]->id == id) break;
  }
  delete slots_[i];
  --size_;
  // Backward shift: move later members of the run back into the hole when their home allows,
  // so a lookup never meets a hole before its job.
  std::size_t hole = i;
  for (std::size_t j = (i + 1) & mask_; tags_[j] != 0; j = (j + 1) & mask_) {
    const std::size_t h = home(slots_[j]->id);
    // The job at j may move to `hole` unless its home lies cyclically in (hole, j].
    const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    tags_[hole] = tags_[j];
    hole = j;
  }
  slots_[hole] = nullptr;
  tags_[hole] = 0;
  return true;
}

}  // namespace wheel::jobs
