// SPDX-License-Identifier: Apache-2.0
// A FileSystem in memory for the job log's crash tests (after LevelDB's fault_injection_test
// and RocksDB's FaultInjectionTestFS): it remembers, per file, how much was synced, and per
// directory, which entries were synced. power_loss() then keeps only that, plus (when asked) a
// random part of the unsynced tail with some garbage, as a disk may after a power cut.
//
// Cut points: set_ops_until_crash(n) lets n mutating operations through; the n-th and all later
// ones fail with EIO (an append may leave a random prefix first), as if the process died there.
// Disk full: set_capacity(bytes) fails appends past it with ENOSPC (after writing what fits);
// space set aside with WritableFile::reserve() counts as used, and appends into it never fail
// for space (as fallocate); set_reserve_supported(false) makes reserve() unsupported, so the
// log writes each record as it comes.
// Reads: open_read() files read what was appended, synced or not (the page cache), also past
// the cut point (a write error does not unwrite the page cache); set_read_failure(true) makes
// every positional read fail with EIO (a bad sector).
// Stuck disk: set_frozen(true) blocks every mutating operation until set_frozen(false), as a
// frozen file system does; set_sync_gate(false) blocks fdatasyncs only. Descriptors:
// fail_opens() makes the next opens for writing fail (EMFILE).
// Locks: lock_file() keeps its locks in memory (process state: a power loss keeps them), with
// flock's rules, so two logs on one directory of one FaultInjectionFs conflict.
// Planted bug: set_ignore_sync(true) makes sync() and sync_dir() succeed without syncing.
// Thread-safe (one mutex): the log syncs from its own thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs::testing {

class FaultInjectionFs final : public FileSystem {
 public:
  struct Inode {
    std::string data;
    std::size_t synced = 0;
    std::uint64_t reserved = 0;  // space set aside up to this byte (lost at a power loss)
  };

  std::error_code create_dir(const std::string& dir) override;
  std::error_code list(const std::string& dir, std::vector<std::string>* names) override;
  std::error_code open_append(const std::string& path,
                              std::unique_ptr<WritableFile>* file) override;
  std::error_code open_read(const std::string& path,
                            std::unique_ptr<RandomAccessFile>* file) override;
  std::error_code read_file(const std::string& path, std::string* data) override;
  std::error_code read_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                             std::string* data) override;
  std::error_code file_size(const std::string& path, std::uint64_t* size) override;
  std::error_code truncate(const std::string& path, std::uint64_t size) override;
  std::error_code rename(const std::string& from, const std::string& to) override;
  std::error_code remove(const std::string& path) override;
  std::error_code sync_dir(const std::string& dir) override;
  std::error_code free_bytes(const std::string& dir, std::uint64_t* bytes) override;
  std::error_code lock_file(const std::string& path, LockMode mode, std::string_view owner,
                            std::unique_ptr<FileObject>* lock, std::string* holder) override;
  // Called by a lock when it is destroyed.
  void unlock(const std::string& path, bool exclusive);

  // Mutating operations so far (appends, syncs, truncates, renames, removes, creations).
  std::uint64_t ops() const;
  // The n-th mutating operation from now fails and so does everything after it (0: never).
  void set_ops_until_crash(std::uint64_t n);
  bool crashed() const;
  // Keeps what was synced (and, if `torn`, a random part of each unsynced tail, its last bytes
  // sometimes garbled); forgets the rest; the file system works again afterwards.
  void power_loss(std::mt19937_64& rng, bool torn);
  // The process died (kill -9) at the cut point, the machine did not: everything written stays,
  // synced or not, and the file system works again.
  void process_death();

  void set_capacity(std::uint64_t bytes);      // UINT64_MAX: unlimited
  void set_reserve_supported(bool supported);  // default true
  std::uint64_t used_bytes() const;
  void set_ignore_sync(bool ignore);
  // While set, RandomAccessFile::read_at fails with EIO.
  void set_read_failure(bool fail);
  std::uint64_t positional_reads() const;
  // While closed, sync() blocks (group-commit tests); syncs_waiting() counts the blocked ones.
  void set_sync_gate(bool open);
  int syncs_waiting() const;
  // While frozen (as `fsfreeze -f`), every mutating operation (append, sync, reserve, truncate,
  // rename, remove, sync_dir, creating a file) blocks until thawed; reads go on.
  // frozen_waiting() counts the blocked ones.
  void set_frozen(bool frozen);
  int frozen_waiting() const;
  // The next `count` open_append() calls fail with `error` (EMFILE: out of descriptors).
  void fail_opens(int error, int count);
  std::uint64_t file_syncs() const;

  // Direct access for corruption tests.
  std::string contents(const std::string& path) const;
  void set_contents(const std::string& path, std::string data);

  // Called by the writable files.
  std::error_code append_to(const std::shared_ptr<Inode>& inode, std::span<const std::byte> d);
  std::error_code sync_inode(const std::shared_ptr<Inode>& inode);
  std::error_code read_inode(const std::shared_ptr<Inode>& inode, std::uint64_t offset,
                             std::uint64_t length, std::string* data);
  std::error_code reserve_in(const std::shared_ptr<Inode>& inode, std::uint64_t end);

 private:
  bool take_op();  // false: this operation is past the cut point
  void wait_thawed(std::unique_lock<std::mutex>& lock);  // blocks while frozen
  static std::string parent(const std::string& path);
  std::uint64_t used_locked() const;  // bytes held, with the space set aside; under mu_

  mutable std::mutex mu_;
  std::condition_variable gate_cv_;
  std::map<std::string, std::shared_ptr<Inode>> live_;
  std::map<std::string, std::shared_ptr<Inode>> durable_;  // directory entries as last synced
  std::set<std::string> dirs_;
  struct LockState {
    int shared = 0;
    bool exclusive = false;
    std::string owner;
  };
  std::map<std::string, LockState> locks_;
  std::uint64_t ops_ = 0;
  std::uint64_t crash_at_ = 0;
  bool crashed_ = false;
  std::uint64_t capacity_ = UINT64_MAX;
  bool ignore_sync_ = false;
  bool read_failure_ = false;
  std::uint64_t positional_reads_ = 0;
  bool reserve_supported_ = true;
  bool gate_open_ = true;
  int waiting_ = 0;
  bool frozen_ = false;
  int frozen_waiting_ = 0;
  int open_errno_ = 0;
  int open_failures_ = 0;
  std::uint64_t file_syncs_ = 0;
  std::mt19937_64 tear_rng_{7};
};

}  // namespace wheel::jobs::testing
