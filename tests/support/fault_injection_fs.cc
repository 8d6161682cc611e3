// SPDX-License-Identifier: Apache-2.0
#include "support/fault_injection_fs.h"

#include <algorithm>
#include <cerrno>

namespace wheel::jobs::testing {
namespace {

std::error_code err(int e) {
  return {e, std::system_category()};
}

class FaultFile final : public WritableFile {
 public:
  FaultFile(FaultInjectionFs* fs, std::shared_ptr<FaultInjectionFs::Inode> inode)
      : fs_(fs), inode_(std::move(inode)) {}
  std::error_code append(std::span<const std::byte> data) override {
    return fs_->append_to(inode_, data);
  }
  std::error_code sync() override { return fs_->sync_inode(inode_); }
  std::error_code reserve(std::uint64_t offset, std::uint64_t length) override {
    return fs_->reserve_in(inode_, offset + length);
  }

 private:
  FaultInjectionFs* fs_;
  std::shared_ptr<FaultInjectionFs::Inode> inode_;
};

class FaultReadFile final : public RandomAccessFile {
 public:
  FaultReadFile(FaultInjectionFs* fs, std::shared_ptr<FaultInjectionFs::Inode> inode)
      : fs_(fs), inode_(std::move(inode)) {}
  std::error_code read_at(std::uint64_t offset, std::uint64_t length, std::string* data) override {
    return fs_->read_inode(inode_, offset, length, data);
  }

 private:
  FaultInjectionFs* fs_;
  std::shared_ptr<FaultInjectionFs::Inode> inode_;
};

class FaultLock final : public FileObject {
 public:
  FaultLock(FaultInjectionFs* fs, std::string path, bool exclusive)
      : fs_(fs), path_(std::move(path)), exclusive_(exclusive) {}
  ~FaultLock() override { fs_->unlock(path_, exclusive_); }

 private:
  FaultInjectionFs* fs_;
  std::string path_;
  bool exclusive_;
};

}  // namespace

std::error_code FaultInjectionFs::lock_file(const std::string& path, LockMode mode,
                                            std::string_view owner,
                                            std::unique_ptr<FileObject>* lock,
                                            std::string* holder) {
  std::lock_guard guard(mu_);
  if (crashed_) return err(EIO);
  if (!dirs_.count(parent(path))) return err(ENOENT);
  LockState& state = locks_[path];
  const bool exclusive = mode == LockMode::kExclusive;
  if (state.exclusive || (exclusive && state.shared > 0)) {
    if (holder != nullptr) *holder = state.owner;
    return std::make_error_code(std::errc::resource_unavailable_try_again);
  }
  if (exclusive) {
    state.exclusive = true;
    state.owner = owner;
  } else {
    ++state.shared;
  }
  *lock = std::make_unique<FaultLock>(this, path, exclusive);
  return {};
}

void FaultInjectionFs::unlock(const std::string& path, bool exclusive) {
  std::lock_guard guard(mu_);
  LockState& state = locks_[path];
  if (exclusive) {
    state.exclusive = false;
    state.owner.clear();
  } else {
    --state.shared;
  }
}

std::string FaultInjectionFs::parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool FaultInjectionFs::take_op() {
  if (crashed_) return false;
  ++ops_;
  if (crash_at_ != 0 && ops_ >= crash_at_) {
    crashed_ = true;
    return false;
  }
  return true;
}

std::error_code FaultInjectionFs::create_dir(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (crashed_) return err(EIO);
  dirs_.insert(dir);
  return {};
}

std::error_code FaultInjectionFs::list(const std::string& dir, std::vector<std::string>* names) {
  std::lock_guard lock(mu_);
  if (crashed_) return err(EIO);
  if (!dirs_.count(dir)) return err(ENOENT);
  names->clear();
  for (const auto& [path, inode] : live_) {
    if (parent(path) == dir) names->push_back(path.substr(dir.size() + 1));
  }
  return {};
}

std::error_code FaultInjectionFs::open_append(const std::string& path,
                                              std::unique_ptr<WritableFile>* file) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  if (open_failures_ > 0) {
    --open_failures_;
    return err(open_errno_);
  }
  auto it = live_.find(path);
  if (it == live_.end()) {
    if (!take_op()) return err(EIO);
    if (!dirs_.count(parent(path))) return err(ENOENT);
    it = live_.emplace(path, std::make_shared<Inode>()).first;
  } else if (crashed_) {
    return err(EIO);
  }
  *file = std::make_unique<FaultFile>(this, it->second);
  return {};
}

std::error_code FaultInjectionFs::open_read(const std::string& path,
                                            std::unique_ptr<RandomAccessFile>* file) {
  std::lock_guard lock(mu_);  // not refused past the cut point: reading mutates nothing
  auto it = live_.find(path);
  if (it == live_.end()) return err(ENOENT);
  *file = std::make_unique<FaultReadFile>(this, it->second);
  return {};
}

