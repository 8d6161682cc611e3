// SPDX-License-Identifier: Apache-2.0
// wheel-idle-bench, implementation "libuv": one uv_timer_t per connection, started with the idle
// time as its repeat, and uv_timer_again() per read (libuv's documented idle-timeout idiom): a
// removal from and an insertion into libuv's binary min-heap of timers.
#include <memory>

#include "impls.h"
#include "uv_per_read.h"

namespace wheel::bench {

namespace {

class LibuvPerRead final : public UvPerReadImpl {
 public:
  explicit LibuvPerRead(const PerReadParams& p)
      : p_(p), timers_(new uv_timer_t[static_cast<std::size_t>(p.n)]) {}

  ~LibuvPerRead() override {
    for (std::int64_t i = 0; i < opened_; ++i) {
      uv_close(reinterpret_cast<uv_handle_t*>(&timers_[i]), nullptr);
    }
    uv_run(runner_.loop(), UV_RUN_DEFAULT);
  }

  const char* name() const override { return "libuv"; }

  void open_all() override {
    uv_update_time(runner_.loop());
    const auto ms = static_cast<std::uint64_t>(p_.idle_ms);
    for (; opened_ < p_.n; ++opened_) {
      uv_timer_t* t = &timers_[opened_];
      uv_timer_init(runner_.loop(), t);
      t->data = &idle_events_;
      // Repeat = the idle time: a deadline that passes re-arms for the full time.
      uv_timer_start(
          t, [](uv_timer_t* h) { ++*static_cast<std::uint64_t*>(h->data); }, ms, ms);
    }
  }

  void read_batch(ConnPicker& picker, std::int64_t count) override {
    for (std::int64_t k = 0; k < count; ++k) uv_timer_again(&timers_[picker.next()]);
  }

  std::string read_note() const override { return "uv_timer_again (heap remove + insert)"; }

 private:
  PerReadParams p_;
  std::unique_ptr<uv_timer_t[]> timers_;
  std::int64_t opened_ = 0;
};

}  // namespace

PerReadImpl* make_libuv_per_read(const PerReadParams& p) {
  return new LibuvPerRead(p);
}

}  // namespace wheel::bench
