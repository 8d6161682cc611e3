// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs {
namespace {

std::error_code last_error() {
  return {errno, std::system_category()};
}

// pread until `length` bytes or the end of the file; *data holds what was read.
std::error_code pread_all(int fd, std::uint64_t offset, std::uint64_t length, std::string* data) {
  data->resize(length);
  std::uint64_t got = 0;
  std::error_code ec;
  while (got < length) {
    const ssize_t n =
        ::pread(fd, data->data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      ec = last_error();
      break;
    }
    if (n == 0) break;
    got += static_cast<std::uint64_t>(n);
  }
  data->resize(got);
  return ec;
}

// FileContents of a string: FileSystem::load_file()'s default.
class StringContents final : public FileContents {
 public:
  explicit StringContents(std::string data) : data_(std::move(data)) {}
  std::string_view data() const override { return data_; }

 private:
  std::string data_;
};

// FileContents in a buffer of its own, filled by read(2) without zeroing it first.
class BufferContents final : public FileContents {
 public:
  BufferContents(std::unique_ptr<char[]> bytes, std::size_t size)
      : bytes_(std::move(bytes)), size_(size) {}
  std::string_view data() const override { return {bytes_.get(), size_}; }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t size_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  explicit PosixRandomAccessFile(int fd) : fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  std::error_code read_at(std::uint64_t offset, std::uint64_t length, std::string* data) override {
    return pread_all(fd_, offset, length, data);
  }

 private:
  int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  explicit PosixWritableFile(int fd) : fd_(fd) {}
  ~PosixWritableFile() override { ::close(fd_); }

  std::error_code append(std::span<const std::byte> data) override {
    const std::byte* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return last_error();
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return {};
  }

  std::error_code sync() override {
    while (::fdatasync(fd_) != 0) {
      if (errno != EINTR) return last_error();
    }
    return {};
  }

  std::error_code reserve(std::uint64_t offset, std::uint64_t length) override {
#ifdef FALLOC_FL_KEEP_SIZE
    while (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                       static_cast<off_t>(length)) != 0) {
      if (errno == EINTR) continue;
      if (errno == EOPNOTSUPP || errno == ENOSYS) {
        return std::make_error_code(std::errc::operation_not_supported);
      }
      return last_error();
    }
    return {};
#else
    return WritableFile::reserve(offset, length);
#endif
  }

 private:
  int fd_;
};

// A flock(2) held on an open lock file; an exclusive holder empties the file (its pid) first.
class PosixFileLock final : public FileObject {
 public:
  PosixFileLock(int fd, bool exclusive) : fd_(fd), exclusive_(exclusive) {}
  ~PosixFileLock() override {
    // A failure leaves a stale "pid N" behind, which the next holder overwrites.
    if (exclusive_) {
      const int cut = ::ftruncate(fd_, 0);
      (void)cut;
    }
    ::close(fd_);  // lets go of the lock
  }

 private:
  int fd_;
  bool exclusive_;
};

class PosixFileSystem final : public FileSystem {
 public:
  std::error_code lock_file(const std::string& path, LockMode mode, std::string_view owner,
                            std::unique_ptr<FileObject>* lock, std::string* holder) override {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return last_error();
    const bool exclusive = mode == LockMode::kExclusive;
    while (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      std::error_code ec = last_error();
      if (errno == EWOULDBLOCK) {
        ec = std::make_error_code(std::errc::resource_unavailable_try_again);
        std::string text;
        if (holder != nullptr && !pread_all(fd, 0, 256, &text)) *holder = text;
      }
      ::close(fd);
      return ec;
    }
    // Who holds it, for the message of the next one (the lock is what counts, not this).
    if (exclusive && ::ftruncate(fd, 0) == 0) {
      const ssize_t written = ::pwrite(fd, owner.data(), owner.size(), 0);
      (void)written;
    }
    *lock = std::make_unique<PosixFileLock>(fd, exclusive);
    return {};
  }

  std::error_code create_dir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return last_error();
    return {};
  }

  std::error_code list(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return last_error();
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st {};
      if (::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        names->push_back(name);
      }
    }
    ::closedir(d);
    return {};
  }

  std::error_code open_append(const std::string& path,
                              std::unique_ptr<WritableFile>* file) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return last_error();
    *file = std::make_unique<PosixWritableFile>(fd);
    return {};
  }

  std::error_code read_file(const std::string& path, std::string* data) override {
    std::uint64_t size = 0;
    if (auto ec = file_size(path, &size)) return ec;
    return read_range(path, 0, size, data);
  }

  std::error_code read_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                             std::string* data) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return last_error();
    std::error_code ec = pread_all(fd, offset, length, data);
    ::close(fd);
    return ec;
  }

  // Reads the file whole into a buffer that is not zeroed first (a std::string would be):
  // recovery reads every byte once. Not a mapping: a file cut shorter by another process, or a
  // disk read error, must be an error code, where a mapping would raise SIGBUS.
  std::error_code load_file(const std::string& path,
                            std::unique_ptr<FileContents>* contents) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return last_error();
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const std::error_code ec = last_error();
      ::close(fd);
      return ec;
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // a hint: larger readahead
    const auto size = static_cast<std::size_t>(st.st_size);
    std::unique_ptr<char[]> bytes(new char[size]);  // NOLINT(*-avoid-c-arrays): not zeroed
    std::size_t got = 0;
    while (got < size) {
      const ssize_t n = ::read(fd, bytes.get() + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const std::error_code ec = last_error();
        ::close(fd);
        return ec;
      }
      if (n == 0) break;  // cut shorter since fstat: what was there is the file
      got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    *contents = std::make_unique<BufferContents>(std::move(bytes), got);
    return {};
  }

  std::error_code open_read(const std::string& path,
                            std::unique_ptr<RandomAccessFile>* file) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return last_error();
    *file = std::make_unique<PosixRandomAccessFile>(fd);
    return {};
  }

  std::error_code file_size(const std::string& path, std::uint64_t* size) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return last_error();
    *size = static_cast<std::uint64_t>(st.st_size);
    return {};
  }

  std::error_code truncate(const std::string& path, std::uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return last_error();
    return {};
  }

  std::error_code rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return last_error();
    return {};
  }

  std::error_code remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return last_error();
    return {};
  }

  std::error_code sync_dir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return last_error();
    std::error_code ec;
    if (::fsync(fd) != 0) ec = last_error();
    ::close(fd);
    return ec;
  }

  std::error_code free_bytes(const std::string& dir, std::uint64_t* bytes) override {
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) return last_error();
    *bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
    return {};
  }
};

}  // namespace

std::error_code FileSystem::load_file(const std::string& path,
                                      std::unique_ptr<FileContents>* contents) {
  std::string data;
  if (auto ec = read_file(path, &data)) return ec;
  *contents = std::make_unique<StringContents>(std::move(data));
  return {};
}

FileSystem& posix_file_system() {
  static PosixFileSystem fs;
  return fs;
}

}  // namespace wheel::jobs
