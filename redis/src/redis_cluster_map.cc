// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_cluster_map.h"

#include <algorithm>
#include <string_view>

namespace wheel::jobs {
namespace {

// The value after `name` in a flat [name, value, name, value...] array, or nullptr.
const RedisValue* field(const RedisValue& map, std::string_view name) {
  if (map.type != RedisValue::Type::kArray) return nullptr;
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].str == name) return &map.elements[i + 1];
  }
  return nullptr;
}

std::string text_of(const RedisValue* value) {
  return value == nullptr ? std::string() : value->str;
}

// The shard's primary, if it has one that is online: its endpoint (the address clients are told
// to use: cluster-preferred-endpoint-type), else its ip.
std::optional<RedisAddress> online_primary(const RedisValue* nodes) {
  if (nodes == nullptr || nodes->type != RedisValue::Type::kArray) return std::nullopt;
  for (const RedisValue& node : nodes->elements) {
    if (text_of(field(node, "role")) != "master" || text_of(field(node, "health")) != "online") {
      continue;
    }
    const RedisValue* port = field(node, "port");
    std::string host = text_of(field(node, "endpoint"));
    if (host.empty() || host == "?") host = text_of(field(node, "ip"));
    if (port == nullptr || port->type != RedisValue::Type::kInteger || port->integer <= 0 ||
        port->integer > 65535 || host.empty()) {
      continue;
    }
    return RedisAddress{host, static_cast<std::uint16_t>(port->integer)};
  }
  return std::nullopt;
}

}  // namespace

RedisClusterMap::RedisClusterMap() : owner_(kRedisClusterSlots, kNone) {}

std::optional<RedisClusterMap> RedisClusterMap::from_shards(const RedisValue& reply,
                                                            std::string* error) {
  auto fail = [&](std::string why) -> std::optional<RedisClusterMap> {
    if (error != nullptr) *error = "CLUSTER SHARDS: " + std::move(why);
    return std::nullopt;
  };
  if (reply.is_error()) return fail(reply.str);
  if (reply.type != RedisValue::Type::kArray) return fail("not an array of shards");
  RedisClusterMap map;
  for (const RedisValue& shard : reply.elements) {
    const RedisValue* slots = field(shard, "slots");
    if (slots == nullptr || slots->type != RedisValue::Type::kArray ||
        slots->elements.size() % 2 != 0) {
      return fail("a shard without its slot ranges");
    }
    if (slots->elements.empty()) continue;  // serves nothing (a primary emptied, a failed one)
    // A shard whose primary failed and no replica took over yet: its slots stay unserved.
    const auto primary = online_primary(field(shard, "nodes"));
    if (!primary) continue;
    const std::uint16_t index = map.index_of(*primary);
    for (std::size_t i = 0; i < slots->elements.size(); i += 2) {
      const long long first = slots->elements[i].integer;
      const long long last = slots->elements[i + 1].integer;
      if (first < 0 || last < first || last >= kRedisClusterSlots) {
        return fail("slot range " + std::to_string(first) + "-" + std::to_string(last) +
                    " out of bounds");
      }
      std::fill(map.owner_.begin() + first, map.owner_.begin() + last + 1, index);
    }
  }
  return map;
}

const RedisAddress* RedisClusterMap::primary_of(std::uint16_t slot) const {
  const std::uint16_t index = owner_[slot];
  return index == kNone ? nullptr : &primaries_[index];
}

std::size_t RedisClusterMap::served_slots() const {
  return static_cast<std::size_t>(owner_.size() - std::count(owner_.begin(), owner_.end(), kNone));
}

void RedisClusterMap::assign(std::uint16_t slot, const RedisAddress& primary) {
  owner_[slot] = index_of(primary);
}

std::uint16_t RedisClusterMap::index_of(const RedisAddress& primary) {
  const auto it = std::find(primaries_.begin(), primaries_.end(), primary);
  if (it != primaries_.end()) return static_cast<std::uint16_t>(it - primaries_.begin());
  primaries_.push_back(primary);
  return static_cast<std::uint16_t>(primaries_.size() - 1);
}

}  // namespace wheel::jobs
