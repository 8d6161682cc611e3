// SPDX-License-Identifier: Apache-2.0
#include "per_read_driver.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "bench_report.h"

namespace wheel::bench {

std::int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

int thread_count() {
  int count = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    ++count;
  return count;
}

ThreadProbe::ThreadProbe() : tid_(gettid()) {
  if (const int rc = pthread_getcpuclockid(pthread_self(), &clock_); rc != 0) {
    throw std::system_error(rc, std::generic_category(), "pthread_getcpuclockid");
  }
}

ThreadProbe::Sample ThreadProbe::sample() const {
  Sample s;
  timespec ts{};
  clock_gettime(clock_, &ts);
  s.cpu_ns = std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  // The kernel counts them per thread: a voluntary switch is the thread blocking (epoll_wait,
  // a futex), so between two readings it is how many times the thread slept and was woken.
  std::ifstream status("/proc/self/task/" + std::to_string(tid_) + "/status");
  std::string key;
  std::int64_t value = 0;
  while (status >> key) {
    if (key == "voluntary_ctxt_switches:" && status >> value) s.wakeups = value;
    if (key == "nonvoluntary_ctxt_switches:" && status >> value) s.preempted = value;
  }
  return s;
}

namespace {

// What the idle phase reads at each end of its window.
struct IdleReading {
  ThreadProbe::Sample loop;
  std::int64_t process_cpu_ns = 0;
  std::int64_t wall_ns = 0;
  std::int64_t iterations = 0;
};

// The idle phase (see the top of per_read_driver.h); `first_deadline_ns` is on now_ns()'s clock.
void idle_phase(const PerReadParams& p, PerReadImpl& impl, const ThreadProbe& loop_thread,
                std::int64_t first_deadline_ns, std::int64_t tick) {
  const double room = (first_deadline_ns - now_ns()) / 1e9 - kIdleSettleSecs - kIdleTailSecs;
  const double window = std::min(p.idle_secs, room);
  if (window < 0.1) {
    throw std::runtime_error("setup left no idle window before the first deadline (" +
                             std::to_string(room) + " s): raise --idle-ms");
  }
  auto read = [&] {
    return IdleReading{loop_thread.sample(), process_cpu_ns(), now_ns(), impl.loop_iterations()};
  };
  IdleReading a, b;
  const auto start = std::chrono::steady_clock::now();
  std::thread sampler([&] {
    std::this_thread::sleep_until(start + std::chrono::duration<double>(kIdleSettleSecs));
    a = read();
    std::this_thread::sleep_until(start + std::chrono::duration<double>(kIdleSettleSecs + window));
    b = read();
  });
  // The loop stops halfway through the tail: after the window, before the first deadline.
  impl.run_for(kIdleSettleSecs + window + kIdleTailSecs / 2, nullptr);
  const std::int64_t loop_end = now_ns();
  sampler.join();
  const double secs = (b.wall_ns - a.wall_ns) / 1e9;
  emit(impl.name(), "idle_cpu_ms_per_s", p.n, (b.loop.cpu_ns - a.loop.cpu_ns) / 1e6 / secs, "ms/s",
       tick,
       {{"wakeups", b.loop.wakeups - a.loop.wakeups},
        {"wakeups_per_s", number((b.loop.wakeups - a.loop.wakeups) / secs)},
        {"loop_iterations", a.iterations < 0 ? -1 : b.iterations - a.iterations},
        {"preempted", b.loop.preempted - a.loop.preempted},
        {"process_cpu_ms_per_s", number((b.process_cpu_ns - a.process_cpu_ns) / 1e6 / secs)},
        {"threads", thread_count()},
        {"secs", number(secs)},
        {"secs_asked", number(p.idle_secs)},
        {"clean", b.wall_ns < loop_end},  // false: the window reached the phase's end
        {"idle_events", impl.idle_events()},
        {"note",
         "loop thread CPU per second and its wake-ups (voluntary context switches), read from "
         "another thread over the window; N connections, no reads"}});
}

std::int64_t thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

void run_per_read(const PerReadParams& p, const std::function<PerReadImpl*()>& make) {
  const ThreadProbe loop_thread;  // this thread runs the loop in every phase
  const std::int64_t rss0 = rss_bytes();
  std::unique_ptr<PerReadImpl> impl(make());
  const std::string name = impl->name();
  const std::int64_t tick = name == "wheel" ? p.tick_ms : 0;
  const nlohmann::ordered_json base = {{"idle_ms", p.idle_ms}};

  const std::int64_t s0 = now_ns();
  impl->open_all();
  const std::int64_t s1 = now_ns();
  const std::int64_t rss1 = rss_bytes();
  emit(name, "setup_ns_per_conn", p.n, double(s1 - s0) / p.n, "ns", tick, base);
  emit(name, "bytes_per_conn", p.n, double(rss1 - rss0) / p.n, "bytes", tick,
       {{"rss_before_mb", number(rss0 / 1048576.0)},
        {"rss_after_mb", number(rss1 / 1048576.0)},
        {"note", "RSS delta / N after opening N connections"}});

  // Idle: no reads, no deadline due (the window ends before the first one).
  idle_phase(p, *impl, loop_thread, s0 + p.idle_ms * 1'000'000, tick);

  // Paced reads: catch up to rate x elapsed every millisecond.
  ConnPicker picker(p.seed, static_cast<std::uint64_t>(p.n));
  std::int64_t done = 0;
  const std::uint64_t events0 = impl->idle_events();
  const std::int64_t c2 = thread_cpu_now(), pc2 = process_cpu_ns(), start = now_ns();
  const std::int64_t wakeups2 = loop_thread.sample().wakeups;
  // A batch is at most 10 ms of reads, so an implementation that falls behind still gives the
  // loop back (and the phase ends on time); it then does fewer reads than asked (rate_done).
  const std::int64_t max_batch = std::max<std::int64_t>(1, p.rate / 100);
  impl->run_for(p.read_secs, [&] {
    const auto target = static_cast<std::int64_t>(double(now_ns() - start) * p.rate / 1e9);
    if (target > done) {
      const std::int64_t batch = std::min(target - done, max_batch);
      impl->read_batch(picker, batch);
      done += batch;
    }
  });
  const std::int64_t c3 = thread_cpu_now(), pc3 = process_cpu_ns(), end = now_ns();
  const std::int64_t wakeups3 = loop_thread.sample().wakeups;
  const double secs = (end - start) / 1e9;
  nlohmann::ordered_json paced = base;
  paced["reads"] = done;
  paced["rate_asked"] = p.rate;
  paced["rate_done"] = number(done / secs);
  paced["secs"] = number(secs);
  paced["cpu_ms_per_s"] = number((c3 - c2) / 1e6 / secs);
  paced["process_ns_per_read"] = number(done > 0 ? double(pc3 - pc2) / done : 0.0);
  paced["idle_events"] = impl->idle_events() - events0;
  paced["wakeups_per_s"] = number((wakeups3 - wakeups2) / secs);
  paced["read"] = impl->read_note();
  paced["note"] =
      "loop thread CPU / reads; batches every 1 ms; deadlines fire and re-arm meanwhile";
  emit(name, "ns_per_read", p.n, done > 0 ? double(c3 - c2) / done : 0.0, "ns", tick, paced);
  const std::int64_t rss2 = rss_bytes();
  emit(name, "bytes_per_conn_after_reads", p.n, double(rss2 - rss0) / p.n, "bytes", tick,
       {{"rss_after_mb", number(rss2 / 1048576.0)}});

  if (p.tight_reads > 0) {
    const std::int64_t c4 = thread_cpu_now(), pc4 = process_cpu_ns(), t0 = now_ns();
    impl->run_once_then_drain([&] { impl->read_batch(picker, p.tight_reads); });
    const std::int64_t c5 = thread_cpu_now(), pc5 = process_cpu_ns(), t1 = now_ns();
    emit(
        name, "tight_ns_per_read", p.n, double(c5 - c4) / p.tight_reads, "ns", tick,
        {{"reads", p.tight_reads},
         {"wall_ns_per_read", number(double(t1 - t0) / p.tight_reads)},
         {"process_ns_per_read", number(double(pc5 - pc4) / p.tight_reads)},
         {"note", "back to back in one callback, then what they queued; loop thread CPU / reads"}});
  }
}

}  // namespace wheel::bench
