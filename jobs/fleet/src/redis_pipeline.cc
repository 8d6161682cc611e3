// SPDX-License-Identifier: Apache-2.0
// RedisJobsHandler's pipelined requests: a connection's consecutive puts and deletes are in
// flight together (at most kMaxPipelined), each with a reply slot in request order, so that the
// store's group commit batches a pipelining client's window instead of one request per round
// trip. A reply is written once every slot before it is filled; a slot of a closed connection
// is forgotten (its callback finds no client). A reserve behind deletes runs with them, in a slot
// of its own (overlaps()).
#include <algorithm>
#include <utility>
#include <variant>

#include "redis_handler_client.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/redis_jobs_handler.h"

namespace wheel::jobs {

namespace bs = beanstalk;

bool RedisJobsHandler::pipelined(const bs::Request& request) {
  return std::holds_alternative<bs::Put>(request) || std::holds_alternative<bs::Delete>(request);
}

void RedisJobsHandler::dispatch_pipelined(Client* client, bs::Request&& request) {
  const std::uint64_t conn = client->conn;
  const std::uint64_t seq = client->slots_head + client->slots.size();
  client->slots.emplace_back();
  if (auto* put = std::get_if<bs::Put>(&request)) {
    client->slots.back().put = true;
    client->slots.back().bytes = put->body.size();
    client->in_flight_bytes += put->body.size();
    client->producer = true;
    if (draining_) {
      std::string reply;
      bs::append_reply(reply, bs::Reply::kDraining);
      return complete(conn, seq, std::move(reply));
    }
    store_.put(client->used, put->priority, put->delay, std::max(put->ttr, kMinTtr), put->body,
               [this, conn, seq](InsertResult&& r) {
                 learn_clock(r.now);
                 if (r.status != StoreStatus::kOk)
                   return complete(conn, seq, store_failure_reply(r));
                 metrics_.count(ChangeCounter::kPut);
                 std::string reply;
                 bs::append_inserted(reply, r.id);
                 complete(conn, seq, std::move(reply));
               });
    return;
  }
  const auto& d = std::get<bs::Delete>(request);
  // The token is the lease this connection holds now, as the request was parsed.
  std::uint64_t token = 0;
  if (auto it = client->leases.find(d.id); it != client->leases.end()) {
    token = it->second.token;
    client->leases.erase(it);
  }
  store_.remove(d.id, token, [this, conn, seq](ChangeResult&& r) {
    learn_clock(r.now);
    if (r.status != StoreStatus::kOk) return complete(conn, seq, store_failure_reply(r));
    metrics_.count(ChangeCounter::kDelete);
    std::string reply;
    bs::append_reply(reply, bs::Reply::kDeleted);
    complete(conn, seq, std::move(reply));
  });
}

bool RedisJobsHandler::overlaps(const Client* client, const bs::Request& request) {
  if (!std::holds_alternative<bs::Reserve>(request) &&
      !std::holds_alternative<bs::ReserveWithTimeout>(request)) {
    return false;
  }
  return std::none_of(client->slots.begin(), client->slots.end(),
                      [](const Client::Slot& s) { return !s.ready && s.put; });
}

void RedisJobsHandler::dispatch_in_slot(Client* client, bs::Request&& request) {
  const std::uint64_t conn = client->conn;
  const std::uint64_t seq = client->slots_head + client->slots.size();
  client->slots.emplace_back();
  client->reply_slot = seq;
  std::string now;
  dispatch(client, std::move(request), now);
  Client* c = find(conn);
  if (c == nullptr || c->busy) return;  // answered later, through finish()
  c->reply_slot.reset();
  complete(conn, seq, std::move(now));
}

void RedisJobsHandler::complete(std::uint64_t conn, std::uint64_t seq, std::string reply) {
  Client* client = find(conn);
  if (client == nullptr || seq < client->slots_head ||
      seq - client->slots_head >= client->slots.size()) {
    return;
  }
  auto& slot = client->slots[seq - client->slots_head];
  client->in_flight_bytes -= std::exchange(slot.bytes, 0);
  slot.ready = true;
  slot.reply = std::move(reply);
  std::string out;
  while (!client->slots.empty() && client->slots.front().ready) {
    out += client->slots.front().reply;
    client->slots.pop_front();
    ++client->slots_head;
  }
  if (!out.empty() && !send(client, out)) return;  // closed: client is gone
  pump(client);                                    // room in the window, or a barrier may run now
}

void RedisJobsHandler::reply_in_order(Client* client, std::string& out, std::string_view reply) {
  if (client->slots.empty()) {
    out.append(reply);
  } else {
    client->slots.push_back({true, std::string(reply)});
  }
}

}  // namespace wheel::jobs
