// SPDX-License-Identifier: Apache-2.0
// ReadyMarks: a tube's ready jobs in the order they became ready, as (since, id) marks, for the
// web console's "oldest ready" age. A first-in, first-out queue on one vector with a read
// position: an empty one holds no memory (a std::deque allocates about 0.6 KB as soon as it is
// made, which at 100,000 tubes was 58 MB for tubes that never had a ready job), and the space
// read past is given back in amortised O(1) per mark.
//
// Threads: as the tube that holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "wheel/jobs/model/millis.h"

namespace wheel::jobs {

// A ready job as of when it became ready.
struct ReadyMark {
  Millis since;
  std::uint64_t id;
};

class ReadyMarks {
 public:
  // Marks not yet read past.
  std::size_t size() const { return marks_.size() - head_; }
  bool empty() const { return size() == 0; }
  // Elements held, read or not: 0 for a tube that never had a ready job or whose marks were all
  // read past.
  std::size_t capacity() const { return marks_.capacity(); }

  // The oldest mark not read past. Precondition: !empty().
  const ReadyMark& front() const { return marks_[head_]; }
  // The i-th mark not read past, oldest first. Precondition: i < size().
  const ReadyMark& at(std::size_t i) const { return marks_[head_ + i]; }

  // Adds the newest mark.
  void push_back(const ReadyMark& mark) { marks_.push_back(mark); }

  // Reads past the oldest mark. Precondition: !empty().
  void pop_front() {
    ++head_;
    if (head_ == marks_.size()) {
      clear();
    } else if (head_ >= kCompactAfter && head_ * 2 >= marks_.size()) {
      // At least half read past: move the rest down, in O(rest) after as many pops.
      marks_.erase(marks_.begin(), marks_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  // Replaces every mark; `marks` must be oldest first.
  void assign(std::vector<ReadyMark> marks) {
    marks_ = std::move(marks);
    head_ = 0;
  }

  // Drops every mark and gives their memory back.
  void clear() {
    std::vector<ReadyMark>().swap(marks_);
    head_ = 0;
  }

 private:
  static constexpr std::size_t kCompactAfter = 64;
  std::vector<ReadyMark> marks_;
  std::size_t head_ = 0;
};

}  // namespace wheel::jobs
