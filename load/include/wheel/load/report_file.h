// SPDX-License-Identifier: Apache-2.0
// The --json report file, written whole or not at all: the text goes to a temporary file beside
// the destination, which is then renamed over it. A run stopped at any moment leaves either the
// previous file or the complete new one, never a truncated one.
#pragma once

#include <string>
#include <string_view>

namespace wheel::load {

class ReportFile {
 public:
  // Creates the temporary file "<path>.tmp-<pid>" in the destination's directory now, so a
  // path that cannot be written fails before the run. Throws std::runtime_error saying
  // "cannot open '<path>' for writing: <cause>".
  explicit ReportFile(std::string path);
  // Removes the temporary file unless commit() succeeded.
  ~ReportFile();
  ReportFile(const ReportFile&) = delete;
  ReportFile& operator=(const ReportFile&) = delete;

  // Writes `text` to the temporary file, flushes it to disk and renames it over the path.
  // Throws std::runtime_error naming the path and the cause. Call at most once.
  void commit(std::string_view text);

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return temporary_; }

 private:
  std::string path_;
  std::string temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace wheel::load
