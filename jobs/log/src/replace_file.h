// SPDX-License-Identifier: Apache-2.0
// A small file replaced whole, durably: the job log's id lease, the time index's checkpoint and
// a far segment's side file. Internal to jobs/log.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs::log {

// Writes `bytes` to PATH.tmp, syncs it, renames it over `path` and syncs `dir` (the folder that
// holds `path`), so a crash leaves the old file or the new one, whole. A leftover PATH.tmp of an
// earlier crash is removed first (appending to it would make two files in one); on an error the
// temporary file is removed and `path` is as it was. The file operations, in order: remove,
// open_append, append, sync, rename, sync_dir (and remove on an error).
std::error_code replace_file(FileSystem& fs, const std::string& path, const std::string& dir,
                             std::string_view bytes);

}  // namespace wheel::jobs::log
