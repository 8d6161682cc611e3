// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/report_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace wheel::load {

ReportFile::ReportFile(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp-" + std::to_string(getpid())) {
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot open '" + path_ + "' for writing: " + std::strerror(errno));
  }
}

ReportFile::~ReportFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
}

void ReportFile::commit(std::string_view text) {
  const auto fail = [this](const char* step) {
    throw std::runtime_error("cannot write '" + path_ + "' (" + step +
                             "): " + std::strerror(errno));
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close");
  }
  fd_ = -1;
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) fail("rename");
  committed_ = true;
}

}  // namespace wheel::load
