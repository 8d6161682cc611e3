// SPDX-License-Identifier: Apache-2.0
#include "console_assets.h"

#include "console_web.h"  // generated: jobs/console/web/* as string constants

namespace wheel::jobs::console {
namespace {

constexpr std::string_view kSecurityHeaders =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: no-referrer\r\n"
    "X-Frame-Options: DENY\r\n";

void replace(std::string& text, std::string_view from, std::string_view to) {
  const std::size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
}

// Only what fits a meta tag's attribute unescaped (the token is made of these).
std::string attribute_safe(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
        c == '_' || c == '.') {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::optional<server::HttpResponse> asset_response(std::string_view name) {
  for (const web::EmbeddedFile& f : web::kFiles) {
    if (f.name != name || name == "index.html") continue;
    server::HttpResponse r;
    if (name.ends_with(".js")) {
      r.content_type = "text/javascript; charset=utf-8";
    } else if (name.ends_with(".css")) {
      r.content_type = "text/css; charset=utf-8";
    } else {
      return std::nullopt;  // the license text and the lockfile are not served
    }
    r.body = std::string(f.text);
    r.extra_headers = std::string(kSecurityHeaders) + "Cache-Control: max-age=86400\r\n";
    return r;
  }
  return std::nullopt;
}

server::HttpResponse page_response(const std::string& token, bool token_required, bool read_only,
                                   std::string_view backend) {
  server::HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::string(web::kIndexHtml);
  replace(r.body, "{{TOKEN}}", attribute_safe(token));
  replace(r.body, "{{TOKEN_REQUIRED}}", token_required ? "1" : "0");
  replace(r.body, "{{READ_ONLY}}", read_only ? "1" : "0");
  replace(r.body, "{{BACKEND}}", attribute_safe(backend));
  r.extra_headers = std::string(kSecurityHeaders) + "Cache-Control: no-store\r\n";
  return r;
}

}  // namespace wheel::jobs::console
