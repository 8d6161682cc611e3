// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/server_metrics_check.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace wheel::load {
namespace {

using Clock = std::chrono::steady_clock;

double delta(const MetricSamples& before, const MetricSamples& after, const std::string& key) {
  const auto b = before.find(key);
  const auto a = after.find(key);
  if (a == after.end()) throw std::runtime_error("the server does not report " + key);
  return a->second - (b == before.end() ? 0.0 : b->second);
}

// Closes a descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MetricsUrl parse_metrics_url(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) != scheme) {
    throw std::invalid_argument("must start with http:// (no TLS), got '" + std::string(url) + "'");
  }
  std::string_view rest = url.substr(scheme.size());
  MetricsUrl out;
  const std::size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    out.path = std::string(rest.substr(slash));
    rest = rest.substr(0, slash);
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("unclosed '[' in the host");
    out.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw std::invalid_argument("expected ':' after ']'");
      port_text = rest.substr(1);
    }
  } else {
    const std::size_t colon = rest.rfind(':');
    out.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port_text = rest.substr(colon + 1);
  }
  if (out.host.empty()) throw std::invalid_argument("no host in '" + std::string(url) + "'");
  if (!port_text.empty() || rest.ends_with(':')) {
    unsigned port = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 ||
        port > 65535) {
      throw std::invalid_argument("the port must be a whole number from 1 to 65535, got '" +
                                  std::string(port_text) + "'");
    }
    out.port = static_cast<std::uint16_t>(port);
  }
  return out;
}

MetricSamples parse_samples(std::string_view text) {
  MetricSamples out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    // The value follows the last space outside the label set.
    const std::size_t labels_end = line.rfind('}');
    const std::size_t sp = line.find(' ', labels_end == std::string_view::npos ? 0 : labels_end);
    if (sp == std::string_view::npos) continue;
    const std::string key(line.substr(0, sp));
    std::string_view value = line.substr(sp + 1);
    value = value.substr(0, value.find(' '));  // drop a timestamp
    double v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc()) continue;  // +Inf, NaN: not counts
    out[key] = v;
  }
  return out;
}

