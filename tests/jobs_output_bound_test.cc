// SPDX-License-Identifier: Apache-2.0
// The output bound of both beanstalkd handlers (BeanstalkServerHandler on a JobQueue,
// RedisJobsHandler on a real redis-server): a client that pipelines thousands of peeks or
// list-tubes in one write and reads nothing makes the server hold at most max_queued_output plus
// one reply (TcpServerCounters::max_queued_output), is not closed, does not stop the other
// clients, and gets every reply once it reads.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <uv.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "support/beanstalk_client.h"
#include "support/redis_server.h"
#include "wheel/jobs/fleet/redis_jobs_handler.h"
#include "wheel/jobs/server/beanstalk_server_handler.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using wheel_test::Client;
using namespace std::chrono_literals;

constexpr std::size_t kBound = std::size_t{1} << 20;  // both handlers' max_queued_output
constexpr std::size_t kJob = 65'535;
// "FOUND <id> 65535\r\n" + body + "\r\n"
constexpr std::size_t kPeekReply = kJob + 32;

// As wheel-jobs sets it: the bound, one job body and a header line.
net::TcpServerOptions tcp_options() {
  net::TcpServerOptions o;
  o.framing = net::Framing::kBytes;
  o.max_output = kBound + kJob + 4096;
  o.shutdown_grace = std::chrono::milliseconds(200);
  return o;
}

// A server on its own loop thread: `serve` builds it there, hands over its TcpServer once it
// listens (or nullptr), runs the loop until stop() and leaves the server's last counters.
class Embedded {
 public:
  using Serve =
      std::function<void(uv_loop_t*, std::promise<net::TcpServer*>&, net::TcpServerCounters&)>;
  explicit Embedded(Serve serve) {
    std::promise<net::TcpServer*> ready;
    std::future<net::TcpServer*> server = ready.get_future();
    thread_ = std::thread([this, serve, &ready] {
      uv_loop_t loop;
      uv_loop_init(&loop);
      serve(&loop, ready, counters_);
      uv_run(&loop, UV_RUN_DEFAULT);
      uv_loop_close(&loop);
    });
    server_ = server.get();
    if (net::TcpServer* s = server_.load()) port_ = s->port();
  }
  ~Embedded() { stop(); }
  int port() const { return port_; }
  // Shuts down (safe from any thread); the server's counters at the end.
  net::TcpServerCounters stop() {
    if (net::TcpServer* s = server_.exchange(nullptr)) s->shutdown();
    if (thread_.joinable()) thread_.join();
    return counters_;
  }

 private:
  std::thread thread_;
  std::atomic<net::TcpServer*> server_{nullptr};
  int port_ = 0;
  net::TcpServerCounters counters_;
};

// The memory-only local queue: queue, dispatcher, handler and server on the loop thread.
void serve_local(uv_loop_t* loop, std::promise<net::TcpServer*>& ready,
                 net::TcpServerCounters& counters) {
  MemoryOnlyJournal journal;
  JobQueue queue({}, &journal, Millis(static_cast<std::int64_t>(uv_now(loop))));
  BeanstalkDispatcher dispatcher(queue, {});
  BeanstalkServerOptions options;
  options.max_queued_output = kBound;
  BeanstalkServerHandler handler(queue, journal, dispatcher, options);
  net::TcpServer server(loop, tcp_options(), handler);
  server.listen();
  handler.attach(server);
  ready.set_value(&server);
  uv_run(loop, UV_RUN_DEFAULT);
  counters = server.counters();
}

// The Redis store on the test's redis-server, as wheel-jobs --store wires it.
Embedded::Serve redis_server(int redis_port) {
  return [redis_port](uv_loop_t* loop, std::promise<net::TcpServer*>& ready,
                      net::TcpServerCounters& counters) {
    RedisClientOptions co;
    co.endpoint.host = "127.0.0.1";
    co.endpoint.port = static_cast<std::uint16_t>(redis_port);
    co.command_timeout = std::chrono::milliseconds(5000);
    RedisClient client(loop, co);
    RedisClient events(loop, co);
    RedisStore store(client, RedisStoreOptions{"t:"});
    RedisJobsOptions options;
    options.max_queued_output = kBound;
    RedisJobsHandler handler(store, events, options);
    net::TcpServer server(loop, tcp_options(), handler);
    handler.on_shutdown_also([&] {
      client.stop();
      events.stop();
    });
    server.listen();
    client.start();
    events.start();
    handler.attach(server);
    ready.set_value(&server);
    uv_run(loop, UV_RUN_DEFAULT);
    counters = server.counters();
    client.stop();
    events.stop();
    uv_run(loop, UV_RUN_DEFAULT);
  };
}

class OutputBoundTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
};

