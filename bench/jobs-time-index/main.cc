// SPDX-License-Identifier: Apache-2.0
// wheel-time-index-bench: what one flush of the far-jobs time index (wheel/jobs/log/time_index.h)
// costs on a real disk (the journal's append, and the split into bucket files when the journal is
// full), against one write and fdatasync of the same bytes to a single file. Far
// jobs are added with due times uniform over days 1..30 from a fixed "now" (1 h buckets: about
// 700 bucket files, nearly all touched by each flush), then flushed; FLUSHES rounds. Then one
// bucket is read back. Times are wall-clock on whatever machine and disk runs it; the figures
// live in docs/benchmarks.md.
//
// Usage: wheel-time-index-bench DIR [ENTRIES_PER_FLUSH [FLUSHES [JOURNAL_ENTRIES]]]
//        (defaults 300000 5 4194304; a flush that fills the journal also splits it)
// DIR must not exist (it is made, filled and left for inspection).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "wheel/jobs/log/time_index.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool parse(const char* text, std::uint64_t low, std::uint64_t high, std::uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v < low || v > high) return false;
  *out = v;
  return true;
}

// One append of `bytes` bytes and one fdatasync to a single file: the floor a flush could reach.
double one_file_ms(const std::string& path, std::size_t bytes) {
  const std::string data(bytes, 'x');
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  const auto start = Clock::now();
  const bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) &&
                  ::fdatasync(fd) == 0;
  const double ms = ms_since(start);
  ::close(fd);
  ::unlink(path.c_str());
  return ok ? ms : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t per_flush = 300'000;
  std::uint64_t flushes = 5;
  std::uint64_t journal = std::uint64_t{1} << 22;
  if (argc < 2 || argc > 5 || (argc > 2 && !parse(argv[2], 1, 10'000'000, &per_flush)) ||
      (argc > 3 && !parse(argv[3], 1, 1000, &flushes)) ||
      (argc > 4 && !parse(argv[4], 1, std::uint64_t{1} << 26, &journal))) {
    std::fprintf(stderr,
                 "usage: wheel-time-index-bench DIR [ENTRIES_PER_FLUSH 1..10000000 "
                 "[FLUSHES 1..1000 [JOURNAL_ENTRIES 1..67108864]]]\n");
    return 2;
  }
  const std::string dir = argv[1];
  if (::access(dir.c_str(), F_OK) == 0) {
    std::fprintf(stderr, "wheel-time-index-bench: %s exists; give a new directory\n", dir.c_str());
    return 2;
  }
  wheel::jobs::TimeIndexOptions options;
  options.dir = dir;
  options.bucket_ms = 3'600'000;
  options.journal_entries = journal;
  wheel::jobs::TimeIndexRecovered recovered;
  std::string error;
  auto index = wheel::jobs::TimeIndex::open(options, &recovered, &error);
  if (!index) {
    std::fprintf(stderr, "wheel-time-index-bench: %s\n", error.c_str());
    return 1;
  }
  constexpr std::int64_t kNow = 1'800'000'000'000;
  constexpr std::uint64_t kDay = 86'400'000;
  std::mt19937_64 rng(33);
  std::uint64_t id = 0;
  std::vector<double> times;
  for (std::uint64_t f = 0; f < flushes; ++f) {
    for (std::uint64_t i = 0; i < per_flush; ++i) {
      ++id;
      const auto due = kNow + static_cast<std::int64_t>(kDay + rng() % (29 * kDay));
      index->add({due, id, id * 160}, id);
    }
    const auto start = Clock::now();
    if (auto ec = index->flush(id, id)) {
      std::fprintf(stderr, "wheel-time-index-bench: flush: %s\n", ec.message().c_str());
      return 1;
    }
    times.push_back(ms_since(start));
  }
  std::sort(times.begin(), times.end());
  const auto buckets = index->buckets();
  std::vector<wheel::jobs::TimeEntry> entries;
  const auto read_start = Clock::now();
  if (auto ec = index->read_bucket(buckets[buckets.size() / 2].bucket, &entries)) {
    std::fprintf(stderr, "wheel-time-index-bench: read: %s\n", ec.message().c_str());
    return 1;
  }
  const double read_ms = ms_since(read_start);
  const double one_ms = one_file_ms(dir + "/one-file.bin", per_flush * 32);
  std::printf("entries %llu, buckets %zu\n", static_cast<unsigned long long>(index->live()),
              buckets.size());
  std::printf("flush of %llu entries: median %.1f ms, max %.1f ms (%zu flushes)\n",
              static_cast<unsigned long long>(per_flush), times[times.size() / 2], times.back(),
              times.size());
  std::printf("one file, the same bytes, one write + fdatasync: %.1f ms\n", one_ms);
  std::printf("read_bucket: %zu entries in %.2f ms\n", entries.size(), read_ms);
  return 0;
}
