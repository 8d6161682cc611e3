// SPDX-License-Identifier: Apache-2.0
#include "redis_batches.h"

#include <algorithm>
#include <utility>

#include "redis_replies.h"
#include "redis_scripts.h"
#include "wheel/jobs/fleet/redis_script_limits.h"

namespace wheel::jobs {

using redis_replies::as_int;
using redis_replies::at;
using redis_replies::check;

namespace {

// The front of `queued` that fits one script: at most kMaxBatchPerScript requests and, past the
// first, kMaxBatchBytes of `size`.
template <class Item, class Size>
std::vector<Item> take_batch(std::deque<Item>& queued, Size size) {
  std::vector<Item> batch;
  std::size_t bytes = 0;
  while (!queued.empty() && batch.size() < kMaxBatchPerScript) {
    bytes += size(queued.front());
    if (!batch.empty() && bytes > kMaxBatchBytes) break;
    batch.push_back(std::move(queued.front()));
    queued.pop_front();
  }
  return batch;
}

}  // namespace

RedisBatches::RedisBatches(RedisLink link, std::string prefix, std::uint32_t stride,
                           std::uint32_t offset)
    : link_(link),
      prefix_(std::move(prefix)),
      keys_{prefix_ + "j"},
      stride_(stride),
      offset_(offset),
      put_script_(redis_scripts::put()),
      remove_script_(redis_scripts::remove()),
      reserve_script_(redis_scripts::reserve()) {
  for (RedisScript* s : {&put_script_, &remove_script_, &reserve_script_}) link_.preload(s);
}

void RedisBatches::put(std::string_view tube, std::uint32_t priority, Millis delay, Millis ttr,
                       std::string_view body, Done<InsertResult> done) {
  puts_.queued.push_back({std::string(tube), std::to_string(priority),
                          std::to_string(delay.count()), std::to_string(ttr.count()),
                          std::string(body), std::move(done)});
  schedule();
}

void RedisBatches::schedule() {
  if (!link_.want_turn_end()) send_queued();
}

void RedisBatches::send_queued() {
  send_puts();
  send_removes();
  std::vector<std::string> tubes;
  for (const auto& [tube, lane] : claims_) tubes.push_back(tube);
  for (const auto& tube : tubes) send_claims(tube);
}

void RedisBatches::send_puts() {
  if (puts_.in_flight >= kMaxBatchesInFlight || puts_.queued.empty()) return;
  auto batch = std::make_shared<std::vector<Put>>(
      take_batch(puts_.queued, [](const Put& p) { return p.body.size() + p.tube.size(); }));
  std::vector<std::string> args{prefix_, std::to_string(batch->size())};
  args.reserve(2 + 5 * batch->size());
  for (Put& p : *batch) {
    args.push_back(p.tube);
    args.push_back(std::move(p.priority));
    args.push_back(std::move(p.delay));
    args.push_back(std::move(p.ttr));
    args.push_back(std::move(p.body));
  }
  if (stride_ > 1) {
    args.push_back(std::to_string(stride_));
    args.push_back(std::to_string(offset_));
  }
  ++puts_.in_flight;
  link_.eval(put_script_, keys_, args, [self = shared_from_this(), batch](const RedisValue& v) {
    --self->puts_.in_flight;
    self->schedule();   // what queued meanwhile goes at the turn's end
    InsertResult base;  // {first id, now}
    const bool ok = check(v, base, 2);
    const auto first = ok ? static_cast<std::uint64_t>(as_int(at(v, 0))) : 0;
    if (ok) base.now = as_int(at(v, 1));
    for (std::size_t i = 0; i < batch->size(); ++i) {
      InsertResult r = base;
      if (ok) r.id = first + i * self->stride_;
      (*batch)[i].done(std::move(r));
    }
  });
}

void RedisBatches::remove(std::uint64_t id, std::uint64_t token, Done<ChangeResult> done) {
  removes_.queued.push_back({redis_job_member(id), std::to_string(token), std::move(done)});
  schedule();
}

void RedisBatches::send_removes() {
  if (removes_.in_flight < kMaxBatchesInFlight) send_remove_batch();
}

void RedisBatches::send_removes_before_claim() {
  while (!removes_.queued.empty()) send_remove_batch();
}

void RedisBatches::send_remove_batch() {
  if (removes_.queued.empty()) return;
  auto batch = std::make_shared<std::vector<Remove>>(
      take_batch(removes_.queued, [](const Remove&) { return std::size_t{0}; }));
  std::vector<std::string> args{prefix_, std::to_string(batch->size())};
  args.reserve(2 + 2 * batch->size());
  for (const Remove& r : *batch) {
    args.push_back(r.member);
    args.push_back(r.token);
  }
  ++removes_.in_flight;
  link_.eval(remove_script_, keys_, args, [self = shared_from_this(), batch](const RedisValue& v) {
    --self->removes_.in_flight;
    self->schedule();
    ChangeResult base;  // {now, deleted (1|0) per request}
    const bool ok = check(v, base, 1 + batch->size());
    if (ok) base.now = as_int(at(v, 0));
    for (std::size_t i = 0; i < batch->size(); ++i) {
      ChangeResult r = base;
      if (ok && as_int(at(v, 1 + i)) != 1) r.status = StoreStatus::kNotFound;
      (*batch)[i].done(std::move(r));
    }
  });
}

void RedisBatches::reserve(const std::vector<std::string>& tubes, Done<ClaimResult> done) {
  if (tubes.size() != 1) {
    send_removes_before_claim();
    std::vector<std::string> args{prefix_, "1", std::to_string(tubes.size())};
    args.insert(args.end(), tubes.begin(), tubes.end());
    link_.eval(reserve_script_, keys_, args, [done = std::move(done)](const RedisValue& v) {
      done(std::move(redis_replies::read_claims(v, 1).front()));
    });
    return;
  }
  auto it = claims_.find(tubes.front());
  if (it == claims_.end()) it = claims_.emplace(tubes.front(), Lane<Done<ClaimResult>>{}).first;
  it->second.queued.push_back(std::move(done));
  schedule();
}

void RedisBatches::send_claims(const std::string& tube) {
  auto it = claims_.find(tube);
  if (it == claims_.end()) return;
  Lane<Done<ClaimResult>>& lane = it->second;
  if (lane.in_flight >= kMaxBatchesInFlight) return;
  if (lane.queued.empty()) {
    if (lane.in_flight == 0)
      claims_.erase(it);  // a lane lives while it has claims: tubes come and go
    return;
  }
  auto batch = std::make_shared<std::vector<Done<ClaimResult>>>(
      take_batch(lane.queued, [](const Done<ClaimResult>&) { return std::size_t{0}; }));
  ++lane.in_flight;
  send_removes_before_claim();
  link_.eval(reserve_script_, keys_, {prefix_, std::to_string(batch->size()), "1", tube},
             [self = shared_from_this(), batch, tube](const RedisValue& v) {
               auto found = self->claims_.find(tube);
               if (found != self->claims_.end()) --found->second.in_flight;
               self->schedule();
               auto results = redis_replies::read_claims(v, batch->size());
               for (std::size_t i = 0; i < batch->size(); ++i) {
                 (*batch)[i](std::move(results[i]));
               }
             });
}

}  // namespace wheel::jobs
