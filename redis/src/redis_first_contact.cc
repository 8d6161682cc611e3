// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_first_contact.h"

#include <memory>

namespace wheel::jobs {

namespace {

// Shared with the PING's callback, which may run after the wait gave up (at the client's stop).
struct Contact {
  bool answered = false;
  bool in_flight = false;
  std::string error = "no reply yet";
};

void ping(RedisClient& client, const std::shared_ptr<Contact>& contact) {
  contact->in_flight = true;
  client.command({"PING"}, [contact](const RedisValue& v) {
    contact->in_flight = false;
    if (v.is_error()) {
      contact->error = v.str;
    } else {
      contact->answered = true;
    }
  });
}

}  // namespace

std::string wait_for_first_reply(uv_loop_t* loop, RedisClient& client,
                                 std::chrono::milliseconds bound) {
  auto contact = std::make_shared<Contact>();
  struct Retry {
    uv_timer_t timer;
    RedisClient* client;
    std::shared_ptr<Contact> contact;
  };
  auto* retry = new Retry{{}, &client, contact};
  uv_timer_init(loop, &retry->timer);
  retry->timer.data = retry;
  uv_timer_start(
      &retry->timer,
      [](uv_timer_t* t) {
        auto* r = static_cast<Retry*>(t->data);
        if (!r->contact->answered && !r->contact->in_flight) ping(*r->client, r->contact);
      },
      100, 100);
  ping(client, contact);
  uv_update_time(loop);
  const std::uint64_t deadline = uv_now(loop) + static_cast<std::uint64_t>(bound.count());
  while (!contact->answered && uv_now(loop) < deadline) uv_run(loop, UV_RUN_ONCE);
  uv_close(reinterpret_cast<uv_handle_t*>(&retry->timer),
           [](uv_handle_t* h) { delete static_cast<Retry*>(h->data); });
  return contact->answered ? std::string() : contact->error;
}

namespace {

// One INFO cluster question, asked again after a failure until the client stops.
struct ClusterProbe {
  uv_timer_t timer;
  RedisClient* client;
  std::function<void(const std::string&)> done;
};

void close_probe(ClusterProbe* probe) {
  uv_close(reinterpret_cast<uv_handle_t*>(&probe->timer),
           [](uv_handle_t* h) { delete static_cast<ClusterProbe*>(h->data); });
}

void ask_cluster_info(ClusterProbe* probe) {
  probe->client->command({"INFO", "cluster"}, [probe](const RedisValue& v) {
    if (v.is_error() && !v.str.starts_with("NOPERM")) {
      if (v.str == "ERR redis client stopped") return close_probe(probe);
      uv_timer_start(
          &probe->timer,
          [](uv_timer_t* t) { ask_cluster_info(static_cast<ClusterProbe*>(t->data)); }, 100, 0);
      return;
    }
    const bool cluster = !v.is_error() && v.str.find("cluster_enabled:1") != std::string::npos;
    auto done = std::move(probe->done);
    close_probe(probe);
    done(cluster ? kClusterNodeRefusal : "");
  });
}

}  // namespace

void check_not_a_cluster_node(uv_loop_t* loop, RedisClient& client,
                              std::function<void(const std::string& refusal)> done) {
  auto* probe = new ClusterProbe{{}, &client, std::move(done)};
  uv_timer_init(loop, &probe->timer);
  probe->timer.data = probe;
  ask_cluster_info(probe);
}

}  // namespace wheel::jobs
