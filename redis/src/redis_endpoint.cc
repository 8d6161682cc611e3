// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_endpoint.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

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

// `url` with the password of its credentials (before the last '@') replaced by "***".
std::string masked(std::string_view url) {
  const std::size_t scheme = url.find("://");
  const std::string_view rest = url.substr(scheme == std::string_view::npos ? 0 : scheme + 3);
  const std::size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const std::string_view userinfo = rest.substr(0, at);
  const std::size_t colon = userinfo.find(':');
  return std::string(url.substr(0, url.size() - rest.size())) +
         std::string(userinfo.substr(0, colon)) + (colon == std::string_view::npos ? "" : ":***") +
         "@" + std::string(rest.substr(at + 1));
}

// Takes "[[USER]:PASSWORD@]" off the front of `rest` into `endpoint`. The credentials end at the
// last '@' (a password may hold '@' or '/' unescaped). False with `error` set when malformed.
bool take_credentials(std::string_view& rest, const std::string& shown, RedisEndpoint& endpoint,
                      std::string* error) {
  const std::size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return true;
  const std::string_view userinfo = rest.substr(0, at);
  const std::size_t colon = userinfo.find(':');
  rest = rest.substr(at + 1);
  if (colon == std::string_view::npos) {
    fail(error, "a user needs a password (redis://USER:PASSWORD@HOST), got '" + shown + "'");
    return false;
  }
  const auto user = percent_decoded(userinfo.substr(0, colon));
  const auto password = percent_decoded(userinfo.substr(colon + 1));
  if (!user || !password) {
    fail(error,
         "a '%' in the user or password must start an escape such as %40, got '" + shown + "'");
    return false;
  }
  if (password->empty()) {
    fail(error, "empty password in '" + shown + "'");
    return false;
  }
  if (user->size() > kMaxRedisCredential || password->size() > kMaxRedisCredential) {
    fail(error, "the user and the password must be at most " + std::to_string(kMaxRedisCredential) +
                    " bytes each, in '" + shown + "'");
    return false;
  }
  endpoint.username = *user;
  endpoint.password = *password;
  return true;
}

// HOST[:PORT] (an IPv6 host in brackets); `port` when none is given.
std::optional<RedisAddress> parse_address(std::string_view authority, std::uint16_t port,
                                          const std::string& shown, std::string* error) {
  RedisAddress address;
  address.port = port;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) {
      fail(error, "an IPv6 host must be in brackets, e.g. redis://[::1]:6379, got '" + shown + "'");
      return std::nullopt;
    }
    address.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        fail(error, "expected ':PORT' after ']' in '" + shown + "'");
        return std::nullopt;
      }
      port_text = after.substr(1);
      if (port_text.empty()) {
        fail(error, "empty port in '" + shown + "'");
        return std::nullopt;
      }
    }
  } else {
    const std::size_t colon = authority.find(':');
    address.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) {
        fail(error, "empty port in '" + shown + "'");
        return std::nullopt;
      }
    }
  }
  if (address.host.empty()) {
    fail(error, "no host in '" + shown + "'");
    return std::nullopt;
  }
  if (!port_text.empty()) {
    const auto value = whole(port_text, 1, 65535);
    if (!value) {
      fail(error,
           "port must be a whole number from 1 to 65535, got '" + std::string(port_text) + "'");
      return std::nullopt;
    }
    address.port = static_cast<std::uint16_t>(*value);
  }
  return address;
}

// "/DB" after the hosts (`path` without its '/'); empty: 0.
bool parse_db(std::string_view path, RedisEndpoint& endpoint, std::string* error) {
  if (path.empty()) return true;
  const auto db = whole(path, 0, kMaxRedisDb);
  if (!db) {
    fail(error, "database must be a whole number from 0 to " + std::to_string(kMaxRedisDb) +
                    ", got '" + std::string(path) + "'");
    return false;
  }
  endpoint.db = static_cast<std::uint32_t>(*db);
  return true;
}

// HOST[:PORT][,HOST[:PORT]...] into `out`, at most `most` of them (`what` names them in the
// message).
bool parse_addresses(std::string_view hosts, std::uint16_t port, std::size_t most, const char* what,
                     const std::string& shown, std::vector<RedisAddress>& out, std::string* error) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(hosts.find(',', start), hosts.size());
    if (out.size() == most) {
      fail(error, "at most " + std::to_string(most) + " " + what + ", in '" + shown + "'");
      return false;
    }
    const auto address = parse_address(hosts.substr(start, comma - start), port, shown, error);
    if (!address) return false;
    out.push_back(*address);
    if (comma == hosts.size()) return true;
    start = comma + 1;
  }
}

std::string format_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

// The part of a multi-node URL after "SCHEME://[[USER]:PASSWORD@]", the credentials taken into
// `node` (whose host and port are left empty: the nodes come from the list), or nullopt with
// the error.
std::optional<std::string_view> take_scheme_and_credentials(std::string_view url,
                                                            std::string_view scheme,
                                                            const std::string& shown,
                                                            RedisEndpoint& node,
                                                            std::string* error) {
  if (url.substr(0, scheme.size()) != scheme) {
    if (error != nullptr)
      *error = "must start with " + std::string(scheme) + ", got '" + shown + "'";
    return std::nullopt;
  }
  std::string_view rest = url.substr(scheme.size());
  node.host.clear();
  node.port = 0;
  if (!take_credentials(rest, shown, node, error)) return std::nullopt;
  return rest;
}

