// What the loop does for one connection: run its commands, deliver its DELAY messages, and
// detect its idleness, all on the wheel. The timeouts' tasks name the connection by id and run
// on the loop thread (see loop_executor.h); server_core.cc holds the connection table.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <string>

#include "line_protocol.h"
#include "server_core.h"

namespace wheel::net {
namespace {

std::chrono::milliseconds idle_delay(const ServerOptions& o, IdleKind kind) {
  switch (kind) {
    case IdleKind::kReader:
      return o.reader_idle;
    case IdleKind::kWriter:
      return o.writer_idle;
    case IdleKind::kAll:
      return o.all_idle;
  }
  return std::chrono::milliseconds(0);
}

constexpr IdleKind kIdleKinds[] = {IdleKind::kReader, IdleKind::kWriter, IdleKind::kAll};

}  // namespace

// The task of an idle timeout: names the connection by id, so it is harmless if that
// connection closed before the job reached the loop.
// 16 bytes, so an idle connection's timer node stays small: the kind rides in the top two bits
// of the id, whose generation has 30 bits.
struct ServerCore::IdleTask {
  ServerCore* core;
  std::uint64_t id_and_kind;
  IdleTask(ServerCore* c, std::uint64_t id, IdleKind kind)
      : core(c), id_and_kind(id | static_cast<std::uint64_t>(kind) << 62) {}
  void operator()(Timeout& self) const {
    core->on_idle_timeout(id_and_kind & ~(std::uint64_t{3} << 62),
                          static_cast<IdleKind>(id_and_kind >> 62), &self);
  }
};

struct ServerCore::DelayedTask {
  ServerCore* core;
  std::uint64_t id;
  std::string text;
  void operator()(Timeout& self) const { core->on_delayed(id, &self, text); }
};

// ---- commands ----------------------------------------------------------------------------

void ServerCore::on_line(Connection* c, std::string_view line) {
  assert_in_loop_thread();
  const Command cmd = parse_command(line);
  switch (cmd.kind) {
    case Command::kEmpty:
    case Command::kPong:
      break;  // activity only, already recorded
    case Command::kPing:
      ++stats_.pings;
      c->reply("PONG\n");
      break;
    case Command::kStats:
      c->reply("STATS " + snapshot().to_json() + "\n");
      break;
    case Command::kQuit:
      c->close_with("BYE\n");
      break;
    case Command::kDelay:
      schedule_delayed(c, cmd.delay_ms, cmd.text);
      break;
    case Command::kBadDelay:
      ++stats_.errors;
      c->reply("ERR bad delay\n");
      break;
    case Command::kUnknown:
      ++stats_.errors;
      c->reply("ERR unknown command\n");
      break;
  }
}

void ServerCore::schedule_delayed(Connection* c, std::uint64_t delay_ms, std::string_view text) {
  if (!c->delayed) c->delayed = std::make_unique<std::vector<TimeoutHandle>>();
  if (c->delayed->size() >= kMaxDelayedPerConnection) {
    ++stats_.errors;
    c->reply("ERR too many delayed messages\n");
    return;
  }
  // The job runs on this (the loop) thread, so it cannot fire before push_back below.
  c->delayed->push_back(timer_->new_timeout(DelayedTask{this, c->id(), std::string(text)},
                                            std::chrono::milliseconds(delay_ms)));
  ++stats_.delayed_pending;
  c->reply("OK\n");
}

void ServerCore::on_delayed(std::uint64_t id, Timeout* fired, std::string_view text) {
  assert_in_loop_thread();
  Connection* c = find(id);
  if (c == nullptr || !c->delayed) {  // closed meanwhile: its count is already gone
    ++stats_.stale_timeouts;
    return;
  }
  auto& pending = *c->delayed;
  const auto it = std::find_if(pending.begin(), pending.end(),
                               [fired](const TimeoutHandle& h) { return h.get() == fired; });
  if (it == pending.end()) return;
  *it = std::move(pending.back());
  pending.pop_back();
  --stats_.delayed_pending;
  ++stats_.delayed_sent;
  std::string message;
  message.reserve(text.size() + 9);
  message.append("DELAYED ").append(text).append("\n");
  c->send(message);
}

// ---- idle detection ----------------------------------------------------------------------

void ServerCore::start_idle_timeouts(Connection* c) {
  for (IdleKind kind : kIdleKinds) {
    const auto delay = idle_delay(options_, kind);
    if (delay.count() > 0) schedule_idle(c, kind, delay);
  }
}

void ServerCore::schedule_idle(Connection* c, IdleKind kind, std::chrono::milliseconds delay) {
  assert_in_loop_thread();
  TimeoutHandle& slot = c->idle[static_cast<std::size_t>(kind)];
  assert(!slot && "at most one live idle timeout per kind");
  slot = timer_->new_timeout(IdleTask{this, c->id(), kind}, delay);
}

void ServerCore::on_idle_timeout(std::uint64_t id, IdleKind kind, Timeout* fired) {
  assert_in_loop_thread();
  Connection* c = find(id);
  if (c == nullptr) {  // closed meanwhile: its cancel() came too late
    ++stats_.stale_timeouts;
    return;
  }
  TimeoutHandle& slot = c->idle[static_cast<std::size_t>(kind)];
  if (slot.get() != fired) return;  // not the live one (cannot happen; be safe)
  slot.reset();
  uv_update_time(&loop_);  // the cached loop time may be a whole batch of callbacks old
  const std::uint64_t now = uv_now(&loop_);
  std::uint64_t last = 0;
  switch (kind) {
    case IdleKind::kReader:
      last = c->last_read_ms;
      break;
    case IdleKind::kWriter:
      last = c->last_write_ms;
      break;
    case IdleKind::kAll:
      last = std::max(c->last_read_ms, c->last_write_ms);
      break;
  }
  const auto delay = static_cast<std::uint64_t>(idle_delay(options_, kind).count());
  const std::uint64_t idle_for = now - std::min(now, last);
  if (idle_for < delay) {
    // Active meanwhile: wait for the rest of the period only (IdleStateHandler's technique).
    schedule_idle(c, kind, std::chrono::milliseconds(delay - idle_for));
    return;
  }
  if (kind == IdleKind::kWriter) {
    ++stats_.heartbeats;
    c->send("PING\n");  // records write activity
    if (!c->closing()) schedule_idle(c, kind, std::chrono::milliseconds(delay));
    return;
  }
  ++stats_.idle_closed;
  spdlog::debug("worker {}: connection {:#x} idle for {} ms, closing", options_.worker_index, id,
                idle_for);
  c->close_with("BYE idle\n");
}

}  // namespace wheel::net
