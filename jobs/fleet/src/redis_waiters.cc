// SPDX-License-Identifier: Apache-2.0
// RedisBackend's waiting reserves: when to run the claim script again for a connection
// whose reserve found nothing. Three sources, one net::LoopTimer: the script's own answer (when the
// next job of these tubes comes due), events other processes publish, and the periodic scan.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "redis_handler_client.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/redis_backend.h"

namespace wheel::jobs {

namespace bs = beanstalk;

namespace {
// Tubes whose waiters one scan reports on (the rest are seen by the next scans in turn).
constexpr std::size_t kScanTubes = 1000;
// A second before a held lease runs out, a waiting reserve ends with DEADLINE_SOON.
constexpr std::int64_t kSafetyMarginMs = 1000;
}  // namespace

void RedisBackend::reserve(Client* client, std::optional<Millis> timeout, std::string& out) {
  const std::int64_t now = local_ms();
  for (auto it = client->leases.begin(); it != client->leases.end();) {
    // A lease long over (it ran out; the job went to another client or back to ready).
    if (it->second.end_local + 60'000 < now) {
      it = client->leases.erase(it);
      continue;
    }
    ++it;
  }
  for (auto& [id, lease] : client->leases) {
    if (lease.end_local > now && lease.end_local - now <= kSafetyMarginMs) {
      bs::append_reply(out, bs::Reply::kDeadlineSoon);  // after the replies before it
      return;
    }
  }
  client->worker = true;
  client->busy = true;
  start_wait(client, timeout);
  // A reserve that may wait need not ask Redis when this node knows its tubes have nothing
  // ready (its tube timers then wake a waiter when that may change): saves a claim per job.
  if ((timeout && timeout->count() == 0) || !known_empty(client->watched())) attempt(client);
}

bool RedisBackend::known_empty(const std::vector<std::string>& tubes) const {
  if (!events_.connected()) return false;  // events may be lost: what we know may be stale
  const std::int64_t now = local_ms();
  for (const std::string& tube : tubes) {
    auto it = waiters_.find(tube);
    if (it == waiters_.end()) return false;
    const TubeWaiters& w = it->second;
    if (w.empty_until <= now || !w.timer || w.timer_at > w.empty_until) return false;
  }
  return true;
}

void RedisBackend::learn_empty(const std::string& tube, std::int64_t redis_next_due) {
  auto it = waiters_.find(tube);
  if (it == waiters_.end() || it->second.live == 0) return;
  TubeWaiters& w = it->second;
  if (redis_next_due < 0) {
    w.empty_until = -1;  // nothing pending: no timer to stand for it, so claim as before
    return;
  }
  wake_tube_at(tube, std::max(to_local(redis_next_due), local_ms() + 1));
  w.empty_until = w.timer ? w.timer_at : -1;
}

void RedisBackend::forget_empty(const std::string& tube) {
  auto it = waiters_.find(tube);
  if (it != waiters_.end()) it->second.empty_until = -1;
}

void RedisBackend::start_wait(Client* client, std::optional<Millis> timeout) {
  client->waiting = true;
  client->attempting = false;
  client->wake_again = false;
  client->deadline_soon = false;
  client->timed_out = false;
  client->forever = !timeout.has_value();
  client->wait_seq = next_wait_seq_++;
  client->retry_at = -1;
  for (const std::string& tube : client->watched()) {
    TubeWaiters& w = waiters_[tube];
    // Lazy entries of ended waits are dropped here when they outnumber the live ones.
    if (w.queue.size() > 2 * w.live + 16) {
      std::erase_if(w.queue, [this](const auto& e) {
        Client* c = find(e.first);
        return c == nullptr || !c->waiting || c->wait_seq != e.second;
      });
    }
    w.queue.emplace_back(client->conn, client->wait_seq);
    ++w.live;
  }
  ++counters_.waiting;
  const std::uint64_t conn = client->conn;
  const std::uint64_t seq = client->wait_seq;
  if (timeout && timeout->count() > 0) {
    // Never early: the timer measures `timeout` from this moment on its own clock, in ns. (Redis's
    // TIME rules the due times of delays, pauses and leases: the scripts start them from it rounded
    // up, and a claim hands out only what Redis says is due.)
    client->timeout_timer = after(*timeout, [this, conn, seq] {
      wait_timer_fired(conn, seq, &Client::timed_out, bs::Reply::kTimedOut);
    });
  }
  deadline_check(client);
}

void RedisBackend::deadline_check(Client* client) {
  std::int64_t soonest = -1;
  for (auto& [id, lease] : client->leases) {
    if (soonest < 0 || lease.end_local < soonest) soonest = lease.end_local;
  }
  if (soonest < 0) return;
  const std::uint64_t conn = client->conn;
  const std::uint64_t seq = client->wait_seq;
  client->soon_timer = at_local(soonest - kSafetyMarginMs, [this, conn, seq] {
    wait_timer_fired(conn, seq, &Client::deadline_soon, bs::Reply::kDeadlineSoon);
  });
}

void RedisBackend::wait_timer_fired(std::uint64_t conn, std::uint64_t seq, bool Client::*flag,
                                    bs::Reply reply) {
  Client* c = find(conn);
  if (c == nullptr || !c->waiting || c->wait_seq != seq) return;
  c->*flag = true;
  if (!c->attempting) end_wait(c, reply);
}

void RedisBackend::end_wait(Client* client, bs::Reply reply) {
  end_wait(client);
  std::string out;
  bs::append_reply(out, reply);
  finish(client->conn, std::move(out));
}

void RedisBackend::end_wait(Client* client) {
  if (!client->waiting) return;
  client->waiting = false;
  cancel(client->timeout_timer);
  cancel(client->soon_timer);
  client->retry_at = -1;  // out of its retry group (lazily)
  for (const std::string& tube : client->watched()) {
    auto it = waiters_.find(tube);
    if (it == waiters_.end()) continue;
    if (it->second.live > 0) --it->second.live;
    if (it->second.live == 0) {
      cancel(it->second.timer);
      waiters_.erase(it);
    }
  }
  if (counters_.waiting > 0) --counters_.waiting;
}

void RedisBackend::attempt(Client* client, std::deque<Waiter> chain) {
  if (stopping_) return;  // leaving: no new claims
  client->attempting = true;
  client->wake_again = false;
  ++counters_.attempts;
  const std::uint64_t conn = client->conn;
  const std::uint64_t seq = client->wait_seq;
  store_.reserve(client->watched(), [this, conn, seq, watched = client->watched(),
                                     chain = std::move(chain)](ClaimResult&& r) mutable {
    // The claim says when the next job comes due when it found nothing, or took the last ready
    // one of its only tube: the rest of the chain would hear the same.
    const bool settled = r.next_known && (r.status == StoreStatus::kNotFound ||
                                          (r.status == StoreStatus::kOk && r.more == 0));
    const std::int64_t next_due = r.next_due;
    claimed(conn, seq, std::move(r));
    if (chain.empty()) return;
    if (!settled) {
      run_chain(std::move(chain));  // more ready jobs (or an error): the next tries
      return;
    }
    defer_chain(std::move(chain), watched, next_due);
  });
}

void RedisBackend::defer_chain(std::deque<Waiter> chain, const std::vector<std::string>& tubes,
                               std::int64_t next_due) {
  std::deque<Waiter> others;
  for (const auto& [wconn, wseq] : chain) {
    Client* w = find(wconn);
    if (w == nullptr || !w->waiting || w->wait_seq != wseq || w->attempting) continue;
    if (w->watched() != tubes) {
      others.emplace_back(wconn, wseq);  // other tubes: its own claim finds out
    } else if (next_due >= 0) {
      schedule_retry(w, next_due);
    }  // else nothing is pending: events and scans wake it
  }
  run_chain(std::move(others));
}

void RedisBackend::claimed(std::uint64_t conn, std::uint64_t seq, ClaimResult&& r) {
  {
    learn_clock(r.now);
    Client* c = find(conn);
    // A node that is leaving takes no new lease: leave() gave back the ones it had.
    const bool still = !stopping_ && c != nullptr && c->waiting && c->wait_seq == seq;
    if (!still) {
      // The client went away (or its wait ended) while the script ran: give the job back.
      if (r.status == StoreStatus::kOk) {
        store_.release(r.id, r.token, std::nullopt, Millis(0), false, [](ChangeResult&&) {});
      }
      return;
    }
    c->attempting = false;
    if (r.status == StoreStatus::kOk) {
      end_wait(c);
      metrics_.count(ChangeCounter::kReserve);
      // Both times are Redis's: exact to the millisecond whichever node promoted the job.
      if (r.delay_due > 0) metrics_.delivery_lateness.observe(Millis(r.now - r.delay_due));
      c->leases[r.id] = {r.token, to_local(r.lease_end), 0};
      std::string out;
      bs::append_job(out, bs::JobReply::kReserved, r.id, r.body);
      if (r.more > 0) {
        forget_empty(r.tube);
        wake(r.tube, std::min<std::uint64_t>(r.more, 16));
      } else if (r.next_known) {
        learn_empty(r.tube, r.next_due);  // the tube's other waiters: when its next is due
      }
      finish(conn, std::move(out));
      return;
    }
    if (r.status != StoreStatus::kNotFound) {
      if (r.status != StoreStatus::kOutOfMemory) note_internal_error(r);
      end_wait(c, r.status == StoreStatus::kOutOfMemory ? bs::Reply::kOutOfMemory
                                                        : bs::Reply::kInternalError);
      return;
    }
    if (c->deadline_soon || c->timed_out || (!c->forever && !c->timeout_timer)) {
      // reserve-with-timeout 0, or the wait ended while the script ran.
      end_wait(c, c->deadline_soon ? bs::Reply::kDeadlineSoon : bs::Reply::kTimedOut);
      return;
    }
    if (c->wake_again) {
      attempt(c);
      return;
    }
    if (c->watched().size() == 1) learn_empty(c->watched().front(), r.next_due);
    if (r.next_due >= 0) schedule_retry(c, r.next_due);
  }
}

void RedisBackend::run_chain(std::deque<Waiter> chain) {
  while (!chain.empty()) {
    const auto [conn, seq] = chain.front();
    chain.pop_front();
    Client* c = find(conn);
    // Skipped: ended waits, waiters in a later retry group, claims in flight (their answer
    // schedules them again).
    if (c == nullptr || !c->waiting || c->wait_seq != seq || c->retry_at >= 0 || c->attempting) {
      continue;
    }
    attempt(c, std::move(chain));
    return;
  }
}

void RedisBackend::fire_retry(std::int64_t at) {
  auto it = retry_groups_.find(at);
  if (it == retry_groups_.end()) return;
  std::vector<Waiter> members = std::move(it->second.members);
  retry_groups_.erase(it);
  std::deque<Waiter> chain;
  for (const auto& [conn, seq] : members) {
    Client* c = find(conn);
    if (c == nullptr || !c->waiting || c->wait_seq != seq || c->retry_at != at) continue;
    c->retry_at = -1;
    chain.emplace_back(conn, seq);
  }
  run_chain(std::move(chain));
}

void RedisBackend::schedule_retry(Client* client, std::int64_t redis_due) {
  // Never sooner than 1 ms from now: a due time that our clock estimate puts in the past
  // (Redis's clock a little ahead) must not spin.
  const std::int64_t at = std::max(to_local(redis_due), local_ms() + 1);
  if (client->watched().size() == 1) {
    // One tube: its waiters share the tube's timer, so a due time costs one claim, whether an
    // event or a claim's answer announced it; that claim's answer sets the next.
    wake_tube_at(client->watched().front(), at);
    return;
  }
  if (client->retry_at >= 0 && client->retry_at <= at) return;
  client->retry_at = at;  // a later group it was in skips it when it fires
  RetryGroup& g = retry_groups_[at];
  g.members.emplace_back(client->conn, client->wait_seq);
  if (!g.timer) g.timer = at_local(at, [this, at] { fire_retry(at); });
}

void RedisBackend::wake(const std::string& tube, std::uint64_t count) {
  auto it = waiters_.find(tube);
  if (it == waiters_.end()) return;
  auto& queue = it->second.queue;
  std::uint64_t started = 0;
  for (auto e = queue.begin(); e != queue.end() && started < count;) {
    Client* c = find(e->first);
    if (c == nullptr || !c->waiting || c->wait_seq != e->second) {
      e = queue.erase(e);  // an ended wait
      continue;
    }
    if (c->attempting) {
      c->wake_again = true;
    } else {
      attempt(c);
    }
    ++started;
    ++e;
  }
}

void RedisBackend::schedule_tube(const std::string& tube, std::int64_t redis_due) {
  wake_tube_at(tube, std::max(to_local(redis_due), local_ms()));
}

void RedisBackend::wake_tube_at(const std::string& tube, std::int64_t at) {
  auto it = waiters_.find(tube);
  if (it == waiters_.end() || it->second.live == 0) return;
  TubeWaiters& w = it->second;
  if (w.timer && w.timer_at <= at) return;  // an earlier wake-up is set; its attempt learns more
  cancel(w.timer);
  w.timer_at = at;
  w.timer = at_local(at, [this, tube] {
    auto t = waiters_.find(tube);
    if (t == waiters_.end()) return;
    t->second.timer.reset();
    t->second.timer_at = -1;
    wake(tube, 1);
  });
}

void RedisBackend::on_event(std::string_view message) {
  ++counters_.events;
  const std::size_t space = message.find(' ');
  if (space == std::string_view::npos) return;
  std::int64_t due = 0;
  std::from_chars(message.data(), message.data() + space, due);
  const std::string tube(message.substr(space + 1));
  auto it = waiters_.find(tube);
  if (it == waiters_.end() || it->second.live == 0) return;
  TubeWaiters& w = it->second;
  if (!clock_known_ || to_local(due) <= local_ms()) {
    w.empty_until = -1;
    wake(tube, 1);
  } else {
    // Work later: nothing is ready before it, so what we know holds until then.
    schedule_tube(tube, due);
    w.empty_until = std::min(w.empty_until, to_local(due));
  }
}

void RedisBackend::scan() {
  if (scan_in_flight_ || stopping_) return;
  scan_in_flight_ = true;
  ++counters_.scans;
  std::vector<std::string> tubes;
  for (auto& [tube, w] : waiters_) {
    if (w.live > 0 && tubes.size() < kScanTubes) tubes.push_back(tube);
  }
  store_.scan(kMaxPromotePerScript, tubes, [this](ScanResult&& r) {
    scan_in_flight_ = false;
    const std::int64_t min_gap = options_.min_scan_interval.count();
    if (r.status != StoreStatus::kOk) {  // the client logs; try again soon
      schedule_scan(min_gap);
      return;
    }
    learn_clock(r.now);
    for (const auto& t : r.tubes) {
      if (t.ready) {
        forget_empty(t.name);
        wake(t.name, 1);
      }
      if (t.next_due >= 0) schedule_tube(t.name, t.next_due);
    }
    // With reserves waiting here, look again when the fleet's first timer comes due (a lease of
    // a node that died, a delay whose event was lost); else only after the longest gap.
    std::int64_t gap = options_.max_scan_interval.count();
    if (counters_.waiting > 0 && r.first_timer >= 0) {
      gap = std::clamp(r.first_timer - r.now, min_gap, gap);
    }
    schedule_scan(gap);
  });
}

void RedisBackend::schedule_scan(std::int64_t after_ms) {
  cancel(scan_timer_);
  scan_timer_ = after(Millis(std::max<std::int64_t>(after_ms, 0)), [this] {
    scan_timer_.reset();
    scan();
  });
}

}  // namespace wheel::jobs
