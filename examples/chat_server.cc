// SPDX-License-Identifier: Apache-2.0
// chat-server: a chat room on wheel::net's public headers (the command-line durations use the
// apps' shared parser). One line per message; see the table in docs/net.md. Delayed messages sit on
// the server's hashed wheel; idle clients are dropped and quiet ones pinged by the detector.
//
//   chat-server [--host 127.0.0.1] [--port 0] [--reader-idle 30s] [--writer-idle 10s] [--tick
//   100ms]
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "duration.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"

namespace {

using namespace std::chrono_literals;
using wheel::net::Connection;

constexpr std::size_t kMaxDelayedPerClient = 100;

struct Member {  // a connection's context
  std::string name;
  std::vector<wheel::LoopWheel::Handle> delayed;
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

class ChatHandler final : public wheel::net::ConnectionHandler {
 public:
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
    if (!parse_delay(args, &text, &seconds) || me.delayed.size() >= kMaxDelayedPerClient) {
      return c.send("ERR bad delay\n");
    }
    // The task names its sender by id; it runs on the loop thread.
    std::string message = me.name + " (delayed): " + std::string(text) + "\n";
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
    auto& delayed = static_cast<Member*>(c->context())->delayed;
    std::erase_if(delayed, [&](const wheel::LoopWheel::Handle& h) { return h == fired; });
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

  wheel::net::TcpServer* server_ = nullptr;
  std::vector<std::uint64_t> members_;  // open connections, oldest first
  std::unordered_map<std::string, std::uint64_t> names_;
};

int usage(const char* message) {
  std::fprintf(stderr,
               "chat-server: %s\nusage: chat-server [--host H] [--port P] "
               "[--reader-idle D] [--writer-idle D] [--tick D]\n",
               message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  wheel::net::TcpServerOptions options;
  options.idle = {30s, 10s, 0ms};
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage("every option takes a value");
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    const auto duration = wheel::apps::parse_duration(value);
    if (flag == "--host") {
      options.host = value;
    } else if (flag == "--port") {
      char* end = nullptr;
      const long port = std::strtol(value, &end, 10);
      if (*value == '\0' || *end != '\0' || port < 0 || port > 65535) return usage("bad --port");
      options.port = static_cast<std::uint16_t>(port);
    } else if (flag == "--reader-idle" && duration && *duration <= wheel::net::kMaxIdleTime) {
      options.idle.reader = *duration;
    } else if (flag == "--writer-idle" && duration && *duration <= wheel::net::kMaxIdleTime) {
      options.idle.writer = *duration;
    } else if (flag == "--tick" && duration && duration->count() > 0) {
      options.timer.tick_duration = *duration;
    } else {
      return usage(("bad option or value: " + std::string(flag) + " " + value).c_str());
    }
  }
  try {
    ChatHandler handler;
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
