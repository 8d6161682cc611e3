// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --store redis:// with a pipelining client: a connection's consecutive puts and
// deletes go to Redis together (the store batches them into a few scripts), their replies come
// back in request order, any other request waits for them (a barrier) but a reserve behind
// deletes, which runs with them and still after them in Redis, and Redis down answers each with
// INTERNAL_ERROR in order.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/beanstalk_session.h"
#include "support/metrics_scrape.h"
#include "support/redis_server.h"
#include "support/wheel_jobs_node.h"

namespace {

using wheel_test::BeanstalkSession;
using wheel_test::field;
using wheel_test::redis_calls;
using wheel_test::scrape;
using wheel_test::start_node;

std::string put_line(const std::string& body) {
  return "put 0 0 60 " + std::to_string(body.size()) + "\r\n" + body + "\r\n";
}

class WheelJobsFleetPipelineTest : public ::testing::Test {
 protected:
  // Jobs 1..puts (bodies "j1"...) from `producer`, then `worker` holds 1..reserves.
  static void put_and_hold(BeanstalkSession& producer, BeanstalkSession& worker, int puts,
                           int reserves) {
    for (int i = 1; i <= puts; ++i) {
      ASSERT_EQ(producer.put(0, "0", "60", "j" + std::to_string(i)),
                "INSERTED " + std::to_string(i));
    }
    for (int i = 1; i <= reserves; ++i) {
      const std::string want =
          "RESERVED " + std::to_string(i) + " " + std::to_string(std::to_string(i).size() + 1);
      ASSERT_EQ(worker.call("reserve"), want);
    }
  }

  wheel_test::RedisServer redis_;
};

TEST_F(WheelJobsFleetPipelineTest, PipelinedPutsGoAsAFewScriptsAndAnswerInOrder) {
  auto node = start_node(redis_);
  BeanstalkSession c(node->port());
  ASSERT_EQ(c.put(0, "0", "60", "warm"), "INSERTED 1");  // scripts loaded, connection up
  const long long before = redis_calls(redis_.port(), "evalsha");
  constexpr int kPuts = 300;
  std::string burst;
  for (int i = 0; i < kPuts; ++i) burst += put_line("job-" + std::to_string(i));
  ASSERT_TRUE(c.send_all(burst));
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_EQ(c.read_reply(), "INSERTED " + std::to_string(i + 2)) << "reply " << i;
  }
  const long long scripts = redis_calls(redis_.port(), "evalsha") - before;
  std::printf("%d pipelined puts on one connection: %lld scripts\n", kPuts, scripts);
  EXPECT_LE(scripts, 30) << "the puts went one script each: the connection ran them serially";
  // The bodies went to the ids in order.
  std::string body;
  ASSERT_EQ(c.call("peek 2", nullptr, &body), "FOUND 2 5");
  EXPECT_EQ(body, "job-0");
  ASSERT_EQ(c.call("peek 301", nullptr, &body), "FOUND 301 7");
  EXPECT_EQ(body, "job-299");
  EXPECT_EQ(node->stop(), 0);
}

TEST_F(WheelJobsFleetPipelineTest, AUseInThePipelineIsABarrierAndPicksTheTubeOfLaterPuts) {
  auto node = start_node(redis_);
  BeanstalkSession c(node->port());
  std::string burst = "use alpha\r\n";
  for (int i = 0; i < 5; ++i) burst += put_line("a" + std::to_string(i));
  burst += "use beta\r\n";
  for (int i = 0; i < 5; ++i) burst += put_line("b" + std::to_string(i));
  burst += "list-tube-used\r\n";
  ASSERT_TRUE(c.send_all(burst));
  EXPECT_EQ(c.read_reply(), "USING alpha");
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(c.read_reply(), "INSERTED " + std::to_string(i));
  EXPECT_EQ(c.read_reply(), "USING beta");
  for (int i = 6; i <= 10; ++i) EXPECT_EQ(c.read_reply(), "INSERTED " + std::to_string(i));
  EXPECT_EQ(c.read_reply(), "USING beta");
  for (int id = 1; id <= 10; ++id) {
    std::string yaml;
    ASSERT_EQ(c.call("stats-job " + std::to_string(id), nullptr, &yaml).substr(0, 3), "OK ");
    EXPECT_EQ(field(yaml, "tube"), id <= 5 ? "alpha" : "beta") << "job " << id;
  }
  EXPECT_EQ(node->stop(), 0);
}

