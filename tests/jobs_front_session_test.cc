// SPDX-License-Identifier: Apache-2.0
// A session's tubes are the front end's (SessionTubes, issue 31 item 2): use, watch, ignore,
// list-tube-used and list-tubes-watched are answered by beanstalkd's rules in the front, and
// the backend only hears what changes (BeanstalkBackend::change_tubes) and reads the tubes.
// SessionTubes alone, then the front over the in-process queue (in-process, real sockets) with
// a recording backend between them. That a tube is kept while used or watched, on both
// backends, is jobs_protocol_test's (TubesLiveWhileUsedOrWatchedOnEveryBackend).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/embedded_queue_server.h"
#include "wheel/jobs/server/session_tubes.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

namespace bs = beanstalk;
using wheel_test::Client;

struct Change {
  TubeChange change;
  std::string tube;
  bool operator==(const Change&) const = default;
};

// Runs `request` on `tubes`, recording the changes offered into `seen` and accepting them
// unless `refuse`; returns the reply without "\r\n".
std::string run(SessionTubes& tubes, const bs::Request& request, std::vector<Change>* seen,
                bool refuse = false) {
  std::string out;
  tubes.run(
      request,
      [&](TubeChange change, std::string_view tube) {
        if (seen != nullptr) seen->push_back({change, std::string(tube)});
        return !refuse;
      },
      out);
  return out.substr(0, out.find("\r\n"));
}

TEST(SessionTubesTest, UseWatchAndIgnoreFollowBeanstalkdsRules) {
  SessionTubes tubes(3);
  std::vector<Change> seen;
  EXPECT_EQ(tubes.used(), "default");
  EXPECT_EQ(tubes.watched(), std::vector<std::string>{"default"});
  EXPECT_EQ(run(tubes, bs::Use{"a"}, &seen), "USING a");
  EXPECT_EQ(run(tubes, bs::Use{"a"}, &seen), "USING a");  // already used: nothing to change
  EXPECT_EQ(run(tubes, bs::Watch{"b"}, &seen), "WATCHING 2");
  EXPECT_EQ(run(tubes, bs::Watch{"b"}, &seen), "WATCHING 2");  // already watched
  EXPECT_EQ(run(tubes, bs::Watch{"c"}, &seen), "WATCHING 3");
  EXPECT_EQ(run(tubes, bs::Watch{"d"}, &seen), "OUT_OF_MEMORY");  // the bound: 3
  EXPECT_EQ(run(tubes, bs::Ignore{"nosuch"}, &seen), "WATCHING 3");
  EXPECT_EQ(run(tubes, bs::Ignore{"default"}, &seen), "WATCHING 2");
  EXPECT_EQ(run(tubes, bs::Ignore{"b"}, &seen), "WATCHING 1");
  EXPECT_EQ(run(tubes, bs::Ignore{"c"}, &seen), "NOT_IGNORED");  // the last one stays
  EXPECT_EQ(run(tubes, bs::ListTubeUsed{}, &seen), "USING a");
  EXPECT_EQ(run(tubes, bs::ListTubesWatched{}, &seen), "OK 8");
  EXPECT_EQ(tubes.watched(), std::vector<std::string>{"c"});
  // The backend heard exactly the changes, each before it was made.
  const std::vector<Change> expected{{TubeChange::kUse, "a"},
                                     {TubeChange::kWatch, "b"},
                                     {TubeChange::kWatch, "c"},
                                     {TubeChange::kIgnore, "default"},
                                     {TubeChange::kIgnore, "b"}};
  EXPECT_EQ(seen, expected);
}

TEST(SessionTubesTest, ATubeTheBackendRefusesIsOutOfMemoryAndChangesNothing) {
  SessionTubes tubes(10);
  EXPECT_EQ(run(tubes, bs::Use{"a"}, nullptr, /*refuse=*/true), "OUT_OF_MEMORY");
  EXPECT_EQ(run(tubes, bs::Watch{"b"}, nullptr, /*refuse=*/true), "OUT_OF_MEMORY");
  EXPECT_EQ(tubes.used(), "default");
  EXPECT_EQ(tubes.watched(), std::vector<std::string>{"default"});
}

