// SPDX-License-Identifier: Apache-2.0
// support/child_sanitizer_reports.cc, shown: a child with a heap-use-after-free fails the test
// that started it. This binary runs in sanitizer builds only, as a ctest test that passes when
// its output has the failure with the child's report (tests/CMakeLists.txt), since the test
// below is meant to fail.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "support/spawn.h"

namespace {

constexpr const char* kBeTheChild = "WHEEL_TEST_BE_A_FAULTY_CHILD";

// Runs before main in the child: reads freed memory, which ASan reports and exits on (on
// purpose, so GCC's warning about it is off here).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
const bool kChild = [] {
  if (std::getenv(kBeTheChild) == nullptr) return false;
  volatile char* p = static_cast<char*>(std::malloc(16));
  std::memset(const_cast<char*>(p), 1, 16);
  std::free(const_cast<char*>(p));
  const int read_after_free = p[3];
  std::_Exit(read_after_free == 1 ? 0 : 3);
}();
#pragma GCC diagnostic pop

TEST(ChildSanitizerReports, AChildsHeapUseAfterFreeFailsThisTest) {
  ::setenv(kBeTheChild, "1", 1);
  const pid_t child = wheel_test::spawn_tied({"/proc/self/exe"});
  ::unsetenv(kBeTheChild);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  // The child's sanitizer stopped it; the report is in a file that the listener reads next.
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "status " << status;
}

}  // namespace
