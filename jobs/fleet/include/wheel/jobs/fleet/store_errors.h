// SPDX-License-Identifier: Apache-2.0
// The INTERNAL_ERROR cause of a failed store call (internal_errors.h), from the error text the
// Redis store hands back.
//
// Threads: pure, safe from any thread.
#pragma once

#include <string_view>

#include "wheel/jobs/server/internal_errors.h"

namespace wheel::jobs {

// Why a store call failed with `error` (StoreResult::error, status kError): the client's own
// failures ("ERR redis unavailable: ...", "ERR not replicated: ...", "ERR unexpected reply
// ...") by their cause; anything else is Redis's error reply (kRedisError).
InternalErrorCause store_error_cause(std::string_view error);

}  // namespace wheel::jobs
