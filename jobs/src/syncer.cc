// SPDX-License-Identifier: Apache-2.0
#include "syncer.h"

#include <algorithm>

namespace wheel::jobs {

Syncer::Syncer(FileSystem* fs, std::string dir, bool threaded, std::function<void()> wakeup,
               Clock clock)
    : fs_(fs), dir_(std::move(dir)), wakeup_(std::move(wakeup)), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] { return std::chrono::steady_clock::now().time_since_epoch(); };
  }
  if (threaded) thread_ = std::thread([this] { run(); });
}

Syncer::~Syncer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Syncer::note_written(const std::shared_ptr<WritableFile>& file, std::uint64_t lsn,
                          std::uint64_t segment, std::uint64_t end, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  written_bytes_ += bytes;
  if (std::find(dirty_.begin(), dirty_.end(), file) == dirty_.end()) dirty_.push_back(file);
  written_lsn_ = lsn;
  written_segment_ = segment;
  written_end_ = end;
}

void Syncer::durable_position(std::uint64_t* segment, std::uint64_t* end) const {
  std::lock_guard lock(mu_);
  *segment = durable_segment_;
  *end = durable_end_;
}

void Syncer::note_dir_changed() {
  std::lock_guard lock(mu_);
  dir_dirty_ = true;
}

void Syncer::request() {
  {
    std::lock_guard lock(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

std::error_code Syncer::sync_now() {
  std::lock_guard sync_lock(sync_mu_);
  std::vector<std::shared_ptr<WritableFile>> files;
  bool dir = false;
  std::uint64_t target = 0;
  std::uint64_t segment = 0;
  std::uint64_t end = 0;
  std::uint64_t bytes = 0;
  {
    std::lock_guard lock(mu_);
    if (failure_) return failure_;
    bytes = written_bytes_;
    files.swap(dirty_);
    dir = dir_dirty_;
    dir_dirty_ = false;
    target = written_lsn_;
    segment = written_segment_;
    end = written_end_;
  }
  const bool any = !files.empty() || dir;
  const std::chrono::nanoseconds start = any ? clock_() : std::chrono::nanoseconds{};
  std::error_code ec;
  for (const auto& f : files) {
    if ((ec = f->sync())) break;
  }
  if (!ec && dir) ec = fs_->sync_dir(dir_);
  if (!ec && any) sync_seconds_.observe(clock_() - start);
  std::lock_guard lock(mu_);
  if (ec) {
    // A failed fdatasync leaves the file's state unknown (the kernel may have dropped the
    // dirty pages): never retry and claim success later.
    failure_ = ec;
  } else {
    if (any) {
      batch_records_.observe_value(target > durable_lsn_ ? target - durable_lsn_ : 0);
      batch_bytes_.observe_value(bytes - durable_bytes_);
    }
    durable_bytes_ = bytes;
    if (target > durable_lsn_) {
      ++syncs_;
      synced_records_ += target - durable_lsn_;
      durable_lsn_ = target;
    }
    durable_segment_ = segment;
    durable_end_ = end;
  }
  return ec;
}

void Syncer::run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return requested_ || stop_; });
      if (stop_) return;
      requested_ = false;
    }
    sync_now();
    if (wakeup_) wakeup_();
  }
}

std::uint64_t Syncer::durable_lsn() const {
  std::lock_guard lock(mu_);
  return durable_lsn_;
}
std::error_code Syncer::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}
std::uint64_t Syncer::syncs() const {
  std::lock_guard lock(mu_);
  return syncs_;
}
std::uint64_t Syncer::synced_records() const {
  std::lock_guard lock(mu_);
  return synced_records_;
}

LogSyncMetrics Syncer::metrics() const {
  return {sync_seconds_.read(), batch_records_.read(), batch_bytes_.read()};
}

}  // namespace wheel::jobs
