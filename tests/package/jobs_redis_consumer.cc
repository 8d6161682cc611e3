// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeljobsredis` and by
// check_package.sh against wheel::jobs_redis: parses and formats Redis endpoint URLs
// (redis_endpoint.h), then runs a RedisClient (hiredis on a libuv loop) against a loopback port
// that refuses connections and expects its PING to fail with an error reply, with no server
// needed. Exits 0 when both behave.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <wheel/redis/redis_client.h>
#include <wheel/redis/redis_endpoint.h>

namespace {

bool endpoints_parse() {
  const auto endpoint = wheel::jobs::parse_redis_url("redis://[::1]:6380/3");
  if (!endpoint || endpoint->host != "::1" || endpoint->port != 6380 || endpoint->db != 3) {
    return false;
  }
  if (wheel::jobs::format_redis_url(*endpoint) != "redis://[::1]:6380/3") return false;
  std::string error;
  return !wheel::jobs::parse_redis_url("redis://host:0", &error) && !error.empty();
}

// A loopback port bound but not listening: connecting to it is refused while `fd` stays open.
int refusing_port(std::uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// PING through the client to a refusing port: the reply must be an error, not a hang.
bool refused_ping_fails(std::string* reply) {
  std::uint16_t port = 0;
  const int fd = refusing_port(&port);
  if (fd < 0) return false;
  uv_loop_t loop;
  uv_loop_init(&loop);
  wheel::jobs::RedisClientOptions options;
  options.endpoint.host = "127.0.0.1";
  options.endpoint.port = port;
  options.command_timeout = std::chrono::milliseconds(2000);
  bool answered = false;
  bool failed = false;
  {
    wheel::jobs::RedisClient client(&loop, options);
    uv_timer_t guard;  // bounds the run if no reply ever comes
    uv_timer_init(&loop, &guard);
    guard.data = &client;
    uv_timer_start(
        &guard,
        [](uv_timer_t* t) {
          static_cast<wheel::jobs::RedisClient*>(t->data)->stop();  // may close `t` already
          if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(t))) {
            uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
          }
        },
        10'000, 0);
    client.start();
    client.command({"PING"}, [&](const wheel::jobs::RedisValue& value) {
      answered = true;
      failed = value.is_error();
      *reply = value.str;
      client.stop();
      if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&guard))) {
        uv_close(reinterpret_cast<uv_handle_t*>(&guard), nullptr);
      }
    });
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_loop_close(&loop);
  ::close(fd);
  return answered && failed;
}

}  // namespace

int main() {
  if (!endpoints_parse()) {
    std::puts("redis endpoint URLs do not parse");
    return 1;
  }
  std::string reply;
  if (!refused_ping_fails(&reply)) {
    std::printf("PING to a refusing port did not fail with an error: '%s'\n", reply.c_str());
    return 1;
  }
  std::printf("redis endpoint parsed; PING to a refusing port: %s\n", reply.c_str());
  return 0;
}
