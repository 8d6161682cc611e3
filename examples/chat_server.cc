// SPDX-License-Identifier: Apache-2.0
// chat-server: a chat room on wheel::net's public headers (the command line uses the apps'
// shared option style). One line per message; see the table in docs/net.md. Delayed messages sit
// on the server's hashed wheel; idle clients are dropped and quiet ones pinged by the detector.
// Every resource a client can make the server hold is bounded: connections, line length, output
// queue (TcpServerOptions), and the delayed messages per client and in all (count and bytes).
//
//   chat-server --help
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cli_options.h"
#include "cli_style.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"
#include "wheel/version.h"

namespace {

using namespace std::chrono_literals;
using wheel::net::Connection;

// Bounds of the delayed messages; a :delay past one of them gets "ERR delayed limit".
struct DelayLimits {
  std::size_t count_per_client = 100;
  std::size_t bytes_per_client = std::size_t{1} << 20;  // 1 MiB of message text
  std::size_t bytes_total = std::size_t{256} << 20;     // 256 MiB over all clients
};

struct Member {  // a connection's context
  std::string name;
  std::vector<wheel::LoopWheel::Handle> delayed;
  std::size_t delayed_bytes = 0;  // sum of the sizes of its delayed messages
};

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (const char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') return false;
  }
  return true;
}

// "<text> <seconds>": the seconds are the last word, 1 ..= 86400.
bool parse_delay(std::string_view args, std::string_view* text, long* seconds) {
  const std::size_t space = args.rfind(' ');
  if (space == std::string_view::npos || space == 0) return false;
  const std::string_view number = args.substr(space + 1);
  if (number.empty() || number.size() > 5) return false;
  long value = 0;
  for (const char ch : number) {
    if (ch < '0' || ch > '9') return false;
    value = value * 10 + (ch - '0');
  }
  if (value < 1 || value > 86'400) return false;
  *text = args.substr(0, space);
  *seconds = value;
  return true;
}

// The message as stored and sent: exactly its size in memory (operator+ chains would grow the
// string past its capacity, doubling what a 4 KB message holds).
std::string delayed_message(std::string_view name, std::string_view text) {
  constexpr std::string_view kTag = " (delayed): ";
  std::string message;
  message.reserve(name.size() + kTag.size() + text.size() + 1);
  message.append(name).append(kTag).append(text).push_back('\n');
  return message;
}

class ChatHandler final : public wheel::net::ConnectionHandler {
 public:
  explicit ChatHandler(DelayLimits limits) : limits_(limits) {}
  void attach(wheel::net::TcpServer& server) { server_ = &server; }

  void on_open(Connection& c) override {
    c.set_context(new Member);
    members_.push_back(c.id());
  }

  void on_line(Connection& c, std::string_view line) override {
    Member& me = *static_cast<Member*>(c.context());
    if (line == "PING") return c.send("PONG\n");
    if (line == "PONG" || line.empty()) return;  // heartbeats and blank lines: activity only
    if (line == ":quit") return c.close_with("BYE\n");
    if (line.starts_with(":name ")) return rename(c, me, line.substr(6));
    if (me.name.empty()) return c.send("ERR name first\n");
    if (line.starts_with(":delay ")) return delay(c, me, line.substr(7));
    broadcast(c.id(), me.name + ": " + std::string(line) + "\n");
  }

  void on_idle(Connection& c, wheel::net::IdleEvent event) override {
    if (event.kind == wheel::net::IdleKind::kWriter) return c.send("PING\n");
    c.close_with("BYE idle\n");
  }

  void on_close(Connection& c, wheel::net::CloseReason) override {
    auto* me = static_cast<Member*>(c.context());
    for (const wheel::LoopWheel::Handle h : me->delayed) server_->timer().cancel(h);  // left
    delayed_bytes_ -= me->delayed_bytes;
    if (!me->name.empty()) names_.erase(me->name);
    std::erase(members_, c.id());
    delete me;
    c.set_context(nullptr);
  }

  std::string_view goodbye() override { return "BYE shutdown\n"; }

 private:
  void rename(Connection& c, Member& me, std::string_view name) {
    if (!valid_name(name)) return c.send("ERR bad name\n");
    const auto it = names_.find(std::string(name));
    if (it != names_.end() && it->second != c.id()) return c.send("ERR name taken\n");
    if (!me.name.empty()) names_.erase(me.name);
    me.name = name;
    names_[me.name] = c.id();
    c.send("OK\n");
  }

  void delay(Connection& c, Member& me, std::string_view args) {
    std::string_view text;
    long seconds = 0;
    if (!parse_delay(args, &text, &seconds)) return c.send("ERR bad delay\n");
    std::string message = delayed_message(me.name, text);
    // Sizes of objects in memory: neither sum can overflow.
    if (me.delayed.size() >= limits_.count_per_client ||
        me.delayed_bytes + message.size() > limits_.bytes_per_client ||
        delayed_bytes_ + message.size() > limits_.bytes_total) {
      return c.send("ERR delayed limit\n");
    }
    me.delayed_bytes += message.size();
    delayed_bytes_ += message.size();
    // The task names its sender by id; it runs on the loop thread.
    me.delayed.push_back(server_->timer().new_timeout(
        [this, id = c.id(), message = std::move(message)](wheel::LoopWheel::Handle self) {
          deliver(id, self, message);
        },
        std::chrono::seconds(seconds)));
    c.send("OK\n");
  }

  void deliver(std::uint64_t sender, wheel::LoopWheel::Handle fired, const std::string& message) {
    Connection* c = server_->find(sender);
    if (c == nullptr) return;  // left meanwhile: its timeouts were cancelled
    auto& me = *static_cast<Member*>(c->context());
    std::erase_if(me.delayed, [&](const wheel::LoopWheel::Handle& h) { return h == fired; });
    me.delayed_bytes -= message.size();
    delayed_bytes_ -= message.size();
    broadcast(sender, message);
  }

  // To every named client but `from`.
  void broadcast(std::uint64_t from, const std::string& message) {
    for (const std::uint64_t id : members_) {
      Connection* c = server_->find(id);
      if (id == from || c == nullptr) continue;
      if (!static_cast<Member*>(c->context())->name.empty()) c->send(message);
    }
  }

  const DelayLimits limits_;
  std::size_t delayed_bytes_ = 0;  // of all clients' delayed messages
  wheel::net::TcpServer* server_ = nullptr;
  std::vector<std::uint64_t> members_;  // open connections, oldest first
  std::unordered_map<std::string, std::uint64_t> names_;
};

constexpr const char* kDescription = R"(chat-server: a chat room over TCP, one line per message.
Commands (each a line):
  :name NAME         take a name (1-32 letters, digits, _ or -); OK, ERR bad name, ERR name taken
  TEXT               sent to every other named client as "NAME: TEXT"
  :delay TEXT SECS   sent to the others after SECS (1 to 86400) seconds, unless the sender left
                     first; OK, ERR bad delay, ERR delayed limit (see the --max-* options)
  :quit              BYE, then the server closes the connection
  PING               PONG; PING and PONG are heartbeats, never broadcast
The server sends PING after --writer-idle without output and closes with "BYE idle" after
--reader-idle without input; "BYE shutdown" on SIGINT or SIGTERM.)";

}  // namespace