std::error_code FaultInjectionFs::read_inode(const std::shared_ptr<Inode>& inode,
                                             std::uint64_t offset, std::uint64_t length,
                                             std::string* data) {
  std::lock_guard lock(mu_);
  ++positional_reads_;
  if (read_failure_) return err(EIO);  // not at a cut point: written data stays readable
  const std::string& d = inode->data;
  *data = offset >= d.size() ? std::string() : d.substr(offset, length);
  return {};
}

void FaultInjectionFs::set_read_failure(bool fail) {
  std::lock_guard lock(mu_);
  read_failure_ = fail;
}

std::uint64_t FaultInjectionFs::positional_reads() const {
  std::lock_guard lock(mu_);
  return positional_reads_;
}

std::error_code FaultInjectionFs::read_file(const std::string& path, std::string* data) {
  return read_range(path, 0, UINT64_MAX, data);
}

std::error_code FaultInjectionFs::read_range(const std::string& path, std::uint64_t offset,
                                             std::uint64_t length, std::string* data) {
  std::lock_guard lock(mu_);
  if (crashed_) return err(EIO);
  auto it = live_.find(path);
  if (it == live_.end()) return err(ENOENT);
  const std::string& d = it->second->data;
  *data = offset >= d.size() ? std::string() : d.substr(offset, length);
  return {};
}

std::error_code FaultInjectionFs::file_size(const std::string& path, std::uint64_t* size) {
  std::lock_guard lock(mu_);
  if (crashed_) return err(EIO);
  auto it = live_.find(path);
  if (it == live_.end()) return err(ENOENT);
  *size = it->second->data.size();
  return {};
}

std::error_code FaultInjectionFs::truncate(const std::string& path, std::uint64_t size) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  if (!take_op()) return err(EIO);
  auto it = live_.find(path);
  if (it == live_.end()) return err(ENOENT);
  Inode& inode = *it->second;
  if (size < inode.data.size()) inode.data.resize(size);
  if (inode.synced > size) inode.synced = size;  // a cut is taken as durable at once
  inode.reserved = 0;  // as ftruncate: the space set aside past the end is given back
  return {};
}

std::error_code FaultInjectionFs::rename(const std::string& from, const std::string& to) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  if (!take_op()) return err(EIO);
  auto it = live_.find(from);
  if (it == live_.end()) return err(ENOENT);
  live_[to] = it->second;
  live_.erase(from);
  return {};
}

std::error_code FaultInjectionFs::remove(const std::string& path) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  if (!take_op()) return err(EIO);
  if (live_.erase(path) == 0) return err(ENOENT);
  return {};
}

std::error_code FaultInjectionFs::sync_dir(const std::string& dir) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  if (!take_op()) return err(EIO);
  if (ignore_sync_) return {};
  for (auto it = durable_.begin(); it != durable_.end();) {
    it = parent(it->first) == dir ? durable_.erase(it) : std::next(it);
  }
  for (const auto& [path, inode] : live_) {
    if (parent(path) == dir) durable_[path] = inode;
  }
  return {};
}

std::error_code FaultInjectionFs::free_bytes(const std::string&, std::uint64_t* bytes) {
  std::lock_guard lock(mu_);
  if (crashed_) return err(EIO);
  const std::uint64_t used = used_locked();
  *bytes = capacity_ == UINT64_MAX ? (1ull << 40) : (used >= capacity_ ? 0 : capacity_ - used);
  return {};
}

std::error_code FaultInjectionFs::append_to(const std::shared_ptr<Inode>& inode,
                                            std::span<const std::byte> d) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  const auto* p = reinterpret_cast<const char*>(d.data());
  if (!take_op()) {
    // The process died inside this write: some prefix may have reached the page cache.
    if (ops_ == crash_at_ && !d.empty()) inode->data.append(p, tear_rng_() % d.size());
    return err(EIO);
  }
  // Bytes past the space set aside for the file count against the capacity.
  const std::uint64_t used = used_locked();
  const std::uint64_t covered = std::max<std::uint64_t>(inode->data.size(), inode->reserved);
  const std::uint64_t grows =
      inode->data.size() + d.size() > covered ? inode->data.size() + d.size() - covered : 0;
  if (capacity_ != UINT64_MAX && used + grows > capacity_) {
    const std::uint64_t fits =
        (covered - inode->data.size()) + (used >= capacity_ ? 0 : capacity_ - used);
    inode->data.append(p, fits);
    return err(ENOSPC);
  }
  inode->data.append(p, d.size());
  return {};
}

