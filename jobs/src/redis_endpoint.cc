// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/redis_endpoint.h"

#include <charconv>

namespace wheel::jobs {
namespace {

std::optional<RedisEndpoint> fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return std::nullopt;
}

// A whole decimal number in [lo, hi], digits only.
std::optional<std::uint64_t> whole(std::string_view text, std::uint64_t lo, std::uint64_t hi) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

}  // namespace

std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return fail(error,
                "must start with redis:// (rediss:// and unix sockets are not supported), "
                "got '" +
                    std::string(url) + "'");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("@?#") != std::string_view::npos) {
    return fail(error, "credentials, queries and fragments are not supported, got '" +
                           std::string(url) + "'");
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path =
      rest.size() > authority.size() ? rest.substr(authority.size() + 1) : std::string_view{};
  RedisEndpoint endpoint;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) {
      return fail(error, "an IPv6 host must be in brackets, e.g. redis://[::1]:6379, got '" +
                             std::string(url) + "'");
    }
    endpoint.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        return fail(error, "expected ':PORT' after ']' in '" + std::string(url) + "'");
      port_text = after.substr(1);
      if (port_text.empty()) return fail(error, "empty port in '" + std::string(url) + "'");
    }
  } else {
    const std::size_t colon = authority.find(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return fail(error, "empty port in '" + std::string(url) + "'");
    }
  }
  if (endpoint.host.empty()) return fail(error, "no host in '" + std::string(url) + "'");
  if (!port_text.empty()) {
    const auto port = whole(port_text, 1, 65535);
    if (!port) {
      return fail(error, "port must be a whole number from 1 to 65535, got '" +
                             std::string(port_text) + "'");
    }
    endpoint.port = static_cast<std::uint16_t>(*port);
  }
  if (!path.empty()) {
    const auto db = whole(path, 0, kMaxRedisDb);
    if (!db) {
      return fail(error, "database must be a whole number from 0 to " +
                             std::to_string(kMaxRedisDb) + ", got '" + std::string(path) + "'");
    }
    endpoint.db = static_cast<std::uint32_t>(*db);
  }
  return endpoint;
}

std::string format_redis_url(const RedisEndpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  return "redis://" + (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" +
         std::to_string(endpoint.port) + "/" + std::to_string(endpoint.db);
}

}  // namespace wheel::jobs
