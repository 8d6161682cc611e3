// SPDX-License-Identifier: Apache-2.0
#include "per_read_driver.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

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

void run_per_read(const PerReadParams& p, const std::function<PerReadImpl*()>& make) {
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

  // Idle: no reads, no deadline due (the options keep idle_secs below idle_ms).
  const std::int64_t c0 = process_cpu_ns(), w0 = now_ns();
  impl->run_for(p.idle_secs, nullptr);
  const std::int64_t c1 = process_cpu_ns(), w1 = now_ns();
  emit(name, "idle_cpu_ms_per_s", p.n, (c1 - c0) / 1e6 / ((w1 - w0) / 1e9), "ms/s", tick,
       {{"threads", thread_count()},
        {"secs", number((w1 - w0) / 1e9)},
        {"idle_events", impl->idle_events()},
        {"note", "process CPU per second, N connections, no reads"}});

  // Paced reads: catch up to rate x elapsed every millisecond.
  ConnPicker picker(p.seed, static_cast<std::uint64_t>(p.n));
  std::int64_t done = 0;
  const std::uint64_t events0 = impl->idle_events();
  const std::int64_t c2 = process_cpu_ns(), start = now_ns();
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
  const std::int64_t c3 = process_cpu_ns(), end = now_ns();
  const double secs = (end - start) / 1e9;
  nlohmann::ordered_json paced = base;
  paced["reads"] = done;
  paced["rate_asked"] = p.rate;
  paced["rate_done"] = number(done / secs);
  paced["secs"] = number(secs);
  paced["cpu_ms_per_s"] = number((c3 - c2) / 1e6 / secs);
  paced["idle_events"] = impl->idle_events() - events0;
  paced["read"] = impl->read_note();
  paced["note"] = "process CPU / reads; batches every 1 ms; deadlines fire and re-arm meanwhile";
  emit(name, "ns_per_read", p.n, done > 0 ? double(c3 - c2) / done : 0.0, "ns", tick, paced);
  const std::int64_t rss2 = rss_bytes();
  emit(name, "bytes_per_conn_after_reads", p.n, double(rss2 - rss0) / p.n, "bytes", tick,
       {{"rss_after_mb", number(rss2 / 1048576.0)}});

  if (p.tight_reads > 0) {
    const std::int64_t c4 = process_cpu_ns(), t0 = now_ns();
    impl->run_once_then_drain([&] { impl->read_batch(picker, p.tight_reads); });
    const std::int64_t c5 = process_cpu_ns(), t1 = now_ns();
    emit(name, "tight_ns_per_read", p.n, double(c5 - c4) / p.tight_reads, "ns", tick,
         {{"reads", p.tight_reads},
          {"wall_ns_per_read", number(double(t1 - t0) / p.tight_reads)},
          {"note", "back to back in one callback, then what they queued; process CPU / reads"}});
  }
}

}  // namespace wheel::bench
