// Internal: the concrete Timeout node that stores a task of type F inline, and the saturating
// conversion of any std::chrono::duration to nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <ratio>
#include <type_traits>
#include <utility>

#include "wheel/timeout.h"

namespace wheel::detail {

template <class F>
concept TimerTask = std::is_invocable_v<F&, Timeout&> || std::is_invocable_v<F&>;

template <class F>
void invoke_task(F& task, Timeout& timeout) {
  if constexpr (std::is_invocable_v<F&, Timeout&>) {
    task(timeout);
  } else {
    task();
  }
}

// The node: Timeout's fields followed by the task. A union member lets the task be destroyed
// before the node (see the ownership model in timeout.h).
template <class F>
class TaskTimeout final : public Timeout {
 public:
  template <class Arg>
  TaskTimeout(TimerCore* core, Arg&& task) : Timeout(core) {
    ::new (static_cast<void*>(std::addressof(task_))) F(std::forward<Arg>(task));
  }
  ~TaskTimeout() override {}  // the task was destroyed through destroy_task()

 private:
  void invoke() override { invoke_task(task_, *this); }
  void destroy_task() noexcept override { task_.~F(); }

  union {
    F task_;
  };
};

// A stateless task (a capture-less lambda) takes no room at all: nothing to destroy early.
template <class F>
requires(std::is_empty_v<F>&& std::is_trivially_destructible_v<F>) class TaskTimeout<F> final
    : public Timeout {
 public:
  template <class Arg>
  TaskTimeout(TimerCore* core, Arg&& task) : Timeout(core), task_(std::forward<Arg>(task)) {}

 private:
  void invoke() override { invoke_task(task_, *this); }
  void destroy_task() noexcept override {}

  [[no_unique_address]] F task_;
};

// Converts without overflow: durations beyond the range of nanoseconds clamp to its ends.
template <class Rep, class Period>
constexpr std::chrono::nanoseconds saturating_nanoseconds(std::chrono::duration<Rep, Period> d) {
  using std::chrono::nanoseconds;
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if constexpr (std::is_floating_point_v<Rep>) {
    const long double ns =
        static_cast<long double>(d.count()) * Period::num * 1'000'000'000.0L / Period::den;
    if (!(ns == ns)) return nanoseconds::zero();  // NaN
    if (ns >= static_cast<long double>(kMax)) return nanoseconds::max();
    if (ns <= -static_cast<long double>(kMax)) return nanoseconds::min();
    return nanoseconds(static_cast<std::int64_t>(ns));
  } else {
    using ToNanos = std::ratio_divide<Period, std::nano>;
    if constexpr (ToNanos::den == 1 && ToNanos::num > 1) {  // coarser than 1 ns: may overflow
      constexpr auto kLimit = kMax / ToNanos::num;
      if (d.count() > kLimit) return nanoseconds::max();
      if (d.count() < -kLimit) return nanoseconds::min();
    }
    return std::chrono::duration_cast<nanoseconds>(d);
  }
}

}  // namespace wheel::detail