int main(int argc, char** argv) {
  using std::chrono::milliseconds;
  wheel::net::TcpServerOptions options;
  milliseconds reader = 30s, writer = 10s, tick = 100ms;
  DelayLimits limits;
  CLI::App app{kDescription};
  wheel::cli::apply_style(app, "chat-server", wheel::kVersion);
  app.add_option("--host", options.host, "IPv4 or IPv6 address or host name to listen on")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  wheel::cli::add_count(app, "--port", &options.port, "TCP port; 0 picks a free one", 0, 65535);
  const milliseconds max_idle = wheel::net::kMaxIdleTime;
  wheel::cli::add_duration(app, "--reader-idle", &reader,
                           "close after this long without input; 0 never", 0ms, max_idle);
  wheel::cli::add_duration(app, "--writer-idle", &writer,
                           "send PING after this long without output; 0 never", 0ms, max_idle);
  wheel::cli::add_duration(app, "--tick", &tick, "timer wheel resolution", 1ms, 1h);
  wheel::cli::add_count(app, "--max-connections", &options.max_connections, "open connections", 1,
                        1'000'000);
  wheel::cli::add_count(app, "--max-line", &options.max_line, "longest accepted line in bytes", 1,
                        1 << 20);
  wheel::cli::add_count(app, "--max-connection-delayed", &limits.count_per_client,
                        "pending :delay messages of one client", 1, 1'000'000);
  wheel::cli::add_count(app, "--max-connection-delayed-bytes", &limits.bytes_per_client,
                        "bytes of one client's pending :delay messages", 1, std::uint64_t{1} << 40);
  wheel::cli::add_count(app, "--max-delayed-bytes", &limits.bytes_total,
                        "bytes of all pending :delay messages", 1, std::uint64_t{1} << 40);
  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "chat-server")) {
    return *exit_status;  // --help, --version, or a usage error already printed
  }
  options.idle = {reader, writer, 0ms};
  options.timer.tick_duration = tick;
  try {
    ChatHandler handler(limits);
    wheel::net::TcpServer server(options, handler);
    handler.attach(server);
    const std::uint16_t port = server.listen();
    server.handle_signals();
    std::printf("listening on %s\n", wheel::net::format_host_port(options.host, port).c_str());
    std::fflush(stdout);
    server.run();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chat-server: %s\n", e.what());
    return 1;
  }
}
