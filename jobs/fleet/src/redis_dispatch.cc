// SPDX-License-Identifier: Apache-2.0
// RedisBackend's requests: what each beanstalkd command does with the RedisStore, and the
// server-wide stats. Pipelined puts and deletes: redis_pipeline.cc; reserves that wait:
// redis_waiters.cc.
#include <algorithm>
#include <variant>

#include "redis_handler_client.h"
#include "redis_tube_order.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/redis_backend.h"
#include "wheel/overloaded.h"

namespace wheel::jobs {

namespace bs = beanstalk;

void RedisBackend::dispatch(Client* client, bs::Request&& request, std::string& out) {
  bs::count_command(commands_, request);
  const std::uint64_t conn = client->conn;
  auto busy = [&] { client->busy = true; };
  auto not_ours = [&] { bs::append_reply(out, bs::Reply::kInternalError); };
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
          [&](bs::Put&) {},  // run() -> dispatch_pipelined
          // The session's tubes are the front's (SessionTubes): it never hands these over.
          [&](bs::Use&) { not_ours(); }, [&](bs::Watch&) { not_ours(); },
          [&](bs::Ignore&) { not_ours(); },
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
          [&](bs::Delete&) {},  // run() -> dispatch_pipelined
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
            store_.peek_tube(client->used(), PeekWhich::kReady, peeked);
          },
          [&](bs::PeekDelayed&) {
            busy();
            store_.peek_tube(client->used(), PeekWhich::kDelayed, peeked);
          },
          [&](bs::PeekBuried&) {
            busy();
            store_.peek_tube(client->used(), PeekWhich::kBuried, peeked);
          },
          [&](bs::Kick& k) {
            busy();
            store_.kick(client->used(), k.bound, [this, conn](ChangeResult&& r) {
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
            store_.job_stats(s.id, [this, conn](StoreJobInfo&& r) {
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
              const bool uses = c->used() == s.tube;
              const bool watches = c->tubes.watches(s.tube);
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
                const std::vector<std::string> names = tube_order_->merged(std::move(r.names));
                std::vector<std::string_view> views(names.begin(), names.end());
                bs::append_ok(reply, bs::tube_list_yaml(views));
              } else {
                reply = store_failure_reply(r);
              }
              finish(conn, std::move(reply));
            });
          },
          [&](bs::ListTubeUsed&) { not_ours(); }, [&](bs::ListTubesWatched&) { not_ours(); },
          [&](bs::Quit&) {},  // the front closes the connection
          [&](bs::PauseTube& p) {
            busy();
            bool known = false;
            for (auto& [id, c] : clients_) {
              known = known || c->used() == p.tube || c->tubes.watches(p.tube);
            }
            store_.pause_tube(p.tube, p.delay, known, change(bs::Reply::kPaused, std::nullopt));
          },
          [&](bs::ProtocolError e) { bs::append_reply(out, bs::reply_for(e)); }},
      request);
}

void RedisBackend::stats(Client* client) {
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

}  // namespace wheel::jobs
