// SPDX-License-Identifier: Apache-2.0
// The Prometheus pieces of wheel::net: the text writer (checked by an independent parser of
// the format's rules, support/prometheus_parser.h), the histogram, the per-worker slot and its
// shared region across fork(). The HTTP endpoint is net_metrics_http_test.cc's.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/prometheus_parser.h"
#include "wheel/server/prometheus_text.h"
#include "wheel/server/server_metrics.h"

namespace wheel::server {
namespace {

using namespace std::chrono_literals;
using wheel::net::CloseReason;
using wheel::testing::parse_exposition;

// ---- the parser itself rejects what the format forbids -----------------------------------

TEST(PrometheusParser, RejectsWhatTheFormatForbids) {
  EXPECT_NO_THROW(parse_exposition("# TYPE a counter\na 1\n"));
  EXPECT_THROW(parse_exposition("a 1\n# TYPE a counter\n"), std::runtime_error);  // TYPE late
  EXPECT_THROW(parse_exposition("1a 1\n"), std::runtime_error);
  EXPECT_THROW(parse_exposition("a{b=\"x\\q\"} 1\n"), std::runtime_error);
  EXPECT_THROW(parse_exposition("a{b=\"x} 1\n"), std::runtime_error);
  EXPECT_THROW(parse_exposition("a 1\nb 1\na 2\n"), std::runtime_error);  // not contiguous
  EXPECT_THROW(parse_exposition("# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                                "h_bucket{le=\"+Inf\"} 1\nh_sum 0\nh_count 1\n"),
               std::runtime_error);  // not cumulative
  EXPECT_THROW(parse_exposition("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 0\n"
                                "h_count 3\n"),
               std::runtime_error);                           // +Inf != count
  EXPECT_THROW(parse_exposition("a 1"), std::runtime_error);  // no final newline
}

// ---- the writer --------------------------------------------------------------------------

TEST(PrometheusText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(PrometheusText::escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(PrometheusText::escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");
  PrometheusText t;
  t.family("x_total", "counter", "help with \\ and\nnewline");
  t.sample("x_total", {{"path", "C:\\dir \"q\"\n"}}, 3);
  const auto parsed = parse_exposition(t.text());
  EXPECT_EQ(parsed.value("x_total", {{"path", "C:\\dir \"q\"\n"}}), 3);
}

TEST(PrometheusText, OneSampleFamiliesAndOneLabelSeriesCarryTheirTypeAndHelp) {
  PrometheusText t;
  t.counter("a_total", "a help", 7);
  t.gauge("b", "b help", 8);
  t.counter_double("c_seconds_total", "c help", 1.5);
  t.gauge_double("d_seconds", "d help", 0.25);
  t.series("e", "gauge", "e help", "state", {{"ready", 3}, {"buried", 4}});
  EXPECT_EQ(t.text(),
            "# HELP a_total a help\n# TYPE a_total counter\na_total 7\n"
            "# HELP b b help\n# TYPE b gauge\nb 8\n"
            "# HELP c_seconds_total c help\n# TYPE c_seconds_total counter\nc_seconds_total 1.5\n"
            "# HELP d_seconds d help\n# TYPE d_seconds gauge\nd_seconds 0.25\n"
            "# HELP e e help\n# TYPE e gauge\ne{state=\"ready\"} 3\ne{state=\"buried\"} 4\n");
  const auto parsed = parse_exposition(t.text());
  EXPECT_EQ(parsed.families.at("a_total").type, "counter");
  EXPECT_EQ(parsed.families.at("b").type, "gauge");
  EXPECT_EQ(parsed.value("e", {{"state", "buried"}}), 4);
}

TEST(PrometheusText, FormatsFloatsAsTheFormatSpellsThem) {
  EXPECT_EQ(PrometheusText::format_double(0.001), "0.001");
  EXPECT_EQ(PrometheusText::format_double(0.0001), "0.0001");  // not the shorter "1e-04"
  EXPECT_EQ(PrometheusText::format_double(0.00025), "0.00025");
  EXPECT_EQ(PrometheusText::format_double(4.757341755), "4.757341755");
  EXPECT_EQ(PrometheusText::format_double(1e20), "1e+20");
  EXPECT_EQ(PrometheusText::format_double(1), "1");
  EXPECT_EQ(PrometheusText::format_double(INFINITY), "+Inf");
  EXPECT_EQ(PrometheusText::format_double(-INFINITY), "-Inf");
  EXPECT_EQ(PrometheusText::format_double(NAN), "NaN");
}

TEST(MetricsHistogram, CountsEachValueInTheFirstBucketAtOrAboveIt) {
  wheel::server::MetricsHistogram<3> h({0.001, 0.01, 0.1});
  h.observe(0ns);
  h.observe(1ms);  // on the bound: that bucket (le is "less or equal")
  h.observe(1001us);
  h.observe(5s);
  h.observe(-5ms);  // counts as 0
  const auto c = h.read();
  EXPECT_EQ(c.buckets[0], 3u);
  EXPECT_EQ(c.buckets[1], 1u);
  EXPECT_EQ(c.buckets[2], 0u);
  EXPECT_EQ(c.buckets[3], 1u);
  EXPECT_EQ(c.count(), 5u);
  EXPECT_EQ(c.sum, 1'000'000u + 1'001'000u + 5'000'000'000u);
  h.reset();
  EXPECT_EQ(h.read().count(), 0u);
}

TEST(MetricsHistogram, CountsSizesInTheirOwnUnitAndWritesTheirSumUnscaled) {
  wheel::MetricsHistogram<3> h({1, 4, 16}, 1);  // records: bounds and values in one unit
  for (const std::uint64_t v : {0u, 1u, 2u, 4u, 5u, 17u}) h.observe_value(v);
  const auto c = h.read();
  EXPECT_EQ(c.buckets[0], 2u);
  EXPECT_EQ(c.buckets[1], 2u);
  EXPECT_EQ(c.buckets[2], 1u);
  EXPECT_EQ(c.buckets[3], 1u);
  EXPECT_EQ(c.sum, 29u);
  PrometheusText t;
  t.family("x_records", "histogram", "sizes");
  t.histogram("x_records", std::array<double, 3>{1, 4, 16}, c, 1);
  const auto e = parse_exposition(t.text());
  EXPECT_EQ(e.value("x_records_sum"), 29);
  EXPECT_EQ(e.value("x_records_bucket", {{"le", "4"}}), 4);
  EXPECT_EQ(e.value("x_records_count"), 6);
}

TEST(ServerMetrics, RenderedTextFollowsTheFormatAndNamesEveryMetric) {
  // Each plain value and the metric it must come out as.
  struct Plain {
    std::uint64_t ServerMetricsValues::*field;
    std::uint64_t value;
    const char* metric;
  };
  const Plain plain[] = {
      {&ServerMetricsValues::connections_open, 7, "wheel_connections_open"},
      {&ServerMetricsValues::accepted, 20, "wheel_connections_accepted_total"},
      {&ServerMetricsValues::heartbeats_sent, 4, "wheel_heartbeats_sent_total"},
      {&ServerMetricsValues::pings, 5, "wheel_pings_total"},
      {&ServerMetricsValues::delayed_pending, 6, "wheel_delayed_pending"},
      {&ServerMetricsValues::delayed_sent, 8, "wheel_delayed_sent_total"},
      {&ServerMetricsValues::bytes_received, 100, "wheel_bytes_received_total"},
      {&ServerMetricsValues::bytes_sent, 200, "wheel_bytes_sent_total"},
      {&ServerMetricsValues::timer_pending_timeouts, 9, "wheel_timer_pending_timeouts"}};
  ServerMetricsValues v;
  for (const Plain& p : plain) v.*p.field = p.value;
  v.rejected_full = 2;
  v.rejected_emfile = 1;
  v.closed[static_cast<std::size_t>(CloseReason::kReaderIdle)] = 10;
  v.closed[static_cast<std::size_t>(CloseReason::kQuit)] = 3;
  v.idle_close_lateness.buckets[0] = 4;
  v.idle_close_lateness.buckets[3] = 5;
  v.idle_close_lateness.buckets.back() = 1;
  v.idle_close_lateness.sum = 1'500'000'000;
  v.tick_lag.buckets[1] = 2;
  const auto e = parse_exposition(wheel::server::render_server_metrics(v, 3));
  for (const Plain& p : plain) EXPECT_EQ(e.value(p.metric), p.value) << p.metric;
  EXPECT_EQ(e.families.at("wheel_connections_open").type, "gauge");
  EXPECT_EQ(e.value("wheel_connections_rejected_total", {{"reason", "full"}}), 2);
  EXPECT_EQ(e.value("wheel_connections_rejected_total", {{"reason", "emfile"}}), 1);
  EXPECT_EQ(e.families.at("wheel_connections_closed_total").type, "counter");
  for (const char* reason :
       {"reader_idle", "writer_idle", "all_idle", "quit", "peer", "slow_consumer", "line_too_long",
        "error", "shutdown", "worker_lost"}) {
    EXPECT_NO_THROW(e.value("wheel_connections_closed_total", {{"reason", reason}})) << reason;
  }
  EXPECT_EQ(e.value("wheel_connections_closed_total", {{"reason", "reader_idle"}}), 10);
  EXPECT_EQ(e.value("wheel_connections_closed_total", {{"reason", "quit"}}), 3);
  EXPECT_EQ(e.value("wheel_workers"), 3);
  EXPECT_EQ(e.families.at("wheel_idle_close_lateness_seconds").type, "histogram");
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_bucket", {{"le", "0.001"}}), 4);
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_bucket", {{"le", "0.01"}}), 9);
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_bucket", {{"le", "+Inf"}}), 10);
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_count"), 10);
  EXPECT_DOUBLE_EQ(e.value("wheel_idle_close_lateness_seconds_sum"), 1.5);
  EXPECT_EQ(e.value("wheel_timer_tick_lag_seconds_count"), 2);
  for (const auto& [name, family] : e.families) {
    EXPECT_TRUE(family.has_help) << name;
    if (family.type == "counter") {
      EXPECT_TRUE(name.ends_with("_total")) << name;
    }
  }
}

// ---- the shared slots --------------------------------------------------------------------

TEST(ServerMetricsRegion, SlotsAreCacheLineAlignedAndSharedWithAForkedChild) {
  static_assert(alignof(wheel::server::ServerMetricsSlot) == 64);
  ServerMetricsRegion region(3);
  for (std::size_t i = 0; i < region.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&region.slot(i)) % 64, 0u);
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a worker: writes only its own slot
    ServerMetricsValues v;
    v.accepted = 41;
    v.connections_open = 2;
    region.slot(1).publish(v);
    region.slot(1).idle_close_lateness.observe(3ms);
    region.slot(1).tick_lag.observe(50us);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const ServerMetricsValues seen = region.slot(1).read();
  EXPECT_EQ(seen.accepted, 41u);
  EXPECT_EQ(seen.connections_open, 2u);
  EXPECT_EQ(seen.idle_close_lateness.count(), 1u);
  EXPECT_EQ(seen.tick_lag.count(), 1u);
  EXPECT_EQ(region.slot(0).read().accepted, 0u);
  // A dead worker's counters are folded into a total, its gauges are not; the slot restarts.
  ServerMetricsValues total;
  total.add_counters(seen);
  region.slot(1).reset();
  EXPECT_EQ(total.accepted, 41u);
  EXPECT_EQ(total.connections_open, 0u);
  EXPECT_EQ(total.idle_close_lateness.count(), 1u);
  EXPECT_EQ(region.slot(1).read().accepted, 0u);
  ServerMetricsValues live;
  live.add_all(seen);
  EXPECT_EQ(live.connections_open, 2u);
}

// Every plain field with a value of its own (closed_worker_lost is the supervisor's, never in a
// slot).
ServerMetricsValues distinct_values() {
  ServerMetricsValues v{.connections_open = 1,
                        .delayed_pending = 2,
                        .timer_pending_timeouts = 3,
                        .accepted = 4,
                        .rejected_full = 5,
                        .rejected_emfile = 6,
                        .heartbeats_sent = 7,
                        .pings = 8,
                        .delayed_sent = 9,
                        .bytes_received = 10,
                        .bytes_sent = 11,
                        .idle_close_lateness = {},  // the histograms have tests of their own
                        .tick_lag = {}};
  for (std::size_t i = 0; i < v.closed.size(); ++i) v.closed[i] = 20 + i;
  return v;
}

// The rendered text names every field, so equal texts mean equal fields.
TEST(ServerMetricsSlot, EveryFieldIsPublishedReadAndSummed) {
  ServerMetricsRegion region(1);
  const ServerMetricsValues v = distinct_values();
  region.slot(0).publish(v);
  const ServerMetricsValues seen = region.slot(0).read();
  EXPECT_EQ(render_server_metrics(seen, 1), render_server_metrics(v, 1));

  ServerMetricsValues counters_only = v;  // what a dead worker leaves behind
  counters_only.connections_open = 0;
  counters_only.delayed_pending = 0;
  counters_only.timer_pending_timeouts = 0;
  ServerMetricsValues total;
  total.add_counters(seen);
  EXPECT_EQ(render_server_metrics(total, 1), render_server_metrics(counters_only, 1));
  ServerMetricsValues live;
  live.add_all(seen);
  EXPECT_EQ(render_server_metrics(live, 1), render_server_metrics(v, 1));

  region.slot(0).reset();
  EXPECT_EQ(render_server_metrics(region.slot(0).read(), 1),
            render_server_metrics(ServerMetricsValues{}, 1));
}

}  // namespace
}  // namespace wheel::server
