// SPDX-License-Identifier: Apache-2.0
// ReplyOrder: the reply slots of one connection of the BeanstalkFront, one per request started,
// written strictly in request order. A slot that completes with none open before it goes to the
// bytes to write at once; one that completes early is kept until every slot before it did.
// Counts what the front bounds: the slots in flight (started, not complete), their puts' body
// bytes, and the bytes of complete replies not taken yet.
//
// Inline: it is on the path of every request (memory-only puts run it ~10^5 times a second).
// Threads: loop thread only (the front's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wheel::jobs {

class ReplyOrder {
 public:
  // Opens the slot of the request started next, in flight until it completes (with a put's
  // body of `put_bytes`); its sequence number.
  std::uint64_t open(std::size_t put_bytes) {
    const std::uint64_t seq = next();
    slots_.push_back({put_bytes, false});
    ++in_flight_;
    in_flight_bytes_ += put_bytes;
    return seq;
  }
  // Opens a slot complete from the start with `reply` (the parser's OUT_OF_MEMORY).
  void open_complete(std::string_view reply) {
    early_.emplace(next(), reply);
    slots_.push_back({0, true});
    ready_bytes_ += reply.size();
  }

  // Whether slot `seq` is in flight: opened and not complete yet.
  bool in_flight(std::uint64_t seq) const {
    return seq >= head_ && seq < next() && !slots_[first_ + (seq - head_)].ready;
  }
  // Completes slot `seq` with `reply`; false when it is not in flight.
  bool complete(std::uint64_t seq, std::string_view reply) {
    if (!in_flight(seq)) return false;
    Slot& slot = slots_[first_ + (seq - head_)];
    --in_flight_;
    in_flight_bytes_ -= slot.put_bytes;
    ready_bytes_ += reply.size();
    if (seq == head_) {  // the usual case: in order, straight to the bytes to write
      ordered_.append(reply);
      pop(1);
    } else {
      slot.ready = true;
      early_.emplace(seq, reply);
    }
    return true;
  }

  // The oldest slot not written yet: sequence numbers head() .. head() + n - 1 are the `n`
  // oldest when oldest_in_flight(n).
  std::uint64_t head() const { return head_; }
  // Whether there are `n` slots not written and the `n` oldest are all in flight.
  bool oldest_in_flight(std::size_t n) const {
    if (n > slots_.size() - first_) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[first_ + i].ready) return false;
    }
    return true;
  }
  // Completes the `n` oldest slots with their replies one after another in `replies`, in one
  // piece. REQUIRES: oldest_in_flight(n).
  void complete_oldest(std::size_t n, std::string_view replies) {
    for (std::size_t i = 0; i < n; ++i) in_flight_bytes_ -= slots_[first_ + i].put_bytes;
    in_flight_ -= n;
    ready_bytes_ += replies.size();
    ordered_.append(replies);
    pop(n);
  }

  // The complete replies with none in flight before them, in order (the bytes to write),
  // taken out.
  std::string take() {
    while (first_ < slots_.size() && slots_[first_].ready) {
      auto it = early_.find(head_);
      ordered_ += it->second;
      early_.erase(it);
      pop(1);
    }
    ready_bytes_ -= ordered_.size();
    return std::exchange(ordered_, {});
  }

  std::size_t in_flight() const { return in_flight_; }
  std::size_t in_flight_bytes() const { return in_flight_bytes_; }  // puts' bodies in flight
  std::size_t ready_bytes() const { return ready_bytes_; }  // complete replies not taken yet

 private:
  struct Slot {
    std::size_t put_bytes = 0;  // a put's body, in flight until the slot completes
    bool ready = false;         // complete early: its reply is in early_
  };
  std::uint64_t next() const { return head_ + (slots_.size() - first_); }
  // The `n` oldest slots are written.
  void pop(std::size_t n) {
    first_ += n;
    head_ += n;
    if (first_ == slots_.size()) {
      slots_.clear();
      first_ = 0;
    } else if (first_ >= 64 && first_ >= slots_.size() - first_) {
      slots_.erase(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(first_));
      first_ = 0;
    }
  }

  // The slots not written yet: slots_[first_ + i] is sequence number head_ + i. A vector used
  // as a queue, with no allocation per request: emptied whenever every slot is written, its
  // written front erased once it is the larger part.
  std::vector<Slot> slots_;
  std::size_t first_ = 0;
  std::uint64_t head_ = 0;
  std::map<std::uint64_t, std::string> early_;  // replies of slots complete early
  std::string ordered_;          // complete replies with none in flight before them, not taken yet
  std::size_t ready_bytes_ = 0;  // complete replies not taken yet (ordered_ and early_)
  std::size_t in_flight_ = 0;
  std::size_t in_flight_bytes_ = 0;
};

}  // namespace wheel::jobs
