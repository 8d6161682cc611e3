// SPDX-License-Identifier: Apache-2.0
// The errors of the job log that a caller tells apart: a full disk or no free descriptor
// (refuse the change, keep serving, writes resume when space or a descriptor returns) and a failed
// log (an fdatasync or write failed in a way that leaves the file's state unknown: nothing more is
// written until a restart). Other errors come as std::system_category() codes from the file system.
#pragma once

#include <system_error>
#include <type_traits>

namespace wheel::jobs {

enum class LogError {
  kDiskFull = 1,  // no space for the record: the change was refused and not applied
  kFailed = 2,    // the log stopped after an I/O error (see the log for which); restart
  // Out of file descriptors (EMFILE, ENFILE) where the log needed one (a new segment): the
  // change was refused and not applied; changes resume by themselves once one is free.
  kNoDescriptors = 3,
};

const std::error_category& log_category();
inline std::error_code make_error_code(LogError e) {
  return {static_cast<int>(e), log_category()};
}

}  // namespace wheel::jobs

template <>
struct std::is_error_code_enum<wheel::jobs::LogError> : std::true_type {};