// "SCHEME://[USER@]HOST:PORT,HOST:PORT...": the password is never shown.
std::string format_nodes(std::string_view scheme, const std::string& username,
                         const std::vector<RedisAddress>& nodes) {
  std::string out(scheme);
  if (!username.empty()) out += username + "@";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) out += ',';
    out += format_redis_address(nodes[i]);
  }
  return out;
}

}  // namespace

std::optional<RedisEndpoint> parse_redis_url(std::string_view url, std::string* error) {
  constexpr std::string_view kScheme = "redis://";
  const std::string shown = masked(url);
  if (url.substr(0, kScheme.size()) != kScheme) {
    return fail(error,
                "must start with redis:// (or redis-sentinel://, redis-cluster://; rediss:// and "
                "unix sockets are "
                "not supported), got '" +
                    shown + "'");
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisEndpoint endpoint;
  if (!take_credentials(rest, shown, endpoint, error)) return std::nullopt;
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return fail(error, "queries and fragments are not supported, got '" + shown + "'");
  }
  const std::string_view authority = rest.substr(0, rest.find('/'));
  const std::string_view path =
      rest.size() > authority.size() ? rest.substr(authority.size() + 1) : std::string_view{};
  const auto address = parse_address(authority, endpoint.port, shown, error);
  if (!address) return std::nullopt;
  endpoint.host = address->host;
  endpoint.port = address->port;
  if (!parse_db(path, endpoint, error)) return std::nullopt;
  return endpoint;
}

std::optional<RedisSentinelEndpoint> parse_redis_sentinel_url(std::string_view url,
                                                              std::string* error) {
  constexpr std::string_view kScheme = "redis-sentinel://";
  const std::string shown = masked(url);
  auto refuse = [&](std::string message) -> std::optional<RedisSentinelEndpoint> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  RedisSentinelEndpoint sentinel;
  const auto after = take_scheme_and_credentials(url, kScheme, shown, sentinel.primary, error);
  if (!after) return std::nullopt;
  std::string_view rest = *after;
  const std::size_t hash = rest.find('#');
  if (hash == std::string_view::npos || hash + 1 == rest.size()) {
    return refuse(
        "the primary's name is missing: add #MASTER (the name in the sentinels' "
        "`sentinel monitor`), got '" +
        shown + "'");
  }
  const std::string_view master = rest.substr(hash + 1);
  rest = rest.substr(0, hash);
  if (master.size() > kMaxMasterName) {
    return refuse("the primary's name must be at most " + std::to_string(kMaxMasterName) +
                  " bytes, in '" + shown + "'");
  }
  for (char c : master) {
    if (c <= ' ' || c > '~') {
      return refuse("the primary's name must be printable ASCII without spaces, in '" + shown +
                    "'");
    }
  }
  sentinel.master = std::string(master);
  if (rest.find('?') != std::string_view::npos) {
    return refuse("queries are not supported, got '" + shown + "'");
  }
  const std::string_view hosts = rest.substr(0, rest.find('/'));
  const std::string_view path =
      rest.size() > hosts.size() ? rest.substr(hosts.size() + 1) : std::string_view{};
  if (!parse_addresses(hosts, kDefaultSentinelPort, kMaxSentinels, "sentinels", shown,
                       sentinel.sentinels, error)) {
    return std::nullopt;
  }
  if (!parse_db(path, sentinel.primary, error)) return std::nullopt;
  return sentinel;
}

std::optional<RedisClusterEndpoint> parse_redis_cluster_url(std::string_view url,
                                                            std::string* error) {
  constexpr std::string_view kScheme = "redis-cluster://";
  const std::string shown = masked(url);
  auto refuse = [&](std::string message) -> std::optional<RedisClusterEndpoint> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  RedisClusterEndpoint cluster;
  const auto after = take_scheme_and_credentials(url, kScheme, shown, cluster.node, error);
  if (!after) return std::nullopt;
  const std::string_view rest = *after;
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return refuse("queries and fragments are not supported, got '" + shown + "'");
  }
  if (rest.find('/') != std::string_view::npos) {
    return refuse("a Redis Cluster has database 0 only: no /DB after the nodes, got '" + shown +
                  "'");
  }
  if (!parse_addresses(rest, 6379, kMaxClusterSeeds, "seed nodes", shown, cluster.seeds, error)) {
    return std::nullopt;
  }
  return cluster;
}

std::string format_redis_cluster_url(const RedisClusterEndpoint& endpoint) {
  return format_nodes("redis-cluster://", endpoint.node.username, endpoint.seeds);
}

std::string format_redis_url(const RedisEndpoint& endpoint) {
  const std::string user = endpoint.username.empty() ? "" : endpoint.username + "@";
  return "redis://" + user + format_host(endpoint.host) + ":" + std::to_string(endpoint.port) +
         "/" + std::to_string(endpoint.db);
}

std::string format_redis_address(const RedisAddress& address) {
  return format_host(address.host) + ":" + std::to_string(address.port);
}

std::string format_redis_sentinel_url(const RedisSentinelEndpoint& endpoint) {
  return format_nodes("redis-sentinel://", endpoint.primary.username, endpoint.sentinels) + "/" +
         std::to_string(endpoint.primary.db) + "#" + endpoint.master;
}

}  // namespace wheel::jobs
