// SPDX-License-Identifier: Apache-2.0
// Test support, linked into every test binary: a sanitizer report of a *child* process
// (wheel-jobs, wheel-server, wheel-load started by a test) fails the test that was running.
// Without it a child's report went to the test's stderr and was lost: the child died, the test
// often ended anyway, and ctest said Passed (219b272 fixed a use-after-free that ASan had
// reported that way for weeks).
//
// How: before main, in a sanitizer build, this process's ASAN/UBSAN/TSAN_OPTIONS gain
// `log_path=DIR/<kind>`. The sanitizer of this process read its options already, so its own
// reports still go to stderr; every child inherits the new ones and writes `DIR/<kind>.<pid>`.
// After each test, a GoogleTest listener (which runs before the result printer) reads the files
// that appeared, prints them and fails the test. In a build without sanitizers it does nothing.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// A report is printed whole up to this size, then cut.
constexpr std::size_t kMaxReportBytes = 64 * 1024;

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(dir + "/" + name);
  }
  ::closedir(d);
  return names;
}

std::string read_some(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(kMaxReportBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

class ChildSanitizerReports : public ::testing::EmptyTestEventListener {
 public:
  explicit ChildSanitizerReports(std::string dir) : dir_(std::move(dir)) {}

  void OnTestEnd(const ::testing::TestInfo&) override {
    for (const std::string& path : files_in(dir_)) {
      ADD_FAILURE() << "a child process's sanitizer report (" << path << "):\n" << read_some(path);
      std::remove(path.c_str());
    }
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    for (const std::string& path : files_in(dir_)) {
      std::fprintf(stderr, "a child process's sanitizer report after the last test (%s):\n%s\n",
                   path.c_str(), read_some(path).c_str());
      std::remove(path.c_str());
    }
  }

 private:
  std::string dir_;
};

void append_option(const char* variable, const std::string& option) {
  const char* old = std::getenv(variable);
  const std::string value =
      old != nullptr && *old != '\0' ? std::string(old) + ":" + option : option;
  ::setenv(variable, value.c_str(), 1);
}

const bool kWatching = [] {
  if (!kSanitized) return false;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/wheel-child-sanitizer-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return false;
  // Later options win, so these override a log_path given by the caller, for children only.
  append_option("ASAN_OPTIONS", "log_path=" + pattern + "/asan");
  append_option("UBSAN_OPTIONS", "log_path=" + pattern + "/ubsan");
  append_option("TSAN_OPTIONS", "log_path=" + pattern + "/tsan");
  static std::string dir = pattern;
  // Also when no test runs (--gtest_list_tests, which ctest's discovery calls at build time).
  std::atexit([] {
    for (const std::string& path : files_in(dir)) std::remove(path.c_str());
    ::rmdir(dir.c_str());
  });
  ::testing::UnitTest::GetInstance()->listeners().Append(new ChildSanitizerReports(pattern));
  return true;
}();

}  // namespace
