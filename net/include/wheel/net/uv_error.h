// SPDX-License-Identifier: Apache-2.0
// libuv's error results as C++ exceptions, for code that sets up handles and loops: libuv
// returns a negative errno (UV_EMFILE == -EMFILE on Unix); set-up failures become one
// std::system_error that names the call and the error, as "uv_tcp_init (EMFILE)".
#pragma once

#include <uv.h>

#include <string>
#include <system_error>

namespace wheel::net {

// Effect: nothing when `rc` is 0 or positive (a count, as uv_try_write returns); otherwise
// throws std::system_error whose code() is the errno -rc in std::generic_category() and whose
// what() begins with "`what` (NAME)", NAME being uv_err_name(rc).
// Threads: safe from any thread (uv_err_name reads a table).
inline void check_uv(int rc, const char* what) {
  if (rc < 0) {
    throw std::system_error(-rc, std::generic_category(),
                            std::string(what) + " (" + uv_err_name(rc) + ")");
  }
}

}  // namespace wheel::net
