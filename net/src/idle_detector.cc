// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/idle_detector.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace wheel::net {

const char* to_string(IdleKind kind) {
  // In IdleKind's order; a value outside it (a cast from a bad number) reads "?".
  constexpr const char* kNames[] = {"reader", "writer", "all"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(IdleKind::kAll) + 1);
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "?";
}

namespace {

constexpr int kKindShift = 62;
constexpr std::uint64_t kIdMask = (std::uint64_t{1} << kKindShift) - 1;

std::uint32_t checked_ms(std::chrono::milliseconds time, const char* what) {
  if (time.count() < 0 || time > kMaxIdleTime) {
    throw std::invalid_argument(std::string(what) + " idle time must be within 0 ..= " +
                                std::to_string(kMaxIdleTime.count()) + " ms");
  }
  return static_cast<std::uint32_t>(time.count());
}

}  // namespace

// 16 bytes, so a timer node stays small: the kind rides in the top two bits of the id.
struct IdleDetector::Task {
  IdleDetector* detector;
  std::uint64_t id_and_kind;
  void operator()(LoopWheel::Handle self) const {
    detector->on_timeout(id_and_kind & kIdMask, static_cast<IdleKind>(id_and_kind >> kKindShift),
                         self);
  }
};

IdleDetector::IdleDetector(LoopTimer& timer, Owner& owner, Options options)
    : timer_(timer), owner_(owner), options_(options) {}

void IdleDetector::watch(std::uint64_t id, IdleWatch& watch, const IdleTimes& times) {
  if (id > kIdMask) throw std::invalid_argument("IdleDetector::watch: id must be below 2^62");
  if (watch.watched()) throw std::logic_error("IdleDetector::watch: already watched");
  watch.delay_ms_ = {checked_ms(times.reader, "reader"), checked_ms(times.writer, "writer"),
                     checked_ms(times.all, "all")};
  const std::uint64_t now = now_ms();
  watch.last_read_ms_ = watch.last_write_ms_ = now;
  watch.flags_ = IdleWatch::kWatched | IdleWatch::kFirstReader | IdleWatch::kFirstWriter |
                 IdleWatch::kFirstAll | (options_.observe_output ? IdleWatch::kObserveOutput : 0);
  for (int k = 0; k < 3; ++k) {
    if (watch.delay_ms_[k] > 0) arm(id, watch, static_cast<IdleKind>(k), watch.delay_ms_[k]);
  }
}

void IdleDetector::unwatch(IdleWatch& watch) {
  for (LoopWheel::Handle& handle : watch.timeouts_) {
    if (handle) timer_.cancel(handle);  // on this thread: it never fires now
    handle.reset();
  }
  watch.flags_ = 0;
}

void IdleDetector::arm(std::uint64_t id, IdleWatch& watch, IdleKind kind, std::uint64_t delay_ms) {
  const auto k = static_cast<std::size_t>(kind);
  watch.timeouts_[k] =
      timer_.new_timeout(Task{this, id | static_cast<std::uint64_t>(kind) << kKindShift},
                         std::chrono::milliseconds(delay_ms));
}

void IdleDetector::on_timeout(std::uint64_t id, IdleKind kind, LoopWheel::Handle fired) {
  IdleWatch* watch = owner_.find_watch(id);
  const auto k = static_cast<std::size_t>(kind);
  if (watch == nullptr || !watch->watched() || watch->timeouts_[k] != fired) {
    ++stale_;  // its object is gone (destroyed without unwatch) or watched anew under its id
    return;
  }
  watch->timeouts_[k].reset();
  // The cached loop time may be a whole batch of callbacks old.
  const std::uint64_t now = timer_.fresh_now_ms();
  std::uint64_t last = 0;
  std::uint8_t first_flag = 0;
  switch (kind) {
    case IdleKind::kReader:
      last = watch->last_read_ms_;
      first_flag = IdleWatch::kFirstReader;
      break;
    case IdleKind::kWriter:
      last = watch->last_write_ms_;
      first_flag = IdleWatch::kFirstWriter;
      break;
    case IdleKind::kAll:
      last = std::max(watch->last_read_ms_, watch->last_write_ms_);
      first_flag = IdleWatch::kFirstAll;
      break;
  }
  const std::uint64_t delay = watch->delay_ms_[k];
  const std::uint64_t idle_for = now - std::min(now, last);
  if (idle_for < delay) {  // active meanwhile: wait for the rest of the period only
    arm(id, *watch, kind, delay - idle_for);
    return;
  }
  arm(id, *watch, kind, delay);  // first, so on_idle may unwatch (which cancels it)
  const bool first = (watch->flags_ & first_flag) != 0;
  watch->flags_ &= static_cast<std::uint8_t>(~first_flag);
  owner_.on_idle(id, IdleEvent{kind, first});
}

}  // namespace wheel::net