std::error_code FaultInjectionFs::reserve_in(const std::shared_ptr<Inode>& inode,
                                             std::uint64_t end) {
  std::unique_lock lock(mu_);
  wait_thawed(lock);
  if (!reserve_supported_) return std::make_error_code(std::errc::operation_not_supported);
  if (!take_op()) return err(EIO);
  const std::uint64_t covered = std::max<std::uint64_t>(inode->data.size(), inode->reserved);
  if (end <= covered) return {};
  if (capacity_ != UINT64_MAX && used_locked() + (end - covered) > capacity_) return err(ENOSPC);
  inode->reserved = end;
  return {};
}

std::uint64_t FaultInjectionFs::used_locked() const {
  std::uint64_t used = 0;
  for (const auto& [path, inode] : live_) {
    used += std::max<std::uint64_t>(inode->data.size(), inode->reserved);
  }
  return used;
}

void FaultInjectionFs::set_reserve_supported(bool supported) {
  std::lock_guard lock(mu_);
  reserve_supported_ = supported;
}

std::error_code FaultInjectionFs::sync_inode(const std::shared_ptr<Inode>& inode) {
  std::unique_lock lock(mu_);
  ++waiting_;
  gate_cv_.wait(lock, [this] { return gate_open_; });
  --waiting_;
  wait_thawed(lock);
  if (!take_op()) return err(EIO);
  ++file_syncs_;
  if (!ignore_sync_) inode->synced = inode->data.size();
  return {};
}

std::uint64_t FaultInjectionFs::ops() const {
  std::lock_guard lock(mu_);
  return ops_;
}
void FaultInjectionFs::set_ops_until_crash(std::uint64_t n) {
  std::lock_guard lock(mu_);
  crash_at_ = n == 0 ? 0 : ops_ + n;
}
bool FaultInjectionFs::crashed() const {
  std::lock_guard lock(mu_);
  return crashed_;
}

void FaultInjectionFs::power_loss(std::mt19937_64& rng, bool torn) {
  std::lock_guard lock(mu_);
  std::map<std::string, std::shared_ptr<Inode>> after;
  for (const auto& [path, inode] : durable_) {
    auto copy = std::make_shared<Inode>();
    copy->data = inode->data.substr(0, inode->synced);
    if (torn && inode->data.size() > inode->synced) {
      const std::size_t extra = rng() % (inode->data.size() - inode->synced + 1);
      copy->data.append(inode->data, inode->synced, extra);
      // A sector half-written: garble a few of the kept unsynced bytes.
      if (extra > 0 && rng() % 4 == 0) {
        for (int i = 0; i < 4; ++i) {
          copy->data[inode->synced + rng() % extra] = static_cast<char>(rng());
        }
      }
    }
    copy->synced = copy->data.size();
    after[path] = copy;
  }
  live_ = after;
  durable_ = after;
  crashed_ = false;
  crash_at_ = 0;
}

void FaultInjectionFs::process_death() {
  std::lock_guard lock(mu_);
  crashed_ = false;
  crash_at_ = 0;
}

void FaultInjectionFs::set_capacity(std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  capacity_ = bytes;
}
std::uint64_t FaultInjectionFs::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_locked();
}
void FaultInjectionFs::set_ignore_sync(bool ignore) {
  std::lock_guard lock(mu_);
  ignore_sync_ = ignore;
}
void FaultInjectionFs::wait_thawed(std::unique_lock<std::mutex>& lock) {
  ++frozen_waiting_;
  gate_cv_.wait(lock, [this] { return !frozen_; });
  --frozen_waiting_;
}
void FaultInjectionFs::set_frozen(bool frozen) {
  {
    std::lock_guard lock(mu_);
    frozen_ = frozen;
  }
  gate_cv_.notify_all();
}
int FaultInjectionFs::frozen_waiting() const {
  std::lock_guard lock(mu_);
  return frozen_waiting_;
}
void FaultInjectionFs::fail_opens(int error, int count) {
  std::lock_guard lock(mu_);
  open_errno_ = error;
  open_failures_ = count;
}
void FaultInjectionFs::set_sync_gate(bool open) {
  {
    std::lock_guard lock(mu_);
    gate_open_ = open;
  }
  gate_cv_.notify_all();
}
int FaultInjectionFs::syncs_waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}
std::uint64_t FaultInjectionFs::file_syncs() const {
  std::lock_guard lock(mu_);
  return file_syncs_;
}
std::string FaultInjectionFs::contents(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = live_.find(path);
  return it == live_.end() ? std::string() : it->second->data;
}
void FaultInjectionFs::set_contents(const std::string& path, std::string data) {
  std::lock_guard lock(mu_);
  auto inode = std::make_shared<Inode>();
  inode->data = std::move(data);
  inode->synced = inode->data.size();
  live_[path] = inode;
  durable_[path] = inode;
}

}  // namespace wheel::jobs::testing
