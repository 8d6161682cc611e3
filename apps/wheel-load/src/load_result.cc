#include "wheel/load/load_result.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace wheel::load {

void merge(LoadResult& into, const LoadResult& other) {
  into.connections_requested += other.connections_requested;
  into.connections_established += other.connections_established;
  into.connect_errors += other.connect_errors;
  for (const auto& [kind, n] : other.connect_errors_by_kind) into.connect_errors_by_kind[kind] += n;
  into.active_count += other.active_count;
  into.active_survived += other.active_survived;
  into.active_closed_early += other.active_closed_early;
  into.idle_count += other.idle_count;
  into.idle_closed_on_time += other.idle_closed_on_time;
  into.idle_closed_early += other.idle_closed_early;
  into.idle_closed_late += other.idle_closed_late;
  into.idle_never_closed += other.idle_never_closed;
  into.pings_sent += other.pings_sent;
  into.pongs_received += other.pongs_received;
  into.unexpected_lines += other.unexpected_lines;
  into.bye_idle_received += other.bye_idle_received;
  into.io_errors += other.io_errors;
  into.peak_open = std::max(into.peak_open, other.peak_open);
  into.idle_lateness_ms.insert(into.idle_lateness_ms.end(), other.idle_lateness_ms.begin(),
                               other.idle_lateness_ms.end());
  into.rtt_ms.insert(into.rtt_ms.end(), other.rtt_ms.begin(), other.rtt_ms.end());
  into.connect_ms.insert(into.connect_ms.end(), other.connect_ms.begin(), other.connect_ms.end());
  into.duration_s = std::max(into.duration_s, other.duration_s);
}

#define WHEEL_LOAD_FIELDS(X)                                                           \
  X(connections_requested)                                                             \
  X(connections_established)                                                           \
  X(connect_errors) X(connect_errors_by_kind) X(active_count) X(active_survived)       \
      X(active_closed_early) X(idle_count) X(idle_closed_on_time) X(idle_closed_early) \
          X(idle_closed_late) X(idle_never_closed) X(pings_sent) X(pongs_received)     \
              X(unexpected_lines) X(bye_idle_received) X(io_errors) X(peak_open)       \
                  X(idle_lateness_ms) X(rtt_ms) X(connect_ms) X(duration_s) X(processes)

void to_json(nlohmann::json& j, const LoadResult& r) {
  j = nlohmann::json::object();
#define WHEEL_LOAD_TO(f) j[#f] = r.f;
  WHEEL_LOAD_FIELDS(WHEEL_LOAD_TO)
#undef WHEEL_LOAD_TO
}

void from_json(const nlohmann::json& j, LoadResult& r) {
#define WHEEL_LOAD_FROM(f) j.at(#f).get_to(r.f);
  WHEEL_LOAD_FIELDS(WHEEL_LOAD_FROM)
#undef WHEEL_LOAD_FROM
}

}  // namespace wheel::load
