// SPDX-License-Identifier: Apache-2.0
// The small file interface the job log writes (and reads) through. The log never calls the OS
// itself, so a test can put a file system underneath that forgets everything not yet synced at a
// chosen cut point, or that runs out of space (tests/support/fault_injection_fs.h), and check what
// survives. posix_file_system() is the real one.
//
// Errors are std::error_code values in std::system_category() (errno values): a full disk is
// ENOSPC (compare with std::errc::no_space_on_device). No method throws for I/O errors.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace wheel::jobs {

// What the file objects below share: the FileSystem hands each out in a std::unique_ptr that
// deletes it through this base, and none is copied (an implementation holds a descriptor or a
// whole file's bytes: a copy would close the descriptor twice or copy the bytes).
class FileObject {
 public:
  virtual ~FileObject() = default;
  FileObject(const FileObject&) = delete;
  FileObject& operator=(const FileObject&) = delete;

 protected:
  FileObject() = default;
};

// A file opened for appending. Not thread-safe by itself except as said: the job log appends
// from its owner's thread and syncs from its sync thread, which the POSIX file allows (write and
// fdatasync on one descriptor); test file systems lock internally.
class WritableFile : public FileObject {
 public:
  // Appends all of `data` at the end (retrying short writes). On error some prefix of `data`
  // may have been written: the caller truncates back (FileSystem::truncate) if it must.
  virtual std::error_code append(std::span<const std::byte> data) = 0;

  // Makes everything appended so far durable (fdatasync). Safe from any thread, concurrently
  // with append: it covers at least every append that returned before it was called.
  virtual std::error_code sync() = 0;

  // Sets aside disk space for bytes [offset, offset + length) without changing the file's size
  // (fallocate with FALLOC_FL_KEEP_SIZE), so that appends up to there cannot fail for lack of
  // space. ENOSPC when the space is not there. The default answers
  // std::errc::operation_not_supported: the job log then writes each record as it comes instead
  // of one write per batch. Same thread as append.
  virtual std::error_code reserve(std::uint64_t offset, std::uint64_t length) {
    (void)offset;
    (void)length;
    return std::make_error_code(std::errc::operation_not_supported);
  }
};

// A file opened for positional reads (pread): the log reads job bodies back from its segments
// with it. Reads see everything appended before them, synced or not (the page cache), as a
// reader of the POSIX file does. Safe from any thread (pread has no file position).
class RandomAccessFile : public FileObject {
 public:
  // Reads up to `length` bytes at `offset` into `*data` (shorter at the end of the file),
  // retrying short reads and EINTR.
  virtual std::error_code read_at(std::uint64_t offset, std::uint64_t length,
                                  std::string* data) = 0;
};

// The whole contents of a file, read-only, in memory (FileSystem::load_file): what recovery
// replays. Not thread-safe by itself; the bytes may be read from any thread while it lives.
class FileContents : public FileObject {
 public:
  // The file's bytes as they were when it was opened; valid while this object lives.
  virtual std::string_view data() const = 0;
};

// How FileSystem::lock_file() locks a file: one exclusive holder (the job log that writes a
// directory), or any number of shared ones (tools that only read it).
enum class LockMode { kShared, kExclusive };

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Locks `path` (created if absent) without waiting, until *lock is destroyed. Advisory
  // (flock(2)): every holder of one lock file must ask for it, and two holders conflict even in
  // one process. When another holder has it: std::errc::resource_unavailable_try_again, and
  // *holder (may be null) is what that holder wrote into the file, if anything. An exclusive
  // holder writes `owner` (e.g. "pid 1234") into the file for that message, and empties it when
  // it lets go; a failure to write it is not an error (the lock is what counts).
  virtual std::error_code lock_file(const std::string& path, LockMode mode, std::string_view owner,
                                    std::unique_ptr<FileObject>* lock, std::string* holder) = 0;

  // Creates `dir` if it does not exist (not its parents).
  virtual std::error_code create_dir(const std::string& dir) = 0;
  // Names (not paths) of the regular files in `dir`, in no particular order.
  virtual std::error_code list(const std::string& dir, std::vector<std::string>* names) = 0;
  // Opens `path` for appending, creating it if absent; existing contents are kept.
  virtual std::error_code open_append(const std::string& path,
                                      std::unique_ptr<WritableFile>* file) = 0;
  // Opens `path` for positional reads (RandomAccessFile). The file stays readable through it
  // after remove() (POSIX semantics); the caller drops it to free the space.
  virtual std::error_code open_read(const std::string& path,
                                    std::unique_ptr<RandomAccessFile>* file) = 0;
  // Reads the whole file into `*data`.
  virtual std::error_code read_file(const std::string& path, std::string* data) = 0;
  // The whole file for one read-only pass (recovery). The default reads it with read_file();
  // the POSIX one reads into a buffer it does not zero first. Never a mapping: a disk read
  // error or a file cut shorter meanwhile is an error code or the shorter file, never SIGBUS.
  virtual std::error_code load_file(const std::string& path,
                                    std::unique_ptr<FileContents>* contents);
  // Reads up to `length` bytes at `offset` into `*data` (shorter at the end of the file).
  virtual std::error_code read_range(const std::string& path, std::uint64_t offset,
                                     std::uint64_t length, std::string* data) = 0;
  // Size of `path` in bytes.
  virtual std::error_code file_size(const std::string& path, std::uint64_t* size) = 0;
  // Cuts `path` to `size` bytes. Durable once the file or its directory is synced.
  virtual std::error_code truncate(const std::string& path, std::uint64_t size) = 0;
  virtual std::error_code rename(const std::string& from, const std::string& to) = 0;
  virtual std::error_code remove(const std::string& path) = 0;
  // Makes the directory's entries durable (files created, renamed or removed in it): fsync of
  // the directory.
  virtual std::error_code sync_dir(const std::string& dir) = 0;
  // Bytes an unprivileged writer can still use on the file system holding `dir` (statvfs).
  virtual std::error_code free_bytes(const std::string& dir, std::uint64_t* bytes) = 0;
};

// The real file system (POSIX calls). The object is stateless and lives for the whole program;
// safe from any thread.
FileSystem& posix_file_system();

}  // namespace wheel::jobs
