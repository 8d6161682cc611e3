// SPDX-License-Identifier: Apache-2.0
// RedisEndpoint: where a Redis-backed store lives, parsed from a URL of the form
// redis://HOST:PORT[/DB] (PORT defaults to 6379, DB to 0). HOST is a name, an IPv4 address or an
// IPv6 address in brackets ("redis://[::1]:6379/2"). Credentials, query strings and other
// schemes (rediss://, unix://) are refused with a message saying so: they are not supported.
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wheel::jobs {

// Highest database index accepted (Redis's `databases` setting decides what exists; SELECT of a
// missing one fails at connect time with Redis's own message).
inline constexpr std::uint32_t kMaxRedisDb = 1'000'000;

struct RedisEndpoint {
  std::string host;
  std::uint16_t port = 6379;
  std::uint32_t db = 0;
  bool operator==(const RedisEndpoint&) const = default;
};

// Parses `url`. On a malformed URL returns nullopt and, when `error` is not null, a one-line
// reason ("port must be a whole number from 1 to 65535, got '0'").
std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error = nullptr);

// "redis://HOST:PORT/DB" (brackets around an IPv6 host).
std::string format_redis_url(const RedisEndpoint& endpoint);

}  // namespace wheel::jobs
