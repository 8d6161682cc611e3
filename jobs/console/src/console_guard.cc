// SPDX-License-Identifier: Apache-2.0
#include "console_guard.h"

#include <cctype>
#include <cmath>

namespace wheel::jobs::console {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool host_allowed(const server::HttpRequest& request, const std::vector<std::string>& allowed) {
  if (allowed.empty()) return true;
  const std::optional<std::string_view> host = request.header("host");
  if (!host) return false;
  const std::string h = lower(*host);
  for (const std::string& a : allowed) {
    if (lower(a) == h) return true;
  }
  return false;
}

bool token_matches(const server::HttpRequest& request, std::string_view token) {
  const std::optional<std::string_view> given = request.header("x-wheel-token");
  if (!given || given->size() != token.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>((*given)[i] ^ token[i]);
  }
  return diff == 0;
}

std::string refuse_change(const server::HttpRequest& request, std::string_view token) {
  if (!token_matches(request, token)) return "a change needs the console's token (X-Wheel-Token)";
  if (const std::optional<std::string_view> origin = request.header("origin")) {
    const std::optional<std::string_view> host = request.header("host");
    if (!host || lower(*origin) != "http://" + lower(*host)) {
      return "a change must come from the console's own origin";
    }
  }
  const std::optional<std::string_view> type = request.header("content-type");
  if (!type || lower(type->substr(0, type->find(';'))) != "application/json") {
    return "Content-Type: a change's body must be application/json";
  }
  return {};
}

std::optional<double> number_arg(const nlohmann::json& args, const char* key, double fallback,
                                 double min, double max, std::string* error) {
  const auto it = args.find(key);
  if (it == args.end()) return fallback;
  if (it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= min &&
      it->get<double>() <= max) {
    return it->get<double>();
  }
  *error = std::string(key) + " must be a number from " + nlohmann::json(min).dump() + " to " +
           nlohmann::json(max).dump();
  return std::nullopt;
}

Millis to_millis(double seconds) {
  return Millis(static_cast<std::int64_t>(std::ceil(seconds * 1000.0 - 1e-6)));
}

bool put_args(const nlohmann::json& args, std::size_t max_body, ConsolePut* put,
              std::string* error) {
  const auto body = args.find("body");
  if (body == args.end() || !body->is_string()) {
    *error = "body: the job's body, a string, is required";
    return false;
  }
  put->body = body->get<std::string>();
  if (put->body.size() > max_body) {
    *error = "body: at most " + std::to_string(max_body) + " bytes (--max-job-size)";
    return false;
  }
  const auto priority = number_arg(args, "priority", 1024, 0, 4294967295.0, error);
  const auto delay = number_arg(args, "delay", 0, 0, kMaxSeconds, error);
  const auto ttr = number_arg(args, "ttr", 60, 0, kMaxSeconds, error);
  if (!priority || !delay || !ttr) return false;
  if (*priority != std::floor(*priority)) {
    *error = "priority must be a whole number";
    return false;
  }
  put->priority = static_cast<std::uint32_t>(*priority);
  put->delay = to_millis(*delay);
  put->ttr = to_millis(*ttr);
  return true;
}

}  // namespace wheel::jobs::console
