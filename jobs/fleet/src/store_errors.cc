// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/fleet/store_errors.h"

namespace wheel::jobs {

InternalErrorCause store_error_cause(std::string_view error) {
  if (error.starts_with("ERR redis unavailable") || error.starts_with("ERR redis client stopped")) {
    return InternalErrorCause::kRedisUnavailable;
  }
  if (error.starts_with("ERR not replicated")) return InternalErrorCause::kNotReplicated;
  if (error.starts_with("ERR unexpected reply")) return InternalErrorCause::kBadReply;
  return InternalErrorCause::kRedisError;
}

}  // namespace wheel::jobs
