// SPDX-License-Identifier: Apache-2.0
// Internal: the console's checks on a request (console_service.h says why each): the Host, the
// token, what a change must carry, and the arguments of a change's JSON body.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/jobs/console/console_backend.h"
#include "wheel/server/http_message.h"

namespace wheel::jobs::console {

// beanstalkd's bound on a delay, TTR or pause: 2^32 - 1 seconds.
inline constexpr double kMaxSeconds = 4294967295.0;

// True when `allowed` is empty or the request's Host is one of them (case-insensitive).
bool host_allowed(const server::HttpRequest& request, const std::vector<std::string>& allowed);
// True when X-Wheel-Token equals `token` (compared in constant time).
bool token_matches(const server::HttpRequest& request, std::string_view token);
// Why a change may not run ("" when it may): no or a wrong token, an Origin other than the
// Host's, a body that is not declared JSON (the text then begins with "Content-Type").
std::string refuse_change(const server::HttpRequest& request, std::string_view token);
// Number `key` of `args` in [min, max] (absent: `fallback`); nullopt with `*error` otherwise.
std::optional<double> number_arg(const nlohmann::json& args, const char* key, double fallback,
                                 double min, double max, std::string* error);
// Seconds (decimals allowed) as whole milliseconds, rounded up: a delay is never shortened.
Millis to_millis(double seconds);
// A put's arguments: body (a string of at most `max_body` bytes, required), priority (0 to
// 2^32-1, default 1024), delay (seconds, default 0), ttr (seconds, default 60).
bool put_args(const nlohmann::json& args, std::size_t max_body, ConsolePut* put,
              std::string* error);

}  // namespace wheel::jobs::console