TEST_F(WheelJobsFleetPipelineTest, PipelinedDeletesAnswerInOrderADoubleDeleteIsNotFound) {
  auto node = start_node(redis_);
  BeanstalkSession producer(node->port()), worker(node->port());
  ASSERT_NO_FATAL_FAILURE(put_and_hold(producer, worker, 4, 3));
  // Job 4 is ready (no lease: deleted as beanstalkd deletes a ready job); 99 never existed.
  ASSERT_TRUE(worker.send_all(
      "delete 1\r\ndelete 2\r\ndelete 1\r\ndelete 3\r\ndelete 99\r\ndelete 4\r\ndelete 4\r\n"
      "stats-job 2\r\n"));
  int n = 0;
  for (const char* want :
       {"DELETED", "DELETED", "NOT_FOUND", "DELETED", "NOT_FOUND", "DELETED", "NOT_FOUND"}) {
    EXPECT_EQ(worker.read_reply(), want) << "reply " << n++;
  }
  EXPECT_EQ(worker.read_reply(), "NOT_FOUND") << "stats-job ran before the deletes answered";
  EXPECT_EQ(worker.call("peek-ready"), "NOT_FOUND");
  EXPECT_EQ(node->stop(), 0);
}

// A worker's turn: the deletes of what it held and its next reserve in one write. The reserve
// runs beside the deletes; its reply still comes after theirs, and the requests after it wait
// for it. A put ahead of a reserve is waited for: the reserve sees its job. A quit behind a
// delete closes after the delete's reply.
TEST_F(WheelJobsFleetPipelineTest, AReserveBehindDeletesRunsWithThemAndAnswersAfterThem) {
  auto node = start_node(redis_);
  BeanstalkSession producer(node->port()), worker(node->port());
  ASSERT_NO_FATAL_FAILURE(put_and_hold(producer, worker, 4, 3));
  ASSERT_TRUE(worker.send_all("delete 1\r\ndelete 2\r\ndelete 3\r\nreserve\r\ndelete 4\r\n"));
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(worker.read_reply(), "DELETED") << "delete " << i;
  std::string body;
  EXPECT_EQ(worker.read_reply(&body), "RESERVED 4 2");
  EXPECT_EQ(body, "j4");
  EXPECT_EQ(worker.read_reply(), "DELETED") << "the delete behind the reserve";
  ASSERT_TRUE(worker.send_all(put_line("mine") + "reserve-with-timeout 0\r\n"));
  EXPECT_EQ(worker.read_reply(), "INSERTED 5");
  EXPECT_EQ(worker.read_reply(&body), "RESERVED 5 4") << "the reserve ran before its put";
  EXPECT_EQ(body, "mine");
  // A quit behind a delete: the delete's reply, then the close (what is answered while Redis's
  // replies are delivered is written before the close, not lost with the connection).
  ASSERT_TRUE(worker.send_all("delete 5\r\nquit\r\n"));
  EXPECT_EQ(worker.read_reply(), "DELETED");
  EXPECT_EQ(worker.read_reply(), "") << "then the close";
  EXPECT_EQ(producer.call("peek 5"), "NOT_FOUND");
  EXPECT_EQ(node->stop(), 0);
}

// A worker's delete and its next reserve, written together, are answered in one write: Redis
// answers the delete script and the claim script in one read, and what they answer goes to each
// client after that read. (Two scripts answered in two reads cost two writes: a few may.)
TEST_F(WheelJobsFleetPipelineTest, ADeleteAndTheNextReserveAreAnsweredInOneWrite) {
  const auto metrics = static_cast<std::uint16_t>(wheel_test::free_port());
  auto node = start_node(redis_, {"--metrics-port", std::to_string(metrics)});
  BeanstalkSession producer(node->port()), worker(node->port());
  constexpr int kJobs = 21;
  ASSERT_NO_FATAL_FAILURE(put_and_hold(producer, worker, kJobs, 1));
  auto writes = [&] { return scrape(metrics).e.value("wheel_jobs_client_writes_total"); };
  const double before = writes();
  std::string body;
  for (int i = 1; i < kJobs; ++i) {
    ASSERT_TRUE(worker.send_all("delete " + std::to_string(i) + "\r\nreserve\r\n"));
    ASSERT_EQ(worker.read_reply(), "DELETED");
    const std::string next = std::to_string(i + 1);
    ASSERT_EQ(worker.read_reply(&body), "RESERVED " + next + " " + std::to_string(next.size() + 1));
  }
  const double pair_writes = writes() - before;
  EXPECT_GE(pair_writes, kJobs - 1);
  EXPECT_LT(pair_writes, 1.5 * (kJobs - 1)) << "about one write per delete and reserve";
  EXPECT_EQ(node->stop(), 0);
}

