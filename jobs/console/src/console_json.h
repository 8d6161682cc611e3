// SPDX-License-Identifier: Apache-2.0
// Internal: the console's views as JSON (the /api answers of docs/console.md), and the JSON
// answer of an error.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "wheel/jobs/console/console_backend.h"
#include "wheel/server/http_message.h"

namespace wheel::jobs::console {

nlohmann::json tube_json(const ConsoleTube& tube);
nlohmann::json job_json(const ConsoleJob& job);
nlohmann::json histogram_json(const ConsoleHistogram& histogram);
nlohmann::json point_json(const LatenessPoint& point);
// The HTTP status of a backend's answer.
int http_status(ConsoleStatus status);
// `body` as a 200 (or `status`) JSON answer; strings that are not UTF-8 get U+FFFD.
server::HttpResponse json_response(const nlohmann::json& body, int status = 200);
server::HttpResponse error_response(int status, std::string_view message);

}  // namespace wheel::jobs::console
