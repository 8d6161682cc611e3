// SPDX-License-Identifier: Apache-2.0
// The big case's summary (load/big_load_run.h): the arithmetic per connection and per second,
// the connections-open estimate from the kernel's socket count, and the run without a window.
#include <gtest/gtest.h>

#include <string>

#include "wheel/load/big_load_run.h"

namespace wheel::load {
namespace {

BigLoadFigures measured() {
  // 1000 connections, both ends in sockstat (+2000); over the window the server's RSS grew by
  // 1 MiB (1049 B each), PSS by 500 KiB (512 B each) and the kernel's Slab by 2000 KiB.
  const BigLoadFigures::Window window{
      .seconds = 10,
      .server_cpu_s = 0.5,
      .rss_kib = 2048,
      .pss_kib = 2548,
      .kernel = {.slab_kib = 12240, .tcp_kib = 4096, .tcp_inuse = 2010}};
  return {.connections = 1000,
          .workers = 3,
          .connect_rate_asked = 600,
          .server_start_s = 0.5,
          .load_s = 40,
          .whole_s = 41.5,
          .server_cpu_s = 7.3,
          .all_open_after_s = 2.0,
          .rss_before_kib = 1024,
          .pss_before_kib = 2048,
          .kernel_before = {.slab_kib = 10240, .tcp_kib = 0, .tcp_inuse = 10},
          .idle = window};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(BigLoadSummary, StatesTimesRateCpuAndMemoryPerConnection) {
  const std::string s = format_big_load_summary(measured(), "r.json");
  EXPECT_TRUE(has(s, "big-load: 1000 connections, 3 server workers\n")) << s;
  EXPECT_TRUE(has(s, "server start to listening 0.5 s; wheel-load 40.0 s; whole run 41.5 s")) << s;
  EXPECT_TRUE(has(s, "server CPU during the whole load: 7.3 s")) << s;
  EXPECT_TRUE(has(s, "1000 connections open after 2.0 s = 500/s (asked 600/s)")) << s;
  EXPECT_TRUE(has(s, "all open: about 1000 connections (sockstat TCP inuse 2010, 10 before)")) << s;
  EXPECT_TRUE(has(s, "idle: 50.0 ms/s over 10 s")) << s;
  EXPECT_TRUE(has(s,
                  "RSS 1.0 MiB -> 2.0 MiB, PSS 2.0 MiB -> 2.5 MiB; per connection RSS 1049 B, "
                  "PSS 512 B"))
      << s;
  EXPECT_TRUE(has(s,
                  "Slab 10.0 MiB -> 12.0 MiB (2048 B per connection); TCP socket pages 0.0 "
                  "MiB -> 4.0 MiB"))
      << s;
  EXPECT_TRUE(s.ends_with("wheel-load exit status 1; its report: r.json\n")) << s;
}

TEST(BigLoadSummary, OtherProgramsSocketsDoNotCountAsMoreThanTheRunsConnections) {
  BigLoadFigures f = measured();
  f.idle->kernel.tcp_inuse = 10 + 2 * 5000;  // someone else opened 4,000 more
  EXPECT_TRUE(has(format_big_load_summary(f, "r.json"), "all open: about 1000 connections"));
}

TEST(BigLoadSummary, ASocketCountThatFellDividesByNoZero) {
  BigLoadFigures f = measured();
  f.idle->kernel.tcp_inuse = 4;  // fewer than before: sockets closed elsewhere
  const std::string s = format_big_load_summary(f, "r.json");
  EXPECT_TRUE(has(s, "all open: about 1 connections")) << s;
  EXPECT_FALSE(has(s, "inf")) << s;
}

TEST(BigLoadSummary, ARunWithoutAnIdleWindowSaysSo) {
  BigLoadFigures f = measured();
  f.idle.reset();
  f.all_open_after_s.reset();
  f.load_status = 0;
  const std::string s = format_big_load_summary(f, "r.json");
  EXPECT_TRUE(has(s, "(no idle window: the run is too short to measure one)\n")) << s;
  EXPECT_FALSE(has(s, "connect rate held")) << s;
  EXPECT_FALSE(has(s, "all open")) << s;
  EXPECT_TRUE(s.ends_with("wheel-load exit status 0; its report: r.json\n")) << s;
}

}  // namespace
}  // namespace wheel::load
