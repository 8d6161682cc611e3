// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/tcp_server_options.h"

#include <stdexcept>
#include <string>

#include "wheel/net/listen_socket.h"
#include "wheel/net/socket_address.h"

namespace wheel::net {

void validate(const TcpServerOptions& o) {
  if (o.max_connections == 0) throw std::invalid_argument("max_connections: must be positive");
  if (o.max_line == 0) throw std::invalid_argument("max_line: must be positive");
  if (o.max_output == 0) throw std::invalid_argument("max_output: must be positive");
  if (o.backlog <= 0) throw std::invalid_argument("backlog: must be positive");
  if (o.unix_mode > kMaxUnixMode) throw std::invalid_argument("unix_mode: must be 0 to 0777");
  if (o.reuse_port && is_unix_host(o.host)) {
    throw std::invalid_argument("reuse_port: not for a unix socket");
  }
  if (o.shutdown_grace.count() < 0) throw std::invalid_argument("shutdown_grace: negative");
  const std::string range = "0 ..= " + std::to_string(kMaxIdleTime.count()) + " ms";
  if (o.close_grace.count() < 0 || o.close_grace > kMaxIdleTime) {
    throw std::invalid_argument("close_grace must be within " + range);
  }
  for (const auto t : {o.idle.reader, o.idle.writer, o.idle.all}) {
    if (t.count() < 0 || t > kMaxIdleTime) {
      throw std::invalid_argument("idle times must be within " + range);
    }
  }
}

}  // namespace wheel::net
