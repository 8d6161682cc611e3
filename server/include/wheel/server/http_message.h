// SPDX-License-Identifier: Apache-2.0
// HttpRequest and HttpResponse: one HTTP/1.1 request as the MetricsHttpServer read it (request
// line, header block, and a body of at most the server's max_body bytes) and the answer a route
// gives. Only what a small loopback console needs: no chunked bodies (a POST must say its
// Content-Length), no keep-alive (every answer closes the connection).
//
// Threads: plain values; the parse and render functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wheel::server {

struct HttpRequest {
  std::string method;    // "GET", "POST", ...
  std::string path;      // percent-decoded, without the query: "/tubes/my tube"
  std::string raw_path;  // as sent, without the query: "/tubes/my%20tube" (split, then decode)
  std::string query;     // as sent, after '?': "q=a%20b&limit=5"
  std::string head;      // the header lines after the request line, as sent
  std::string body;

  // The value of header `name` (case-insensitive), trimmed; nullopt when absent.
  std::optional<std::string_view> header(std::string_view name) const;
  // The percent-decoded value of query parameter `name` ('+' is a space); nullopt when absent.
  std::optional<std::string> param(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string extra_headers;  // whole lines, each ending in "\r\n"
};

// The reason phrase of `status` ("Not Found"); "Unknown" for one this server never sends.
std::string_view http_reason(int status);
// The bytes of `response` with Content-Length and "Connection: close"; without the body for HEAD
// (`with_body` false).
std::string render_http(const HttpResponse& response, bool with_body);
// Decodes %XX escapes (and '+' as a space when `plus_is_space`); nullopt for a bad escape.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);

// What parse_request_head() found in a complete head (through the blank line).
struct HeadParse {
  enum class Status : std::uint8_t { kOk, kBad };
  Status status = Status::kBad;
  HttpRequest request;           // kOk: method, path, query, head (body empty)
  std::uint64_t body_bytes = 0;  // Content-Length (0 when absent)
  std::size_t head_bytes = 0;    // bytes of the head, blank line included
};
// Parses a head: "METHOD SP TARGET SP HTTP/1.x", header lines, a blank line (CRLF or LF). kBad
// for a malformed request line, a target that is not an absolute path, a bad percent escape, a
// malformed or repeated Content-Length, or Transfer-Encoding (bodies must state their length).
HeadParse parse_request_head(std::string_view bytes);

}  // namespace wheel::server
