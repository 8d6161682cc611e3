// SPDX-License-Identifier: Apache-2.0
// Redis Cluster's pure parts: the hash slot of a key (CRC16/XMODEM of its hash tag, the cluster
// specification's vectors), the slot map read from a CLUSTER SHARDS reply, and the MOVED/ASK
// replies parsed.
#include <gtest/gtest.h>

#include <string>

#include "redis_cluster_internal.h"
#include "wheel/redis/redis_cluster_map.h"
#include "wheel/redis/redis_cluster_slot.h"

namespace wheel::jobs {
namespace {

TEST(RedisClusterSlot, Crc16IsXmodemAsTheClusterSpecificationSays) {
  EXPECT_EQ(redis_crc16("123456789"), 0x31C3);  // the specification's test vector
  EXPECT_EQ(redis_crc16(""), 0);
  EXPECT_EQ(redis_key_slot("123456789"), 0x31C3 % 16384);
  // Slots redis-cli's CLUSTER KEYSLOT gives (Redis 7.0).
  EXPECT_EQ(redis_key_slot("foo"), 12182);
  EXPECT_EQ(redis_key_slot("bar"), 5061);
  EXPECT_EQ(redis_key_slot("hello"), 866);
  EXPECT_EQ(redis_key_slot(std::string("\xff\x00\x01", 3)),
            redis_crc16(std::string("\xff\x00\x01", 3)) % 16384);
}

TEST(RedisClusterSlot, OnlyTheHashTagIsHashedWhenItIsNotEmpty) {
  EXPECT_EQ(redis_hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(redis_key_slot("{user1000}.following"), redis_key_slot("{user1000}.followers"));
  EXPECT_EQ(redis_key_slot("{user1000}.following"), redis_key_slot("user1000"));
  EXPECT_EQ(redis_hash_tag("foo{}{bar}"), "foo{}{bar}");  // the first tag is empty: whole key
  EXPECT_EQ(redis_hash_tag("foo{{bar}}zap"), "{bar");     // up to the first '}'
  EXPECT_EQ(redis_hash_tag("foo{bar}{zap}"), "bar");      // the first tag only
  EXPECT_EQ(redis_hash_tag("foo{bar"), "foo{bar");        // no closing brace
  EXPECT_EQ(redis_hash_tag("wj:{t}:ready"), "t");
}

RedisValue text(std::string s) {
  RedisValue v;
  v.type = RedisValue::Type::kString;
  v.str = std::move(s);
  return v;
}
RedisValue number(long long n) {
  RedisValue v;
  v.type = RedisValue::Type::kInteger;
  v.integer = n;
  return v;
}
RedisValue array(std::vector<RedisValue> elements) {
  RedisValue v;
  v.type = RedisValue::Type::kArray;
  v.elements = std::move(elements);
  return v;
}
RedisValue node(const std::string& ip, long long port, const std::string& role,
                const std::string& health) {
  return array({text("id"), text("abc"), text("port"), number(port), text("ip"), text(ip),
                text("endpoint"), text(ip), text("role"), text(role), text("replication-offset"),
                number(0), text("health"), text(health)});
}
RedisValue shard(std::vector<long long> ranges, std::vector<RedisValue> nodes) {
  std::vector<RedisValue> slots;
  for (long long r : ranges) slots.push_back(number(r));
  return array({text("slots"), array(std::move(slots)), text("nodes"), array(std::move(nodes))});
}

TEST(RedisClusterMap, ReadsEachShardsOnlinePrimaryAndItsRanges) {
  const RedisValue reply =
      array({shard({0, 5460, 16000, 16383}, {node("127.0.0.1", 7003, "replica", "online"),
                                             node("127.0.0.1", 7000, "master", "online")}),
             shard({5461, 15999}, {node("127.0.0.1", 7001, "master", "online")}),
             shard({}, {node("127.0.0.1", 7009, "master", "online")})});  // serves nothing
  std::string error;
  auto map = RedisClusterMap::from_shards(reply, &error);
  ASSERT_TRUE(map) << error;
  EXPECT_EQ(map->served_slots(), 16384u);
  EXPECT_EQ(map->primaries(),
            (std::vector<RedisAddress>{{"127.0.0.1", 7000}, {"127.0.0.1", 7001}}));
  EXPECT_EQ(*map->primary_of(0), (RedisAddress{"127.0.0.1", 7000}));
  EXPECT_EQ(*map->primary_of(5460), (RedisAddress{"127.0.0.1", 7000}));
  EXPECT_EQ(*map->primary_of(5461), (RedisAddress{"127.0.0.1", 7001}));
  EXPECT_EQ(*map->primary_of(16383), (RedisAddress{"127.0.0.1", 7000}));
  map->assign(5461, {"127.0.0.1", 7009});  // MOVED
  EXPECT_EQ(*map->primary_of(5461), (RedisAddress{"127.0.0.1", 7009}));
  EXPECT_EQ(*map->primary_of(5462), (RedisAddress{"127.0.0.1", 7001}));
}

TEST(RedisClusterMap, AShardWithoutAnOnlinePrimaryLeavesItsSlotsUnserved) {
  const RedisValue reply =
      array({shard({0, 99}, {node("127.0.0.1", 7000, "master", "failed"),
                             node("127.0.0.1", 7003, "replica", "online")}),
             shard({100, 16383}, {node("127.0.0.1", 7001, "master", "online")})});
  auto map = RedisClusterMap::from_shards(reply, nullptr);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->primary_of(0), nullptr);
  EXPECT_EQ(map->served_slots(), 16384u - 100u);
}

TEST(RedisClusterMap, RefusesWhatIsNoShardList) {
  std::string error;
  EXPECT_FALSE(RedisClusterMap::from_shards(
      RedisValue::error("ERR This instance has cluster support disabled"), &error));
  EXPECT_NE(error.find("cluster support disabled"), std::string::npos) << error;
  EXPECT_FALSE(RedisClusterMap::from_shards(text("x"), &error));
  EXPECT_FALSE(RedisClusterMap::from_shards(
      array({shard({0, 16384}, {node("127.0.0.1", 7000, "master", "online")})}), &error));
  EXPECT_NE(error.find("out of bounds"), std::string::npos) << error;
  EXPECT_FALSE(RedisClusterMap::from_shards(array({shard({5}, {})}), &error));
  EXPECT_TRUE(RedisClusterMap().primaries().empty());
  EXPECT_EQ(RedisClusterMap().served_slots(), 0u);
}

TEST(RedisClusterRedirect, ParsesMovedAndAsk) {
  auto moved = parse_redis_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved);
  EXPECT_TRUE(moved->moved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->to, (RedisAddress{"127.0.0.1", 6381}));
  auto ask = parse_redis_redirect("ASK 0 ::1:7000");
  ASSERT_TRUE(ask);
  EXPECT_FALSE(ask->moved);
  EXPECT_EQ(ask->to, (RedisAddress{"::1", 7000}));
  for (const char* other : {"ERR x", "MOVED", "MOVED 16384 h:1", "MOVED 1 h:0", "MOVED 1 :80",
                            "ASK x h:1", "MOVED 1 h"}) {
    EXPECT_FALSE(parse_redis_redirect(other)) << other;
  }
}

}  // namespace
}  // namespace wheel::jobs
