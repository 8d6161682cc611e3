// SPDX-License-Identifier: Apache-2.0
// check_uv: libuv's negative errno results become one std::system_error naming call and error.
#include "wheel/net/uv_error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace {

using wheel::net::check_uv;

TEST(CheckUv, SuccessAndCountsDoNotThrow) {
  EXPECT_NO_THROW(check_uv(0, "uv_timer_init"));
  EXPECT_NO_THROW(check_uv(12, "uv_try_write"));  // a byte count, not an error
}

TEST(CheckUv, AnErrorCarriesItsErrnoAndNamesTheCallAndTheError) {
  try {
    check_uv(UV_EMFILE, "uv_accept");
    FAIL() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::error_code(EMFILE, std::generic_category()));
    EXPECT_EQ(std::string(e.what()).rfind("uv_accept (EMFILE)", 0), 0u) << e.what();
  }
}

}  // namespace
