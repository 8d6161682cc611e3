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
  note_written_locked(file, lsn, segment, end, bytes);
}

void Syncer::note_written_locked(const std::shared_ptr<WritableFile>& file, std::uint64_t lsn,
                                 std::uint64_t segment, std::uint64_t end, std::uint64_t bytes) {
  if (std::find(dirty_.begin(), dirty_.end(), file) == dirty_.end()) dirty_.push_back(file);
  written_ = {lsn, segment, end, written_.bytes + bytes};
}

void Syncer::set_wakeup(std::function<void()> wakeup) {
  std::lock_guard lock(wakeup_mu_);
  wakeup_.swap(wakeup);
}  // the previous one is destroyed after the lock is let go

void Syncer::hand_off(std::shared_ptr<WritableFile> file, std::shared_ptr<const std::string> bytes,
                      std::uint64_t lsn, std::uint64_t segment, std::uint64_t end) {
  {
    std::lock_guard lock(mu_);
    backlog_ += bytes->size();
    ops_.push_back({std::move(file), std::move(bytes), {}, lsn, segment, end});
  }
  cv_.notify_one();
}

void Syncer::run_task(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    ops_.push_back({nullptr, nullptr, std::move(task), 0, 0, 0});
  }
  cv_.notify_one();
}

std::uint64_t Syncer::backlog_bytes() const {
  return locked(backlog_);
}

bool Syncer::idle() const {
  std::lock_guard lock(mu_);
  return ops_.empty() && !busy_ && !requested_;
}

void Syncer::wait_idle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return ops_.empty() && !busy_ && !requested_; });
}

std::uint64_t Syncer::written_lsn() const {
  return locked(written_).lsn;
}

void Syncer::written_position(std::uint64_t* segment, std::uint64_t* end) const {
  std::lock_guard lock(mu_);
  *segment = written_.segment;
  *end = written_.end;
}

void Syncer::write_op(const Op& op) {
  if (op.task) {
    op.task();
    return;
  }
  // After a failure nothing more is written: what follows a lost write must not look whole.
  std::error_code ec = failure();
  if (!ec) ec = op.file->append(std::as_bytes(std::span(op.bytes->data(), op.bytes->size())));
  std::lock_guard lock(mu_);
  backlog_ -= op.bytes->size();
  if (ec) {
    if (!failure_) failure_ = ec;
    return;
  }
  note_written_locked(op.file, op.lsn, op.segment, op.end, op.bytes->size());
}

void Syncer::durable_position(std::uint64_t* segment, std::uint64_t* end) const {
  std::lock_guard lock(mu_);
  *segment = durable_.segment;
  *end = durable_.end;
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
  Mark target;
  {
    std::lock_guard lock(mu_);
    if (failure_) return failure_;
    files.swap(dirty_);
    dir = dir_dirty_;
    dir_dirty_ = false;
    target = written_;
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
    return ec;
  }
  // Syncs are serialized and `written_` only grows, so the snapshot is not behind `durable_`.
  const std::uint64_t records = target.lsn > durable_.lsn ? target.lsn - durable_.lsn : 0;
  if (any) {
    batch_records_.observe_value(records);
    batch_bytes_.observe_value(target.bytes > durable_.bytes ? target.bytes - durable_.bytes : 0);
  }
  if (records > 0) {
    ++syncs_;
    synced_records_ += records;
  }
  durable_ = target;
  return ec;
}

void Syncer::run() {
  for (;;) {
    std::vector<Op> ops;
    bool sync = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return requested_ || stop_ || !ops_.empty(); });
      if (stop_ && ops_.empty()) return;  // what was handed off is written first
      // Every write handed off so far, then the sync asked for: it covers them all.
      ops.swap(ops_);
      sync = requested_;
      requested_ = false;
      busy_ = true;
    }
    for (const Op& op : ops) write_op(op);
    if (sync) sync_now();
    {
      std::lock_guard lock(mu_);
      busy_ = false;
    }
    idle_cv_.notify_all();
    {
      std::lock_guard lock(wakeup_mu_);
      if (wakeup_) wakeup_();
    }
  }
}

std::uint64_t Syncer::durable_lsn() const {
  return locked(durable_).lsn;
}
std::error_code Syncer::failure() const {
  return locked(failure_);
}
std::uint64_t Syncer::syncs() const {
  return locked(syncs_);
}
std::uint64_t Syncer::synced_records() const {
  return locked(synced_records_);
}

LogSyncMetrics Syncer::metrics() const {
  return {sync_seconds_.read(), batch_records_.read(), batch_bytes_.read()};
}

}  // namespace wheel::jobs