// Puts one job of kJob bytes through `c`; its id.
std::string put_big(Client& c) {
  const std::string reply =
      c.ask("put 0 0 60 " + std::to_string(kJob) + "\r\n" + std::string(kJob, 'j') + "\r\n");
  EXPECT_EQ(reply.rfind("INSERTED ", 0), 0u) << reply;
  return reply.substr(9);
}

// 8,192 peeks of a 65,535-byte job in one 64 KiB write would be 512 MiB of replies. The greedy
// client reads the first, stops; another client is answered; the greedy one then reads 300
// more (far more than the bound and the kernel's buffers hold: held requests resumed).
void pipelined_peeks_stay_bounded(Embedded& server) {
  Client other(server.port());
  ASSERT_TRUE(other.connected());
  const std::string id = put_big(other);
  Client greedy(server.port());
  std::string peeks;
  for (int i = 0; i < 8192; ++i) peeks += "peek " + id + "\r\n";
  greedy.send(peeks);
  ASSERT_EQ(greedy.line(), "FOUND " + id + " " + std::to_string(kJob));
  ASSERT_EQ(greedy.bytes(kJob + 2).size(), kJob + 2);
  EXPECT_EQ(other.ask("peek " + id + "\r\n"), "FOUND " + id + " " + std::to_string(kJob));
  EXPECT_EQ(other.bytes(kJob + 2).size(), kJob + 2);
  // The Redis handler answers one peek per round trip: an unbounded one would pile up replies
  // while the greedy client reads nothing. (Bounded, the wait changes nothing.)
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(other.ask("list-tube-used\r\n"), "USING default");
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(greedy.line(), "FOUND " + id + " " + std::to_string(kJob)) << "reply " << i;
    ASSERT_EQ(greedy.bytes(kJob + 2).size(), kJob + 2);
  }
  greedy.close_now();
  const net::TcpServerCounters counters = server.stop();
  EXPECT_EQ(counters.slow_consumers, 0u);
  EXPECT_LE(counters.max_queued_output, kBound + kPeekReply);
}

TEST_F(OutputBoundTest, LocalPipelinedPeeksOfABigJobHoldAtMostTheBoundPlusOneReply) {
  Embedded server(serve_local);
  ASSERT_NE(server.port(), 0);
  pipelined_peeks_stay_bounded(server);
}

TEST_F(OutputBoundTest, RedisPipelinedPeeksOfABigJobHoldAtMostTheBoundPlusOneReply) {
  wheel_test::RedisServer redis;
  ASSERT_TRUE(redis.running());
  Embedded server(redis_server(redis.port()));
  ASSERT_NE(server.port(), 0);
  pipelined_peeks_stay_bounded(server);
}

// 1,000 tubes of 200-character names: a list-tubes reply of about 200 KB; 2,000 of them in one
// write would be 400 MB.
TEST_F(OutputBoundTest, LocalPipelinedListTubesHoldAtMostTheBoundPlusOneReply) {
  Embedded server(serve_local);
  ASSERT_NE(server.port(), 0);
  Client maker(server.port());
  std::string requests;
  for (int i = 0; i < 1000; ++i) {
    std::string name = "t" + std::to_string(i);
    name.resize(200, 'n');
    requests += "use " + name + "\r\nput 0 0 60 1\r\nx\r\n";
  }
  maker.send(requests);
  for (int i = 0; i < 2000; ++i) ASSERT_FALSE(maker.line().empty()) << "reply " << i;
  const std::string list = maker.ask("list-tubes\r\n");
  ASSERT_EQ(list.rfind("OK ", 0), 0u) << list;
  const std::size_t reply = list.size() + 2 + std::stoul(list.substr(3)) + 2;
  ASSERT_GT(reply, 200'000u);
  maker.bytes(reply - list.size() - 2);

  Client greedy(server.port());
  std::string lists;
  for (int i = 0; i < 2000; ++i) lists += "list-tubes\r\n";
  greedy.send(lists);
  EXPECT_EQ(greedy.line(), list);
  EXPECT_EQ(maker.ask("list-tube-used\r\n"), "USING t999" + std::string(196, 'n'));
  for (int i = 0; i < 100; ++i) {  // 20 MB: far past the bound and the kernel's buffers
    ASSERT_EQ(greedy.bytes(reply - list.size() - 2).size(), reply - list.size() - 2);
    ASSERT_EQ(greedy.line(), list) << "reply " << i;
  }
  greedy.close_now();
  const net::TcpServerCounters counters = server.stop();
  EXPECT_EQ(counters.slow_consumers, 0u);
  EXPECT_LE(counters.max_queued_output, kBound + reply);
}

}  // namespace
}  // namespace wheel::jobs
