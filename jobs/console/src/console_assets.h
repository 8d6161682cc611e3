// SPDX-License-Identifier: Apache-2.0
// Internal: the console's page and assets, embedded in the binary at build time
// (cmake/WheelEmbedFiles.cmake from jobs/console/web/): nothing is fetched from elsewhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "wheel/server/http_message.h"

namespace wheel::jobs::console {

// The asset `name` (console.js, console.css, uPlot.iife.min.js, uPlot.min.css) with its type and
// a day's caching; nullopt for any other name.
std::optional<server::HttpResponse> asset_response(std::string_view name);
// The page shell every view shares, carrying `token` (empty: the page asks for it when
// `token_required`), whether the console is read-only and the backend's kind; with the
// Content-Security-Policy that lets only this origin's scripts and styles run.
server::HttpResponse page_response(const std::string& token, bool token_required, bool read_only,
                                   std::string_view backend);

}  // namespace wheel::jobs::console