TEST(SessionTubesTest, ListTubesWatchedKeepsTheOrderWatched) {
  SessionTubes tubes(10);
  for (const char* t : {"z", "a", "m"}) run(tubes, bs::Watch{t}, nullptr);
  std::string out;
  tubes.run(
      bs::ListTubesWatched{}, [](TubeChange, std::string_view) { return true; }, out);
  EXPECT_EQ(out, "OK 26\r\n---\n- default\n- z\n- a\n- m\n\r\n");
  EXPECT_TRUE(SessionTubes::runs(bs::Request(bs::Use{"x"})));
  EXPECT_FALSE(SessionTubes::runs(bs::Request(bs::ListTubes{})));
  EXPECT_FALSE(SessionTubes::runs(bs::Request(bs::Reserve{})));
}

// What the front hands the queue's backend: every call forwarded, the requests admitted and
// run recorded by their kind, and the tube changes. Loop thread only.
struct Handed {
  std::vector<std::size_t> requests;  // Request::index() of each admit() and run()
  std::vector<Change> changes;
};

class RecordingBackend final : public BeanstalkBackend {
 public:
  RecordingBackend(BeanstalkBackend& inner, std::shared_ptr<Handed> handed)
      : inner_(inner), handed_(std::move(handed)) {}
  void attach(BeanstalkFront& front, net::LoopTimer& timer) override {
    inner_.attach(front, timer);
  }
  void open(std::uint64_t conn, const SessionTubes& tubes) override { inner_.open(conn, tubes); }
  void close(std::uint64_t conn) override { inner_.close(conn); }
  bool change_tubes(std::uint64_t conn, TubeChange change, std::string_view tube) override {
    handed_->changes.push_back({change, std::string(tube)});
    return inner_.change_tubes(conn, change, tube);
  }
  bs::CommandCounts& command_counts() override { return inner_.command_counts(); }
  Admit admit(std::uint64_t conn, const bs::Request& request, std::size_t in_flight) override {
    handed_->requests.push_back(request.index());
    return inner_.admit(conn, request, in_flight);
  }
  Flow run(std::uint64_t conn, bs::Request&& request, ReplySlot slot) override {
    handed_->requests.push_back(request.index());
    return inner_.run(conn, std::move(request), slot);
  }
  void end_batch(std::uint64_t conn) override { inner_.end_batch(conn); }
  void after_batch() override { inner_.after_batch(); }
  InFlightLimits in_flight_limits() const override { return inner_.in_flight_limits(); }
  std::size_t held_reply_bytes(std::uint64_t conn) const override {
    return inner_.held_reply_bytes(conn);
  }
  bool gathering() const override { return inner_.gathering(); }
  void set_draining() override { inner_.set_draining(); }
  void shutdown(std::function<void()> done) override { inner_.shutdown(std::move(done)); }
  void detach() override { inner_.detach(); }

 private:
  BeanstalkBackend& inner_;
  std::shared_ptr<Handed> handed_;
};

class FrontSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::warn); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
  // A server whose queue's backend is behind a RecordingBackend writing to handed_.
  std::unique_ptr<wheel_test::EmbeddedQueueServer> start(JobQueueLimits limits = {}) {
    wheel_test::EmbeddedQueueOptions options;
    options.limits = limits;
    options.wrap = [handed = handed_](BeanstalkBackend& inner) {
      return std::make_unique<RecordingBackend>(inner, handed);
    };
    return std::make_unique<wheel_test::EmbeddedQueueServer>(std::move(options));
  }
  // What the backend was handed, read on the loop thread.
  Handed handed(wheel_test::EmbeddedQueueServer& server) {
    Handed copy;
    EXPECT_TRUE(server.run([&] { copy = *handed_; }));
    return copy;
  }
  std::shared_ptr<Handed> handed_ = std::make_shared<Handed>();
};

