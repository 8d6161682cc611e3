// SPDX-License-Identifier: Apache-2.0
// RedisBackend's pipelined requests: a connection's consecutive puts and deletes are in flight
// together (the front's in-flight bounds: kMaxPipelined, max_in_flight_bytes), each completing
// its own reply slot (the front writes them in request order), so that the store's group commit
// batches a pipelining client's window instead of one request per round trip. A slot of a closed
// connection is forgotten. A reserve behind deletes runs with them (overlaps()).
#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "redis_handler_client.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/redis_backend.h"

namespace wheel::jobs {

namespace bs = beanstalk;

bool RedisBackend::pipelined(const bs::Request& request) {
  return std::holds_alternative<bs::Put>(request) || std::holds_alternative<bs::Delete>(request);
}

void RedisBackend::dispatch_pipelined(Client* client, bs::Request&& request, ReplySlot slot) {
  const std::uint64_t conn = client->conn;
  if (auto* put = std::get_if<bs::Put>(&request)) {
    client->producer = true;
    if (draining_) {
      std::string reply;
      bs::append_reply(reply, bs::Reply::kDraining);
      return slot.complete(reply);
    }
    ++client->puts_in_flight;
    store_.put(client->used(), put->priority, put->delay, std::max(put->ttr, kMinTtr), put->body,
               [this, conn, slot](InsertResult&& r) {
                 if (Client* c = find(conn)) --c->puts_in_flight;
                 learn_clock(r.now);
                 if (r.status != StoreStatus::kOk) return slot.complete(store_failure_reply(r));
                 metrics_.count(ChangeCounter::kPut);
                 std::string reply;
                 bs::append_inserted(reply, r.id);
                 slot.complete(reply);
               });
    return;
  }
  const auto& d = std::get<bs::Delete>(request);
  // The token is the lease this connection holds now, as the request starts.
  std::uint64_t token = 0;
  if (auto it = client->leases.find(d.id); it != client->leases.end()) {
    token = it->second.token;
    client->leases.erase(it);
  }
  store_.remove(d.id, token, [this, slot](ChangeResult&& r) {
    learn_clock(r.now);
    if (r.status != StoreStatus::kOk) return slot.complete(store_failure_reply(r));
    metrics_.count(ChangeCounter::kDelete);
    std::string reply;
    bs::append_reply(reply, bs::Reply::kDeleted);
    slot.complete(reply);
  });
}

bool RedisBackend::overlaps(const Client* client, const bs::Request& request) {
  if (!std::holds_alternative<bs::Reserve>(request) &&
      !std::holds_alternative<bs::ReserveWithTimeout>(request)) {
    return false;
  }
  return client->puts_in_flight == 0;
}

}  // namespace wheel::jobs
