// SPDX-License-Identifier: Apache-2.0
#include "replace_file.h"

#include <cstddef>
#include <memory>
#include <span>

namespace wheel::jobs::log {

std::error_code replace_file(FileSystem& fs, const std::string& path, const std::string& dir,
                             std::string_view bytes) {
  const std::string temp = path + ".tmp";
  fs.remove(temp);
  std::unique_ptr<WritableFile> file;
  if (auto ec = fs.open_append(temp, &file)) return ec;
  std::error_code ec = file->append(std::as_bytes(std::span(bytes.data(), bytes.size())));
  if (!ec) ec = file->sync();
  file.reset();
  if (!ec) ec = fs.rename(temp, path);
  if (!ec) ec = fs.sync_dir(dir);
  if (ec) fs.remove(temp);
  return ec;
}

}  // namespace wheel::jobs::log