MetricSamples scrape(const MetricsUrl& url, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error("cannot resolve '" + url.host + "': " + ::gai_strerror(rc));
  }
  Fd s;
  int error = 0;
  for (addrinfo* a = found; a != nullptr && s.fd < 0; a = a->ai_next) {
    s.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (s.fd >= 0 && ::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      ::close(s.fd);
      s.fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (s.fd < 0) throw std::runtime_error("cannot connect: " + std::string(std::strerror(error)));
  const std::string request = "GET " + url.path + " HTTP/1.1\r\nHost: " + url.host +
                              "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
  if (::send(s.fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    throw std::runtime_error("cannot send the request: " + std::string(std::strerror(errno)));
  }
  std::string reply;
  constexpr std::size_t kMaxReply = std::size_t{16} << 20;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw std::runtime_error("no complete answer in time");
    pollfd p{s.fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
    char buf[16384];
    const ssize_t n = ::recv(s.fd, buf, sizeof(buf), 0);
    if (n < 0) throw std::runtime_error("read: " + std::string(std::strerror(errno)));
    if (n == 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
    if (reply.size() > kMaxReply) throw std::runtime_error("answer over 16 MiB");
  }
  const std::string status = reply.substr(0, reply.find("\r\n"));
  if (status.rfind("HTTP/1.", 0) != 0 || status.find(" 200 ") == std::string::npos) {
    throw std::runtime_error("answer: '" + status + "'");
  }
  const std::size_t body = reply.find("\r\n\r\n");
  if (body == std::string::npos) throw std::runtime_error("answer without a body");
  return parse_samples(std::string_view(reply).substr(body + 4));
}

nlohmann::json compare_with_server(const LoadResult& r, const MetricSamples& before,
                                   const MetricSamples& after, bool exclusive) {
  nlohmann::json rows = nlohmann::json::array();
  bool all = true;
  // rule "equal": server == load; "at least": server >= load; "between": load <= server <= hi.
  const auto row = [&](const std::string& what, double load, double server, const char* rule,
                       double hi = 0) {
    bool agree = false;
    if (std::string_view(rule) == "equal") agree = server == load;
    if (std::string_view(rule) == "at least") agree = server >= load;
    if (std::string_view(rule) == "between") agree = server >= load && server <= hi;
    all = all && agree;
    nlohmann::json j = {
        {"what", what}, {"wheel_load", load}, {"server", server}, {"rule", rule}, {"agree", agree}};
    if (std::string_view(rule) == "between") j["at_most"] = hi;
    rows.push_back(j);
  };
  const auto d = [&](const std::string& key) { return delta(before, after, key); };
  const char* exact = exclusive ? "equal" : "at least";

  const double accepted = d("wheel_connections_accepted_total");
  row("connections accepted", static_cast<double>(r.connections_established + r.churn_established),
      accepted, exact);
  const double idle_closes = d("wheel_connections_closed_total{reason=\"reader_idle\"}") +
                             d("wheel_connections_closed_total{reason=\"all_idle\"}");
  row("idle closes (BYE idle received)", static_cast<double>(r.bye_idle_received), idle_closes,
      exact);
  row("idle closed on time (of them)", static_cast<double>(r.idle_closed_on_time),
      d("wheel_connections_closed_total{reason=\"reader_idle\"}"), "at least");
  const double pongs = static_cast<double>(r.pongs_received + r.slow_pongs_received);
  const double pings = static_cast<double>(r.pings_sent + r.slow_pings_sent + r.churn_started);
  if (exclusive) {
    row("PINGs answered", pongs, d("wheel_pings_total"), "between", pings);
  } else {
    row("PINGs answered", pongs, d("wheel_pings_total"), "at least");
  }
  const double delayed = static_cast<double>(r.delayed_on_time + r.delayed_early + r.delayed_late);
  if (exclusive) {
    row("DELAYED delivered", delayed, d("wheel_delayed_sent_total"), "between",
        static_cast<double>(r.delays_acknowledged));
  } else {
    row("DELAYED delivered", delayed, d("wheel_delayed_sent_total"), "at least");
  }
  if (exclusive) {
    // Every connection of the run is closed on both sides: the server's open count is back.
    row("connections left open", 0, d("wheel_connections_open"), "equal");
  }
  // The server's own books: everything accepted during the run is closed or still open.
  double closed = 0;
  for (const char* reason :
       {"reader_idle", "writer_idle", "all_idle", "quit", "peer", "slow_consumer", "line_too_long",
        "error", "shutdown", "worker_lost"}) {
    closed += d(std::string("wheel_connections_closed_total{reason=\"") + reason + "\"}");
  }
  row("server: accepted = closed + open change", accepted, closed + d("wheel_connections_open"),
      "equal");
  return {{"exclusive", exclusive}, {"agree", all}, {"rows", rows}};
}

std::string format_comparison(const nlohmann::json& c) {
  std::string out = std::string("  server metrics (") +
                    (c["exclusive"].get<bool>() ? "exclusive: wheel-load was the only client"
                                                : "shared: server counts include other clients") +
                    "): " + (c["agree"].get<bool>() ? "agree" : "DISAGREE") + "\n";
  for (const auto& row : c["rows"]) {
    char line[256];
    std::snprintf(line, sizeof(line), "    %-42s wheel-load %12.0f  server %12.0f  (%s%s)%s\n",
                  row["what"].get<std::string>().c_str(), row["wheel_load"].get<double>(),
                  row["server"].get<double>(), row["rule"].get<std::string>().c_str(),
                  row.contains("at_most")
                      ? (" " + std::to_string(row["at_most"].get<std::uint64_t>())).c_str()
                      : "",
                  row["agree"].get<bool>() ? "" : "  <- disagrees");
    out += line;
  }
  return out;
}

}  // namespace wheel::load
