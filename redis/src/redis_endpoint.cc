// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_endpoint.h"

#include <algorithm>
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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` with each %XX replaced by its byte; nullopt for a '%' not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex_digit(text[i + 1]);
    const int lo = hex_digit(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error) {
  constexpr std::string_view kScheme = "redis://";
  std::string_view rest = url.substr(std::min(url.size(), kScheme.size()));
  // The credentials end at the last '@' (a password may hold '@' or '/' unescaped); what the
  // messages quote has the password masked.
  const std::size_t at = rest.rfind('@');
  const std::string_view userinfo = at == std::string_view::npos ? "" : rest.substr(0, at);
  const std::size_t colon_in_userinfo = userinfo.find(':');
  const std::string shown = at == std::string_view::npos
                                ? std::string(url)
                                : std::string(url.substr(0, url.size() - rest.size())) +
                                      std::string(userinfo.substr(0, colon_in_userinfo)) +
                                      (colon_in_userinfo == std::string_view::npos ? "" : ":***") +
                                      "@" + std::string(rest.substr(at + 1));
  if (url.substr(0, kScheme.size()) != kScheme) {
    return fail(error,
                "must start with redis:// (rediss:// and unix sockets are not supported), "
                "got '" +
                    shown + "'");
  }
  RedisEndpoint endpoint;
  if (at != std::string_view::npos) {
    rest = rest.substr(at + 1);
    if (colon_in_userinfo == std::string_view::npos) {
      return fail(error,
                  "a user needs a password (redis://USER:PASSWORD@HOST), got '" + shown + "'");
    }
    const auto user = percent_decoded(userinfo.substr(0, colon_in_userinfo));
    const auto password = percent_decoded(userinfo.substr(colon_in_userinfo + 1));
    if (!user || !password) {
      return fail(error, "a '%' in the user or password must start an escape such as %40, got '" +
                             shown + "'");
    }
    if (password->empty()) return fail(error, "empty password in '" + shown + "'");
    if (user->size() > kMaxRedisCredential || password->size() > kMaxRedisCredential) {
      return fail(error, "the user and the password must be at most " +
                             std::to_string(kMaxRedisCredential) + " bytes each, in '" + shown +
                             "'");
    }
    endpoint.username = *user;
    endpoint.password = *password;
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return fail(error, "queries and fragments are not supported, got '" + shown + "'");
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path =
      rest.size() > authority.size() ? rest.substr(authority.size() + 1) : std::string_view{};
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) {
      return fail(error,
                  "an IPv6 host must be in brackets, e.g. redis://[::1]:6379, got '" + shown + "'");
    }
    endpoint.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail(error, "expected ':PORT' after ']' in '" + shown + "'");
      port_text = after.substr(1);
      if (port_text.empty()) return fail(error, "empty port in '" + shown + "'");
    }
  } else {
    const std::size_t colon = authority.find(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return fail(error, "empty port in '" + shown + "'");
    }
  }
  if (endpoint.host.empty()) return fail(error, "no host in '" + shown + "'");
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
  const std::string user = endpoint.username.empty() ? "" : endpoint.username + "@";
  return "redis://" + user + (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" +
         std::to_string(endpoint.port) + "/" + std::to_string(endpoint.db);
}

}  // namespace wheel::jobs
