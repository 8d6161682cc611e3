// SPDX-License-Identifier: Apache-2.0
// The Lua scripts, compiled by Redis itself (SCRIPT LOAD into a real redis-server): every script
// of the store as it sends them (jobs/fleet/lua, each on the prologue), the same texts a running
// RedisStore loads, and every other .lua of the project on its own (load/lua, tests/lua).
// scripts/lint.sh checks the same files with luac5.1 -p; this is Redis's word on them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "other_lua.h"
#include "redis_scripts.h"
#include "support/redis_server.h"
#include "support/redis_store_fixture.h"
#include "wheel/jobs/fleet/redis_script_limits.h"

namespace wheel::jobs {
namespace {

using wheel_test::redis_command;

// SCRIPT LOAD's reply: the script's sha1 (40 hex digits), or Redis's error ("ERR:...").
std::string script_load(int port, std::string_view text) {
  return redis_command(port, {"SCRIPT", "LOAD", std::string(text)});
}

bool is_sha1(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

long long cached_scripts(int port) {
  return wheel_test::redis_info_field(port, "memory", "number_of_cached_scripts");
}

TEST(RedisScriptsTest, EveryStoreScriptCompilesInRedis) {
  wheel_test::RedisServer redis;
  ASSERT_TRUE(redis.running());
  const auto scripts = redis_scripts::all();
  std::set<std::string> names, shas;
  for (const auto& s : scripts) {
    const std::string sha = script_load(redis.port(), s.text);
    EXPECT_TRUE(is_sha1(sha)) << s.name << ": " << sha;
    names.insert(s.name);
    shas.insert(sha);
  }
  // put.lua ... list_jobs.lua: every file of jobs/fleet/lua but the prologue, each its own text.
  EXPECT_EQ(scripts.size(), 19u);
  EXPECT_EQ(names.size(), scripts.size());
  EXPECT_EQ(shas.size(), scripts.size());
  EXPECT_EQ(names.count("prologue.lua"), 0u);
  // Each is the prologue with its bound spliced in, then the file.
  for (const auto& s : scripts) {
    EXPECT_EQ(s.text.find("MAX_PROMOTE\n"), std::string::npos) << s.name;
    EXPECT_NE(s.text.find("local MAXP = " + std::to_string(kMaxPromotePerScript) + "\n"),
              std::string::npos)
        << s.name;
  }
}

// A running store loaded the very texts above: loading them again adds no script to Redis's
// cache (same text, same sha1, so EVALSHA finds them).
TEST_F(RedisStoreTest, LoadsExactlyTheScriptsOfTheLuaFiles) {
  ASSERT_EQ(put("q", 0, milliseconds(0), milliseconds(1000), "x").status, StoreStatus::kOk);
  const long long loaded = cached_scripts(redis_.port());
  EXPECT_EQ(loaded, static_cast<long long>(redis_scripts::all().size()));
  for (const auto& s : redis_scripts::all())
    EXPECT_TRUE(is_sha1(script_load(redis_.port(), s.text))) << s.name;
  EXPECT_EQ(cached_scripts(redis_.port()), loaded);
}

TEST(RedisScriptsTest, EveryOtherLuaFileCompilesInRedis) {
  wheel_test::RedisServer redis;
  ASSERT_TRUE(redis.running());
  EXPECT_GE(std::size(wheel_test::other_lua::kFiles), 4u);  // load/lua and tests/lua
  for (const auto& f : wheel_test::other_lua::kFiles) {
    const std::string sha = script_load(redis.port(), f.text);
    EXPECT_TRUE(is_sha1(sha)) << f.name << ": " << sha;
  }
}

}  // namespace
}  // namespace wheel::jobs
