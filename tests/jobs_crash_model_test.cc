// SPDX-License-Identifier: Apache-2.0
// The kill -9 test's checker (support/crash_model.h) on made-up histories: it must report every
// broken promise, and accept every outcome an unanswered request allows. A checker that never
// fails would hide every loss.
#include <gtest/gtest.h>

#include "support/crash_model.h"

namespace {

using wheel_test::CrashModel;
using wheel_test::Expect;

TEST(CrashBody, NamesItsPutAndIsCheckedWhole) {
  const std::string body = wheel_test::crash_body(42, 500);
  ASSERT_EQ(body.size(), 500u);
  std::uint64_t key = 0;
  EXPECT_TRUE(wheel_test::parse_crash_body(body, &key));
  EXPECT_EQ(key, 42u);
  EXPECT_FALSE(wheel_test::parse_crash_body(body.substr(0, 499), &key));  // half a body
  std::string flipped = body;
  flipped[300] ^= 1;
  EXPECT_FALSE(wheel_test::parse_crash_body(flipped, &key));
  EXPECT_FALSE(wheel_test::parse_crash_body("hello", &key));
}

// One acknowledged put (id 1, key k) and a kill at t = 1000 ms.
struct OnePut {
  explicit OnePut(std::int64_t interval_ms = 0, std::int64_t ack_ms = 10) : model(interval_ms, 0) {
    body = model.new_put(100, &key);
    model.put_acked(0, key, 1, false, ack_ms);
  }
  CrashModel model;
  std::uint64_t key = 0;
  std::string body;
};

TEST(CrashModel, AcknowledgedPutFoundWholeIsNoLoss) {
  OnePut p;
  p.model.crashed(1000);
  EXPECT_EQ(p.model.ids_to_peek(), std::vector<std::uint64_t>{1});
  p.model.peeked(1, true, p.body);
  EXPECT_EQ(p.model.stats().losses, 0u);
  EXPECT_EQ(p.model.stats().present_checked, 1u);
}

TEST(CrashModel, AcknowledgedPutMissingOrChangedIsALoss) {
  OnePut missing;
  missing.model.crashed(1000);
  missing.model.peeked(1, false, "");
  EXPECT_EQ(missing.model.stats().losses, 1u);
  OnePut changed;
  changed.model.crashed(1000);
  changed.model.peeked(1, true, changed.body.substr(1));
  EXPECT_EQ(changed.model.stats().losses, 1u);
}

TEST(CrashModel, AcknowledgedDeleteUndoneIsALossAtEachOfTheNextRestarts) {
  OnePut p;
  p.model.change_sent(1, true);
  p.model.change_answered(1, true, true, Expect::kAny, 20);
  p.model.crashed(1000);
  p.model.peeked(1, false, "");
  p.model.check_done();
  p.model.crashed(2000);
  ASSERT_EQ(p.model.ids_to_peek(), std::vector<std::uint64_t>{1});
  p.model.peeked(1, true, p.body);  // back after a second restart
  EXPECT_EQ(p.model.stats().losses, 1u);
}

TEST(CrashModel, UnansweredDeleteMayGoEitherWay) {
  for (bool found : {true, false}) {
    OnePut p;
    p.model.change_sent(1, true);
    p.model.crashed(1000);
    p.model.peeked(1, found, found ? p.body : "");
    EXPECT_EQ(p.model.stats().losses, 0u);
  }
}

TEST(CrashModel, UnansweredPutMayBeThereOnlyWhole) {
  CrashModel model;
  std::uint64_t key = 0;
  const std::string body = model.new_put(64, &key);
  model.crashed(1000);
  ASSERT_EQ(model.ids_to_peek(), std::vector<std::uint64_t>{1});  // scanned, though unnamed
  model.peeked(1, true, body);
  EXPECT_EQ(model.stats().losses, 0u);
  EXPECT_EQ(model.stats().unknown_puts_found, 1u);

  CrashModel half;
  const std::string other = half.new_put(64, &key);
  half.crashed(1000);
  half.peeked(1, true, other.substr(0, 32));
  EXPECT_EQ(half.stats().losses, 1u);
}

TEST(CrashModel, IdsMustGrowOnAConnectionAndAcrossARestart) {
  CrashModel model;
  std::uint64_t a = 0, b = 0;
  model.new_put(10, &a);
  model.new_put(10, &b);
  model.put_acked(0, a, 5, false, 1);
  model.put_acked(0, b, 4, false, 2);
  EXPECT_EQ(model.stats().losses, 1u);
  model.crashed(1000);
  std::uint64_t probe = 0;
  model.new_put(10, &probe);
  model.probe_put(probe, 3, 1001);  // below 5, seen before the kill
  EXPECT_EQ(model.stats().losses, 2u);
}

TEST(CrashModel, AcknowledgedStateIsChecked) {
  OnePut p;
  p.model.change_sent(1, false);
  p.model.change_answered(1, false, true, Expect::kBuried, 20);
  p.model.crashed(1000);
  ASSERT_EQ(p.model.states_to_check().size(), 1u);
  p.model.state_seen(1, "ready");
  EXPECT_EQ(p.model.stats().losses, 1u);
}

TEST(CrashModel, IntervalPolicyPromisesOnlyAcknowledgementsOlderThanTheInterval) {
  OnePut young(50, 980);  // acknowledged 20 ms before the kill
  young.model.crashed(1000);
  young.model.peeked(1, false, "");
  EXPECT_EQ(young.model.stats().losses, 0u);
  EXPECT_EQ(young.model.stats().young_acks, 1u);
  OnePut old(50, 900);  // 100 ms before
  old.model.crashed(1000);
  old.model.peeked(1, false, "");
  EXPECT_EQ(old.model.stats().losses, 1u);
}

}  // namespace