// The claim of a reserve that runs beside deletes must not overtake them in Redis: a job whose
// lease ran out is deleted by its holder's pipelined delete, never claimed again by the reserve
// behind it. The first of the deletes keeps the store's delete batch in flight, so the others
// queue while the reserve's claim could go at once.
TEST_F(WheelJobsFleetPipelineTest, AReservesClaimNeverOvertakesTheDeletesBeforeIt) {
  auto node = start_node(redis_);
  BeanstalkSession producer(node->port()), worker(node->port());
  constexpr int kHeld = 50;
  for (int i = 1; i <= kHeld; ++i) {
    ASSERT_EQ(producer.put(0, "0", "600", "held"), "INSERTED " + std::to_string(i));
    ASSERT_EQ(worker.call("reserve"), "RESERVED " + std::to_string(i) + " 4");
  }
  // Reserved last: a lease of 1 s makes any reserve meanwhile answer DEADLINE_SOON.
  const std::string shortest = std::to_string(kHeld + 1);
  ASSERT_EQ(producer.put(0, "0", "1", "short"), "INSERTED " + shortest);
  ASSERT_EQ(worker.call("reserve"), "RESERVED " + shortest + " 5");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // its lease ran out
  std::string turn;
  for (int i = 1; i <= kHeld + 1; ++i) turn += "delete " + std::to_string(i) + "\r\n";
  turn += "reserve-with-timeout 0\r\n";
  ASSERT_TRUE(worker.send_all(turn));
  for (int i = 1; i <= kHeld; ++i) ASSERT_EQ(worker.read_reply(), "DELETED") << "delete " << i;
  EXPECT_EQ(worker.read_reply(), "DELETED") << "the reserve claimed job " << shortest << " first";
  EXPECT_EQ(worker.read_reply(), "TIMED_OUT");
  EXPECT_EQ(worker.call("stats-job " + shortest), "NOT_FOUND");
  EXPECT_EQ(node->stop(), 0);
}

TEST_F(WheelJobsFleetPipelineTest, RedisDownAnswersEveryPipelinedRequestInOrder) {
  std::string burst;
  for (int i = 0; i < 40; ++i) burst += put_line("x");
  burst += "use other\r\n";
  for (int i = 0; i < 40; ++i) burst += "delete " + std::to_string(i + 1) + "\r\n";
  burst += "list-tube-used\r\n";
  auto node = start_node(redis_);
  BeanstalkSession c(node->port());
  ASSERT_EQ(c.put(0, "0", "60", "before"), "INSERTED 1");  // the node's Redis connection is up
  redis_.stop();
  ASSERT_TRUE(c.send_all(burst));
  for (int i = 0; i < 40; ++i) ASSERT_EQ(c.read_reply(), "INTERNAL_ERROR") << "put " << i;
  ASSERT_EQ(c.read_reply(), "USING other");
  for (int i = 0; i < 40; ++i) ASSERT_EQ(c.read_reply(), "INTERNAL_ERROR") << "delete " << i;
  EXPECT_EQ(c.read_reply(), "USING other");
  EXPECT_EQ(node->stop(), 0);
}

TEST_F(WheelJobsFleetPipelineTest, AConnectionClosedWithRequestsInFlightLeavesTheNodeServing) {
  auto node = start_node(redis_);
  for (int round = 0; round < 5; ++round) {
    BeanstalkSession gone(node->port());
    std::string burst;
    for (int i = 0; i < 200; ++i)
      burst += put_line("gone") + "delete " + std::to_string(i) + "\r\n";
    ASSERT_TRUE(gone.send_all(burst));
  }  // each closes with its puts and deletes in flight
  BeanstalkSession c(node->port());
  EXPECT_EQ(c.call("use after").substr(0, 5), "USING");
  const std::string reply = c.put(0, "0", "60", "still serving");
  EXPECT_EQ(reply.substr(0, 9), "INSERTED ") << reply;
  EXPECT_EQ(node->stop(), 0);
}

}  // namespace
