// SPDX-License-Identifier: Apache-2.0
// BeanstalkFront, the output side: replies written in request order, gathered per backend read,
// and the per-connection output bound that pauses input (beanstalk_front.h has the contract).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "beanstalk_front_conn.h"
#include "wheel/jobs/server/beanstalk_front.h"

namespace wheel::jobs {

bool BeanstalkFront::write_ready(Conn* conn) {
  std::string out = conn->replies.take();
  if (out.empty()) return true;
  return send(conn, out);
}

bool BeanstalkFront::send(Conn* conn, std::string_view bytes) {
  if (server_ == nullptr) return true;
  const std::uint64_t id = conn->id;
  // One read of the backend's (a Redis reply, a log sync) brings several replies: what they
  // answer goes out in one write per connection after it.
  if (backend_.gathering()) {
    list(conn);
    conn->gathered.append(bytes);
    return true;
  }
  net::Connection* c = server_->find(id);
  if (c == nullptr) return false;
  if (!conn->gathered.empty()) {
    std::string first = std::exchange(conn->gathered, {});
    first.append(bytes);
    c->send(first);
  } else {
    c->send(bytes);
  }
  return find(id) != nullptr;  // a failed write closes the connection at once (on_close)
}

void BeanstalkFront::list(Conn* conn) {
  if (conn->listed) return;
  conn->listed = true;
  gathered_.push_back(conn->id);
}

void BeanstalkFront::write_gathered() {
  std::vector<std::uint64_t> ids;
  ids.swap(gathered_);
  for (const std::uint64_t id : ids) {
    Conn* conn = find(id);
    if (conn == nullptr) continue;
    conn->listed = false;
    if (!write_ready(conn)) continue;  // with what was gathered before it
    if (!conn->gathered.empty() && !send(conn, {})) continue;
    if (conn->pumping) continue;  // pump() goes on when it is done
    pump(conn);                   // and looks at the output bound and a close
  }
}

std::size_t BeanstalkFront::backlog(const Conn* conn) const {
  return backlog(conn, server_ == nullptr ? nullptr : server_->find(conn->id));
}

std::size_t BeanstalkFront::backlog(const Conn* conn, const net::Connection* c) const {
  return conn->replies.ready_bytes() + conn->gathered.size() + backend_.held_reply_bytes(conn->id) +
         (c == nullptr ? 0 : c->queued_output());
}

void BeanstalkFront::watch_output(Conn* conn) {
  net::Connection* c = server_ == nullptr ? nullptr : server_->find(conn->id);
  const std::size_t low = options_.max_queued_output / 2;
  const std::size_t owed =
      conn->replies.ready_bytes() + conn->gathered.size() + backend_.held_reply_bytes(conn->id);
  // Replies still owed past half: their completion looks again.
  if (c == nullptr || owed >= low) return;
  c->notify_output_below(low - owed);
}

void BeanstalkFront::on_output_below(net::Connection& c) {
  Conn* conn = find(c.id());
  if (conn == nullptr || !conn->blocked) return;
  if (backlog(conn) > options_.max_queued_output / 2) return watch_output(conn);
  conn->blocked = false;
  if (!conn->parked) c.resume_input();
  pump(conn);
  backend_.after_batch();
}

void BeanstalkFront::resume(std::uint64_t id) {
  Conn* conn = find(id);
  if (conn == nullptr || !conn->parked) return;
  conn->parked = false;
  pump(conn);
  // Looked up again: running the requests may have closed the connection.
  conn = find(id);
  if (conn == nullptr || conn->parked || conn->blocked) return;
  net::Connection* c = server_->find(id);
  if (c != nullptr && !c->closing() && c->input_paused()) c->resume_input();
}

}  // namespace wheel::jobs
