// SPDX-License-Identifier: Apache-2.0
// FileSystem::load_file (file_system.h): the POSIX file system loads a segment whole (what a
// restart replays) and shows exactly the file's bytes, an empty file as empty, a missing file as
// ENOENT; the bytes outlive the file's name and its truncation (a mapping would raise SIGBUS).
// A file system without a loader of its own (the tests' fault-injecting one) answers with what
// read_file() reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>

#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs {
namespace {

// Every file object (FileObject) is deleted through its interface, and neither it nor an
// implementation of it (Contents, the least one) can be copied.
template <class File>
constexpr bool kOwnedNeverCopied =
    std::has_virtual_destructor_v<File> && !std::is_copy_constructible_v<File> &&
    !std::is_copy_assignable_v<File>;
struct Contents final : FileContents {
  std::string_view data() const override { return {}; }
};
static_assert(kOwnedNeverCopied<WritableFile>);
static_assert(kOwnedNeverCopied<RandomAccessFile>);
static_assert(kOwnedNeverCopied<FileContents>);
static_assert(kOwnedNeverCopied<Contents>);

class PosixLoadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "load-file-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::string dir_;
  FileSystem& fs_ = posix_file_system();
};

TEST_F(PosixLoadFileTest, LoadsExactlyTheFilesBytes) {
  std::string bytes(3 * 4096 + 123, '\0');  // not a whole number of pages; zeros inside
  std::mt19937 rng(5);
  for (std::size_t i = 0; i < bytes.size(); i += 3) bytes[i] = static_cast<char>(rng());
  const std::string path = write("segment", bytes);
  std::unique_ptr<FileContents> contents;
  ASSERT_FALSE(fs_.load_file(path, &contents));
  ASSERT_TRUE(contents);
  EXPECT_EQ(contents->data().size(), bytes.size());
  EXPECT_TRUE(contents->data() == bytes);
  // The bytes stay after the file is cut shorter by someone else, and after its name is gone.
  ASSERT_FALSE(fs_.truncate(path, 0));
  EXPECT_TRUE(contents->data() == bytes);
  ASSERT_FALSE(fs_.remove(path));
  EXPECT_TRUE(contents->data() == bytes);
}

TEST_F(PosixLoadFileTest, AnEmptyFileIsEmptyAndAMissingOneIsAnError) {
  std::unique_ptr<FileContents> contents;
  ASSERT_FALSE(fs_.load_file(write("empty", ""), &contents));
  ASSERT_TRUE(contents);
  EXPECT_TRUE(contents->data().empty());
  std::unique_ptr<FileContents> none;
  const std::error_code ec = fs_.load_file(dir_ + "/missing", &none);
  EXPECT_EQ(ec, std::errc::no_such_file_or_directory);
  EXPECT_FALSE(none);
}

// flock's rules, on the real file system and the fault-injecting one alike: readers share, a
// writer is alone, two holders in one process conflict, and letting go frees it at once.
void check_lock_rules(FileSystem& fs, const std::string& path) {
  std::unique_ptr<FileObject> writer;
  std::unique_ptr<FileObject> other;
  std::string holder;
  ASSERT_FALSE(fs.lock_file(path, LockMode::kExclusive, "pid 42", &writer, &holder));
  EXPECT_EQ(fs.lock_file(path, LockMode::kExclusive, "pid 43", &other, &holder),
            std::errc::resource_unavailable_try_again);
  EXPECT_EQ(holder, "pid 42");
  EXPECT_EQ(fs.lock_file(path, LockMode::kShared, "", &other, nullptr),
            std::errc::resource_unavailable_try_again);
  EXPECT_FALSE(other);
  writer.reset();
  std::unique_ptr<FileObject> reader1;
  std::unique_ptr<FileObject> reader2;
  ASSERT_FALSE(fs.lock_file(path, LockMode::kShared, "", &reader1, nullptr));
  ASSERT_FALSE(fs.lock_file(path, LockMode::kShared, "", &reader2, nullptr));
  holder = "unchanged";
  EXPECT_EQ(fs.lock_file(path, LockMode::kExclusive, "pid 44", &writer, &holder),
            std::errc::resource_unavailable_try_again);
  EXPECT_EQ(holder, "") << "readers write nothing, and the last writer wiped its pid";
  reader1.reset();
  reader2.reset();
  EXPECT_FALSE(fs.lock_file(path, LockMode::kExclusive, "pid 44", &writer, &holder));
}

TEST_F(PosixLoadFileTest, LocksFollowFlocksRules) {
  check_lock_rules(fs_, dir_ + "/lock");
}

TEST(FaultInjectionLockTest, LocksFollowFlocksRules) {
  testing::FaultInjectionFs fs;
  ASSERT_FALSE(fs.create_dir("/d"));
  check_lock_rules(fs, "/d/lock");
}

TEST(DefaultLoadFileTest, IsWhatReadFileReads) {
  testing::FaultInjectionFs fs;
  ASSERT_FALSE(fs.create_dir("/d"));
  std::unique_ptr<WritableFile> file;
  ASSERT_FALSE(fs.open_append("/d/f", &file));
  const std::string bytes = "record one\nrecord two";
  ASSERT_FALSE(file->append(std::as_bytes(std::span(bytes.data(), bytes.size()))));
  std::string read;
  ASSERT_FALSE(fs.read_file("/d/f", &read));
  std::unique_ptr<FileContents> contents;
  ASSERT_FALSE(fs.load_file("/d/f", &contents));
  EXPECT_EQ(contents->data(), read);
  EXPECT_EQ(contents->data(), bytes);
  EXPECT_TRUE(fs.load_file("/d/missing", &contents));
}

}  // namespace
}  // namespace wheel::jobs
