// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/http_message.h"

#include <cctype>
#include <charconv>

namespace wheel::server {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Calls `each(name, value)` for every header line of `head` until it returns false.
template <class Each>
void for_each_header(std::string_view head, Each each) {
  while (!head.empty()) {
    const std::size_t end = head.find('\n');
    std::string_view line = head.substr(0, end);
    head = end == std::string_view::npos ? std::string_view() : head.substr(end + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (!each(trim(line.substr(0, colon)), trim(line.substr(colon + 1)))) return;
  }
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  std::optional<std::string_view> found;
  for_each_header(head, [&](std::string_view n, std::string_view v) {
    if (!iequals(n, name)) return true;
    found = v;
    return false;
  });
  return found;
}

std::optional<std::string> HttpRequest::param(std::string_view name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const auto key = percent_decode(pair.substr(0, eq), true);
    if (!key || *key != name) continue;
    if (eq == std::string_view::npos) return std::string();
    return percent_decode(pair.substr(eq + 1), true);
  }
  return std::nullopt;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 303:
      return "See Other";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 421:
      return "Misdirected Request";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

std::string render_http(const HttpResponse& r, bool with_body) {
  std::string out;
  out.reserve(200 + r.extra_headers.size() + (with_body ? r.body.size() : 0));
  out.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ");
  out.append(http_reason(r.status)).append("\r\n");
  out.append("Content-Type: ").append(r.content_type).append("\r\n");
  out.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
  out.append(r.extra_headers);
  out.append("Connection: close\r\n\r\n");
  if (with_body) out.append(r.body);
  return out;
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

HeadParse parse_request_head(std::string_view bytes) {
  HeadParse out;
  std::size_t blank = bytes.find("\r\n\r\n");
  std::size_t blank_len = 4;
  if (const std::size_t lf = bytes.find("\n\n");
      lf != std::string_view::npos && (blank == std::string_view::npos || lf < blank)) {
    blank = lf;
    blank_len = 2;
  }
  if (blank == std::string_view::npos) return out;
  out.head_bytes = blank + blank_len;
  const std::string_view head = bytes.substr(0, blank);
  const std::size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) {
    return out;
  }
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target.empty() || target.front() != '/') return out;
  const std::size_t q = target.find('?');
  auto path = percent_decode(target.substr(0, q), false);
  if (!path) return out;
  HttpRequest& r = out.request;
  r.method = std::string(line.substr(0, sp1));
  r.path = std::move(*path);
  r.raw_path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
  if (eol != std::string_view::npos) r.head = std::string(head.substr(eol + 1));
  bool bad = false;
  int lengths = 0;
  for_each_header(r.head, [&](std::string_view name, std::string_view value) {
    if (iequals(name, "transfer-encoding")) {
      bad = true;
    } else if (iequals(name, "content-length")) {
      ++lengths;
      const auto [end, ec] =
          std::from_chars(value.data(), value.data() + value.size(), out.body_bytes);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty()) bad = true;
    }
    return !bad;
  });
  if (bad || lengths > 1) return out;
  out.status = HeadParse::Status::kOk;
  return out;
}

}  // namespace wheel::server
