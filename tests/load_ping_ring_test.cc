// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <wheel/load/ping_ring.h>

#include <vector>

using namespace std::chrono_literals;
using wheel::load::PingRing;

namespace {

std::vector<std::uint32_t> advance(PingRing& ring, double now_ms) {
  std::vector<std::uint32_t> visited;
  ring.advance(now_ms, [&](std::uint32_t id) { visited.push_back(id); });
  return visited;
}

}  // namespace

TEST(LoadPingRing, OneSlotPerTickOfTheInterval) {
  EXPECT_EQ(PingRing(1s, 10ms).slot_count(), 100u);
  EXPECT_EQ(PingRing(15ms, 10ms).slot_count(), 1u);  // rounded down, at least one
  EXPECT_EQ(PingRing(0ms, 10ms).slot_count(), 1u);
}

TEST(LoadPingRing, EachConnectionOncePerLapInItsSlot) {
  PingRing ring(100ms, 10ms);  // 10 slots
  ring.add(7, 3);
  ring.add(8, 13);  // slot 3 too
  ring.add(9, 5);
  EXPECT_TRUE(advance(ring, 25).empty());  // ticks 1, 2
  EXPECT_EQ(advance(ring, 35), (std::vector<std::uint32_t>{7, 8}));
  EXPECT_TRUE(advance(ring, 39).empty());  // same tick again: nothing twice
  EXPECT_EQ(advance(ring, 55), (std::vector<std::uint32_t>{9}));
  EXPECT_EQ(advance(ring, 135), (std::vector<std::uint32_t>{7, 8}));  // the next lap
}

TEST(LoadPingRing, LateCallCatchesUpAtMostOneLap) {
  PingRing ring(100ms, 10ms);
  ring.add(1, 2);
  ring.add(2, 8);
  // 1 s late: ten laps missed, but each connection is visited once (the last lap: ticks 91..100).
  EXPECT_EQ(advance(ring, 1005), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_TRUE(advance(ring, 1009).empty());
}

TEST(LoadPingRing, ConnectionAddedLaterJoinsTheNextLap) {
  PingRing ring(50ms, 10ms);  // 5 slots
  EXPECT_TRUE(advance(ring, 42).empty());
  ring.add(4, 2);  // tick 2's slot already passed in this lap
  EXPECT_TRUE(advance(ring, 62).empty());
  EXPECT_EQ(advance(ring, 72), (std::vector<std::uint32_t>{4}));
}
