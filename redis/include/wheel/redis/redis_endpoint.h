// SPDX-License-Identifier: Apache-2.0
// RedisEndpoint: where a Redis-backed store lives and how to log in, parsed from a URL of the
// form redis://[[USER]:PASSWORD@]HOST:PORT[/DB] (PORT defaults to 6379, DB to 0), the form
// redis-cli -u and the Redis client libraries take. HOST is a name, an IPv4 address or an IPv6
// address in brackets ("redis://[::1]:6379/2"). With a password the client sends AUTH before
// anything else: `redis://:PASSWORD@...` logs in as the default user (requirepass),
// `redis://USER:PASSWORD@...` as an ACL user (Redis 6+). USER and PASSWORD are percent-decoded
// ("p%40ss" is "p@ss"). Query strings and other schemes (rediss://, unix://) are refused with a
// message saying so: they are not supported. No message or formatted URL shows the password.
//
// Sentinel: redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER (Lettuce's
// form) names the sentinels (PORT defaults to 26379) that watch the primary called MASTER. USER,
// PASSWORD and DB are the data nodes' (the primary's, whichever server it is); a sentinel that
// wants a password of its own gets it apart (RedisSentinelEndpoint::sentinel_password).
//
// Cluster: redis-cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...] names seed nodes of a
// Redis Cluster (PORT defaults to 6379): any of them tells the rest (CLUSTER SHARDS). USER and
// PASSWORD are every node's. A cluster has database 0 only, so no /DB is taken.
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wheel::jobs {

// Highest database index accepted (Redis's `databases` setting decides what exists; SELECT of a
// missing one fails at connect time with Redis's own message).
inline constexpr std::uint32_t kMaxRedisDb = 1'000'000;

struct RedisEndpoint {
  std::string host;
  std::uint16_t port = 6379;
  std::uint32_t db = 0;
  std::string username;  // empty: the default user (AUTH PASSWORD)
  std::string password;  // empty: no AUTH
  bool operator==(const RedisEndpoint&) const = default;
};

// Longest USER or PASSWORD accepted, after decoding (Redis's own limit is far higher; this
// bounds what a careless command line can make the client send).
inline constexpr std::size_t kMaxRedisCredential = 1024;

// A server's address: a name, an IPv4 address or an IPv6 address (no brackets), and a port.
struct RedisAddress {
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const RedisAddress&) const = default;
};

inline constexpr std::uint16_t kDefaultSentinelPort = 26379;
// Bounds on what a sentinel URL may name (a careless command line, not Redis's limits).
inline constexpr std::size_t kMaxSentinels = 64;
inline constexpr std::size_t kMaxMasterName = 256;

struct RedisSentinelEndpoint {
  std::vector<RedisAddress> sentinels;  // asked in turn; at least one
  std::string master;                   // the name the sentinels know the primary by
  // The data nodes' login and database; its host and port are the primary's, once found.
  RedisEndpoint primary;
  // A password for the sentinels themselves (their requirepass); empty: none. Never in the URL.
  std::string sentinel_password;
  bool operator==(const RedisSentinelEndpoint&) const = default;
};

// Bounds on what a cluster URL may name (a careless command line, not Redis's limits).
inline constexpr std::size_t kMaxClusterSeeds = 64;

struct RedisClusterEndpoint {
  std::vector<RedisAddress> seeds;  // asked in turn for the slot map; at least one
  // Every node's login (database 0); its host and port are unset: each node's comes from the map.
  RedisEndpoint node;
  bool operator==(const RedisClusterEndpoint&) const = default;
};

// Parses `url`. On a malformed URL returns nullopt and, when `error` is not null, a one-line
// reason ("port must be a whole number from 1 to 65535, got '0'"); a URL quoted in it has its
// password replaced by "***".
std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error = nullptr);

// "redis://HOST:PORT/DB" (brackets around an IPv6 host), or "redis://USER@HOST:PORT/DB" when
// logging in as an ACL user: never the password, so it is safe in log lines.
std::string format_redis_url(const RedisEndpoint& endpoint);

// Parses a redis-sentinel:// URL, as parse_redis_url does a redis:// one (same messages, same
// masking); MASTER is required, at most kMaxMasterName bytes of printable ASCII, not empty.
std::optional<RedisSentinelEndpoint> parse_redis_sentinel_url(std::string_view url,
                                                              std::string* error = nullptr);

// Parses a redis-cluster:// URL, as parse_redis_url does a redis:// one (same messages, same
// masking); a /DB, a query or a fragment is refused, and so are more than kMaxClusterSeeds seeds.
std::optional<RedisClusterEndpoint> parse_redis_cluster_url(std::string_view url,
                                                            std::string* error = nullptr);

// "redis-cluster://[USER@]HOST:PORT,HOST:PORT": never a password.
std::string format_redis_cluster_url(const RedisClusterEndpoint& endpoint);

// "redis-sentinel://[USER@]HOST:PORT,HOST:PORT/DB#MASTER": never a password.
std::string format_redis_sentinel_url(const RedisSentinelEndpoint& endpoint);

// "HOST:PORT", brackets around an IPv6 host.
std::string format_redis_address(const RedisAddress& address);

}  // namespace wheel::jobs