// The place of request kind T in beanstalk::Request.
template <class T>
std::size_t index_of() {
  return bs::Request(T{}).index();
}

TEST_F(FrontSessionTest, TheBackendNeverSeesTheSessionsRequestsOnlyItsChanges) {
  auto server = start();
  ASSERT_NE(server->port(), 0);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.ask("use t1\r\n"), "USING t1");
  EXPECT_EQ(c.ask("watch t1\r\n"), "WATCHING 2");
  EXPECT_EQ(c.ask("watch t1\r\n"), "WATCHING 2");
  EXPECT_EQ(c.ask("ignore default\r\n"), "WATCHING 1");
  EXPECT_EQ(c.ask("ignore t1\r\n"), "NOT_IGNORED");
  EXPECT_EQ(c.ask("list-tube-used\r\n"), "USING t1");
  EXPECT_EQ(c.yaml("list-tubes-watched\r\n"), "---\n- t1\n\r\n");
  // Pipelined among the backend's requests, each in its place: put goes to t1, the reserve
  // takes from t1 only.
  c.send("put 0 0 60 1\r\na\r\nuse t2\r\nput 0 0 60 1\r\nb\r\nreserve-with-timeout 0\r\n");
  EXPECT_EQ(c.line(), "INSERTED 1");
  EXPECT_EQ(c.line(), "USING t2");
  EXPECT_EQ(c.line(), "INSERTED 2");
  EXPECT_EQ(c.line(), "RESERVED 1 1");
  EXPECT_EQ(c.bytes(3), "a\r\n");
  const std::string t2 = c.yaml("stats-tube t2\r\n");
  EXPECT_NE(t2.find("current-jobs-ready: 1\n"), std::string::npos) << t2;
  EXPECT_NE(t2.find("current-using: 1\n"), std::string::npos) << t2;
  // stats still counts them (the front counts into the backend's counts).
  const std::string stats = c.yaml("stats\r\n");
  for (const char* line : {"cmd-use: 2\n", "cmd-watch: 2\n", "cmd-ignore: 2\n",
                           "cmd-list-tube-used: 1\n", "cmd-list-tubes-watched: 1\n"}) {
    EXPECT_NE(stats.find(line), std::string::npos) << line << stats;
  }
  const Handed h = handed(*server);
  for (const std::size_t kind : {index_of<bs::Use>(), index_of<bs::Watch>(), index_of<bs::Ignore>(),
                                 index_of<bs::ListTubeUsed>(), index_of<bs::ListTubesWatched>()}) {
    EXPECT_EQ(std::count(h.requests.begin(), h.requests.end(), kind), 0) << kind;
  }
  EXPECT_EQ(std::count(h.requests.begin(), h.requests.end(), index_of<bs::Put>()),
            4);  // admit, run
  const std::vector<Change> expected{{TubeChange::kUse, "t1"},
                                     {TubeChange::kWatch, "t1"},
                                     {TubeChange::kIgnore, "default"},
                                     {TubeChange::kUse, "t2"}};
  EXPECT_EQ(h.changes, expected);
}

// The queue refuses a tube beyond its max_tubes: the front answers OUT_OF_MEMORY and the
// session keeps its tubes.
TEST_F(FrontSessionTest, ATubeBeyondTheQueuesLimitIsOutOfMemoryAndTheSessionIsUnchanged) {
  auto server = start(JobQueueLimits{.max_tubes = 2});
  ASSERT_NE(server->port(), 0);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.ask("use t1\r\n"), "USING t1");
  EXPECT_EQ(c.ask("use t2\r\n"), "OUT_OF_MEMORY");  // a third tube
  EXPECT_EQ(c.ask("watch t2\r\n"), "OUT_OF_MEMORY");
  EXPECT_EQ(c.ask("list-tube-used\r\n"), "USING t1");
  EXPECT_EQ(c.yaml("list-tubes-watched\r\n"), "---\n- default\n\r\n");
  EXPECT_EQ(c.ask("watch t1\r\n"), "WATCHING 2");  // a tube that exists is fine
}

}  // namespace
}  // namespace wheel::jobs
