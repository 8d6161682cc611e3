// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/redis_jobs_handler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <span>
#include <type_traits>

#include "drain_signal.h"
#include "overloaded.h"
#include "redis_handler_client.h"
#include "wheel/jobs/beanstalk_reply.h"
#include "wheel/logger.h"

namespace wheel::jobs {

namespace bs = beanstalk;
using Millis = std::chrono::milliseconds;

namespace {

void count(bs::CommandCounts& c, const bs::Request& request) {
  std::visit(Overloaded{[&](const bs::Put&) { ++c.put; },
                        [&](const bs::Peek&) { ++c.peek; },
                        [&](const bs::PeekReady&) { ++c.peek_ready; },
                        [&](const bs::PeekDelayed&) { ++c.peek_delayed; },
                        [&](const bs::PeekBuried&) { ++c.peek_buried; },
                        [&](const bs::Reserve&) { ++c.reserve; },
                        [&](const bs::ReserveJob&) { ++c.reserve; },
                        [&](const bs::ReserveWithTimeout&) { ++c.reserve_with_timeout; },
                        [&](const bs::Delete&) { ++c.delete_; },
                        [&](const bs::Release&) { ++c.release; },
                        [&](const bs::Use&) { ++c.use; },
                        [&](const bs::Watch&) { ++c.watch; },
                        [&](const bs::Ignore&) { ++c.ignore; },
                        [&](const bs::Bury&) { ++c.bury; },
                        [&](const bs::Kick&) { ++c.kick; },
                        [&](const bs::KickJob&) { ++c.kick; },
                        [&](const bs::Touch&) { ++c.touch; },
                        [&](const bs::Stats&) { ++c.stats; },
                        [&](const bs::StatsJob&) { ++c.stats_job; },
                        [&](const bs::StatsTube&) { ++c.stats_tube; },
                        [&](const bs::ListTubes&) { ++c.list_tubes; },
                        [&](const bs::ListTubeUsed&) { ++c.list_tube_used; },
                        [&](const bs::ListTubesWatched&) { ++c.list_tubes_watched; },
                        [&](const bs::PauseTube&) { ++c.pause_tube; },
                        [&](const auto&) {}},
             request);
}

void close_handle(uv_handle_t* h) {
  uv_close(h, [](uv_handle_t* handle) {
    if (handle->type == UV_TIMER) {
      delete reinterpret_cast<uv_timer_t*>(handle);
    } else {
      delete reinterpret_cast<uv_signal_t*>(handle);
    }
  });
}

}  // namespace

RedisJobsHandler::RedisJobsHandler(RedisStore& store, RedisClient& events, RedisJobsOptions options)
    : store_(store),
      events_(events),
      options_(std::move(options)),
      wheel_(LoopWheelOptions{}, std::chrono::milliseconds(local_ms())) {
  if (options_.min_scan_interval.count() <= 0 ||
      options_.max_scan_interval < options_.min_scan_interval) {
    throw std::invalid_argument(
        "RedisJobsHandler: scan intervals must be 0 < min_scan_interval <= max_scan_interval");
  }
}

RedisJobsHandler::~RedisJobsHandler() = default;

std::int64_t RedisJobsHandler::local_ms() const {
  return static_cast<std::int64_t>(uv_hrtime() / 1'000'000);
}
std::int64_t RedisJobsHandler::to_local(std::int64_t redis_ms) const {
  return redis_ms - clock_offset_;
}
void RedisJobsHandler::learn_clock(std::int64_t redis_now) {
  if (redis_now <= 0) return;
  clock_offset_ = redis_now - local_ms();
  clock_known_ = true;
}

void RedisJobsHandler::attach(net::TcpServer& server) {
  server_ = &server;
  started_ms_ = local_ms();
  wheel_timer_ = new uv_timer_t;
  uv_timer_init(server.loop(), wheel_timer_);
  wheel_timer_->data = this;
  scan_timer_ = new uv_timer_t;
  uv_timer_init(server.loop(), scan_timer_);
  scan_timer_->data = this;
  schedule_scan(0);
  drain_ = watch_drain_signal<[](void* self) {
    logger()->info("wheel-jobs: SIGUSR1: drain mode, puts are refused with DRAINING");
    static_cast<RedisJobsHandler*>(self)->draining_ = true;
  }>(server.loop(), this);
  events_.subscribe(store_.event_channel(), [this](std::string_view m) { on_event(m); });
  // Events published while the subscription was down are lost: after a reconnect, look (once
  // the subscription is likely back: the shortest scan gap later).
  events_.set_on_connect([this] {
    for (auto& [tube, w] : waiters_) w.empty_until = -1;
    if (events_.connects() > 0) schedule_scan(options_.min_scan_interval.count());
  });
}

RedisJobsCounters RedisJobsHandler::counters() const {
  RedisJobsCounters c = counters_;
  c.connections = clients_.size();
  return c;
}

RedisJobsHandler::Client* RedisJobsHandler::find(std::uint64_t conn) {
  auto it = clients_.find(conn);
  return it == clients_.end() ? nullptr : it->second.get();
}

void RedisJobsHandler::on_open(net::Connection& c) {
  clients_.emplace(c.id(), std::make_unique<Client>(c.id(), options_.max_job_size));
  ++counters_.total_connections;
}

void RedisJobsHandler::on_data(net::Connection& c, std::string_view bytes) {
  Client* client = find(c.id());
  if (client == nullptr || client->quit) return;
  if ((client->busy || !client->slots.empty() || client->held) &&
      client->input.size() + bytes.size() > options_.max_held_input + options_.max_job_size) {
    logger()->warn("wheel-jobs: {} sent over {} bytes while requests were with Redis; closing",
                   c.peer(), options_.max_held_input + options_.max_job_size);
    c.close();
    return;
  }
  client->input.append(bytes);
  pump(client);
}

// Parses and runs requests while it may: pipelined ones (put, delete) up to kMaxPipelined in
// flight; any other waits (held) until they all answered, then runs alone.
void RedisJobsHandler::pump(Client* client) {
  if (client->pumping) return;
  client->pumping = true;
  const std::uint64_t conn = client->conn;
  std::string out;
  std::size_t used = 0;
  std::string_view input = client->input;
  while (!client->busy && !client->quit) {
    if (client->held) {
      if (!client->slots.empty()) break;
      bs::Request request = std::move(*client->held);
      client->held.reset();
      dispatch(client, std::move(request), out);
      if (find(conn) == nullptr) return;  // its connection closed meanwhile
      continue;
    }
    if (used >= input.size() || client->slots.size() >= kMaxPipelined) break;
    bs::RequestParser::Step step;
    try {
      step = client->parser.feed(input.substr(used));
    } catch (const std::bad_alloc&) {
      client->parser.reset();
      std::string oom;
      bs::append_reply(oom, bs::Reply::kOutOfMemory);
      reply_in_order(client, out, oom);
      used = input.size();
      break;
    }
    used += step.consumed;
    if (!step.request) continue;
    if (!pipelined(*step.request) && !client->slots.empty()) {
      if (overlaps(client, *step.request)) {
        dispatch_in_slot(client, std::move(*step.request));
        if (find(conn) == nullptr) return;
        continue;
      }
      client->held = std::move(step.request);
    } else {
      dispatch(client, std::move(*step.request), out);
      if (find(conn) == nullptr) return;
    }
  }
  client->input.erase(0, used);
  client->pumping = false;
  if (!out.empty() && !send(client, out)) return;
  maybe_close(client);
}

bool RedisJobsHandler::send(Client* client, std::string_view bytes) {
  const std::uint64_t conn = client->conn;
  if (server_ == nullptr) return true;
  if (net::Connection* c = server_->find(conn)) c->send(bytes);
  return find(conn) != nullptr;  // a failed write closes the connection at once (on_close)
}

void RedisJobsHandler::maybe_close(Client* client) {
  if (server_ == nullptr || client->busy || !client->slots.empty() || client->held) return;
  if (client->quit || (client->input_ended && client->input.empty())) {
    if (net::Connection* c = server_->find(client->conn)) c->close();
  }
}

void RedisJobsHandler::finish(std::uint64_t conn, std::string reply) {
  Client* client = find(conn);
  if (client == nullptr) return;
  client->busy = false;
  if (client->reply_slot) {
    const std::uint64_t seq = *client->reply_slot;
    client->reply_slot.reset();
    return complete(conn, seq, std::move(reply));
  }
  if (send(client, reply)) pump(client);
}

void RedisJobsHandler::dispatch(Client* client, bs::Request&& request, std::string& out) {
  count(commands_, request);
  if (pipelined(request)) {
    // Its reply is written after `out`'s: send those first.
    if (!out.empty() && !send(client, out)) return;
    out.clear();
    return dispatch_pipelined(client, std::move(request));
  }
  const std::uint64_t conn = client->conn;
  auto busy = [&] { client->busy = true; };
  // `kind`: the job change counted on success (pause-tube changes no job).
  auto change = [this, conn](bs::Reply ok, std::optional<ChangeCounter> kind) {
    return [this, conn, ok, kind](ChangeResult&& r) {
      learn_clock(r.now);
      std::string reply;
      if (r.status == StoreStatus::kOk) {
        if (kind) metrics_.count(*kind);
        bs::append_reply(reply, ok);
      } else {
        reply = store_failure_reply(r);
      }
      finish(conn, std::move(reply));
    };
  };
  auto peeked = [this, conn](PeekResult&& r) {
    std::string reply;
    if (r.status == StoreStatus::kOk) {
      bs::append_job(reply, bs::JobReply::kFound, r.id, r.body);
    } else {
      reply = store_failure_reply(r);
    }
    finish(conn, std::move(reply));
  };
  auto token_of = [client](std::uint64_t id) -> std::uint64_t {
    auto it = client->leases.find(id);
    return it == client->leases.end() ? 0 : it->second.token;
  };
  std::visit(
      Overloaded{
          [&](bs::Put&) {},  // dispatch_pipelined
          [&](bs::Use& use) {
            client->used = use.tube;
            bs::append_using(out, client->used);
          },
          [&](bs::Watch& watch) {
            auto& w = client->watched;
            if (std::find(w.begin(), w.end(), watch.tube) == w.end()) {
              if (w.size() >= 1024) return bs::append_reply(out, bs::Reply::kOutOfMemory);
              w.push_back(watch.tube);
            }
            bs::append_watching(out, w.size());
          },
          [&](bs::Ignore& ignore) {
            auto& w = client->watched;
            auto it = std::find(w.begin(), w.end(), ignore.tube);
            if (it != w.end()) {
              if (w.size() == 1) return bs::append_reply(out, bs::Reply::kNotIgnored);
              w.erase(it);
            }
            bs::append_watching(out, w.size());
          },
          [&](bs::Reserve&) { reserve(client, std::nullopt, out); },
          [&](bs::ReserveWithTimeout& r) { reserve(client, r.timeout, out); },
          [&](bs::ReserveJob& r) {
            client->worker = true;
            busy();
            store_.reserve_job(r.id, [this, conn](ClaimResult&& c) {
              learn_clock(c.now);
              std::string reply;
              Client* cl = find(conn);
              if (c.status == StoreStatus::kOk) {
                if (cl != nullptr && !stopping_) {
                  metrics_.count(ChangeCounter::kReserve);
                  cl->leases[c.id] = {c.token, to_local(c.lease_end), 0};
                } else {
                  store_.release(c.id, c.token, std::nullopt, Millis(0), false,
                                 [](ChangeResult&&) {});
                }
                bs::append_job(reply, bs::JobReply::kReserved, c.id, c.body);
              } else {
                reply = store_failure_reply(c);
              }
              finish(conn, std::move(reply));
            });
          },
          [&](bs::Delete&) {},  // dispatch_pipelined
          [&](bs::Release& r) {
            const std::uint64_t token = token_of(r.id);
            if (token == 0) return bs::append_reply(out, bs::Reply::kNotFound);
            busy();
            client->leases.erase(r.id);
            store_.release(r.id, token, r.priority, r.delay, true,
                           change(bs::Reply::kReleased, ChangeCounter::kRelease));
          },
          [&](bs::Bury& b) {
            const std::uint64_t token = token_of(b.id);
            if (token == 0) return bs::append_reply(out, bs::Reply::kNotFound);
            busy();
            client->leases.erase(b.id);
            store_.bury(b.id, token, b.priority, change(bs::Reply::kBuried, ChangeCounter::kBury));
          },
          [&](bs::Touch& t) {
            const std::uint64_t token = token_of(t.id);
            if (token == 0) return bs::append_reply(out, bs::Reply::kNotFound);
            busy();
            store_.touch(t.id, token, [this, conn, id = t.id](ChangeResult&& r) {
              learn_clock(r.now);
              std::string reply;
              Client* cl = find(conn);
              if (r.status == StoreStatus::kOk) {
                if (cl != nullptr) {
                  auto it = cl->leases.find(id);
                  if (it != cl->leases.end()) it->second.end_local = to_local(r.value);
                }
                metrics_.count(ChangeCounter::kTouch);
                bs::append_reply(reply, bs::Reply::kTouched);
              } else {
                if (cl != nullptr && r.status == StoreStatus::kNotFound) cl->leases.erase(id);
                reply = store_failure_reply(r);
              }
              finish(conn, std::move(reply));
            });
          },
          [&](bs::Peek& p) {
            busy();
            store_.peek(p.id, peeked);
          },
          [&](bs::PeekReady&) {
            busy();
            store_.peek_tube(client->used, PeekWhich::kReady, peeked);
          },
          [&](bs::PeekDelayed&) {
            busy();
            store_.peek_tube(client->used, PeekWhich::kDelayed, peeked);
          },
          [&](bs::PeekBuried&) {
            busy();
            store_.peek_tube(client->used, PeekWhich::kBuried, peeked);
          },
          [&](bs::Kick& k) {
            busy();
            store_.kick(client->used, k.bound, [this, conn](ChangeResult&& r) {
              std::string reply;
              if (r.status == StoreStatus::kOk) {
                metrics_.changes[static_cast<std::size_t>(ChangeCounter::kKick)] +=
                    static_cast<std::uint64_t>(r.value);
                bs::append_kicked_count(reply, static_cast<std::uint64_t>(r.value));
              } else {
                reply = store_failure_reply(r);
              }
              finish(conn, std::move(reply));
            });
          },
          [&](bs::KickJob& k) {
            busy();
            store_.kick_job(k.id, change(bs::Reply::kKicked, ChangeCounter::kKick));
          },
          [&](bs::StatsJob& s) {
            busy();
            store_.job_stats(s.id, [this, conn](JobInfo&& r) {
              std::string reply;
              if (r.status == StoreStatus::kOk) {
                r.stats.tube = r.tube;
                bs::append_ok(reply, bs::job_stats_yaml(r.stats));
              } else {
                reply = store_failure_reply(r);
              }
              finish(conn, std::move(reply));
            });
          },
          [&](bs::StatsTube& s) {
            busy();
            bool known = false;
            std::uint64_t using_count = 0, watching = 0, waiting = 0;
            for (auto& [id, c] : clients_) {
              const bool uses = c->used == s.tube;
              const bool watches =
                  std::find(c->watched.begin(), c->watched.end(), s.tube) != c->watched.end();
              using_count += uses;
              watching += watches;
              waiting += watches && c->waiting;
              known = known || uses || watches;
            }
            store_.tube_stats(
                s.tube, known,
                [this, conn, name = s.tube, using_count, watching, waiting](TubeInfo&& r) {
                  std::string reply;
                  if (r.status == StoreStatus::kOk) {
                    r.stats.name = name;
                    r.stats.using_count = using_count;
                    r.stats.watching = watching;
                    r.stats.waiting = waiting;
                    bs::append_ok(reply, bs::tube_stats_yaml(r.stats));
                  } else {
                    reply = store_failure_reply(r);
                  }
                  finish(conn, std::move(reply));
                });
          },
          [&](bs::Stats&) {
            busy();
            stats(client);
          },
          [&](bs::ListTubes&) {
            busy();
            store_.list_tubes([this, conn](TubeList&& r) {
              std::string reply;
              if (r.status == StoreStatus::kOk) {
                for (auto& [id, c] : clients_) {
                  r.names.push_back(c->used);
                  r.names.insert(r.names.end(), c->watched.begin(), c->watched.end());
                }
                r.names.push_back("default");
                std::sort(r.names.begin(), r.names.end());
                r.names.erase(std::unique(r.names.begin(), r.names.end()), r.names.end());
                std::vector<std::string_view> views(r.names.begin(), r.names.end());
                bs::append_ok(reply, bs::tube_list_yaml(views));
              } else {
                reply = store_failure_reply(r);
              }
              finish(conn, std::move(reply));
            });
          },
          [&](bs::ListTubeUsed&) { bs::append_using(out, client->used); },
          [&](bs::ListTubesWatched&) {
            std::vector<std::string_view> views(client->watched.begin(), client->watched.end());
            bs::append_ok(out, bs::tube_list_yaml(views));
          },
          [&](bs::Quit&) { client->quit = true; },
          [&](bs::PauseTube& p) {
            busy();
            bool known = false;
            for (auto& [id, c] : clients_) {
              known = known || c->used == p.tube ||
                      std::find(c->watched.begin(), c->watched.end(), p.tube) != c->watched.end();
            }
            store_.pause_tube(p.tube, p.delay, known, change(bs::Reply::kPaused, std::nullopt));
          },
          [&](bs::ProtocolError e) { bs::append_reply(out, bs::reply_for(e)); }},
      request);
}

void RedisJobsHandler::stats(Client* client) {
  const std::uint64_t conn = client->conn;
  store_.totals([this, conn](StoreTotals&& t) {
    std::string reply;
    if (t.status != StoreStatus::kOk) {
      finish(conn, store_failure_reply(t));
      return;
    }
    bs::ServerStats s;
    fill_job_counts(t, s);
    s.commands = commands_;
    s.max_job_size = options_.max_job_size;
    s.connections = clients_.size();
    // As beanstalkd: connections that ever put (producers) or reserved (workers); this node's.
    for (auto& [id, c] : clients_) {
      s.waiting += c->waiting;
      s.producers += c->producer;
      s.workers += c->worker;
    }
    s.total_connections = counters_.total_connections;
    fill_process_stats(options_.info, s);
    s.uptime = std::chrono::seconds((local_ms() - started_ms_) / 1000);
    s.draining = draining_;
    s.binlog_max_size = bs::kBinlogMaxSize;
    bs::append_ok(reply, bs::server_stats_yaml(s));
    finish(conn, std::move(reply));
  });
}

void RedisJobsHandler::on_input_end(net::Connection& c) {
  Client* client = find(c.id());
  if (client == nullptr ||
      (!client->busy && client->slots.empty() && !client->held && client->input.empty()) ||
      client->waiting) {
    c.close(net::CloseReason::kPeerClosed);  // beanstalkd drops a waiting client that hangs up
    return;
  }
  client->input_ended = true;
}

void RedisJobsHandler::on_close(net::Connection& c, net::CloseReason) {
  auto it = clients_.find(c.id());
  if (it == clients_.end()) return;
  std::unique_ptr<Client> client = std::move(it->second);
  clients_.erase(it);
  if (client->waiting) end_wait(client.get());
  // As beanstalkd: the jobs a client held go back to ready at once, with their priority.
  if (!stopping_) {
    for (auto& [id, lease] : client->leases) {
      ++counters_.released_on_close;
      store_.release(id, lease.token, std::nullopt, Millis(0), false, [this](ChangeResult&& r) {
        if (r.status == StoreStatus::kOk) metrics_.count(ChangeCounter::kHangUp);
      });
    }
  }
}

void RedisJobsHandler::on_shutdown() {
  stopping_ = true;
  draining_ = true;
  leave();
  for (uv_timer_t** t : {&wheel_timer_, &scan_timer_}) {
    if (*t != nullptr) {
      close_handle(reinterpret_cast<uv_handle_t*>(*t));
      *t = nullptr;
    }
  }
  if (drain_ != nullptr) {
    close_handle(reinterpret_cast<uv_handle_t*>(drain_));
    drain_ = nullptr;
  }
}

}  // namespace wheel::jobs
