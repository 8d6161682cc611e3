// SPDX-License-Identifier: Apache-2.0
// Replies and YAML bodies of beanstalkd's protocol (wheel/jobs/beanstalk_reply.h,
// beanstalk_stats.h), compared byte for byte with what beanstalkd 1.12 sends.
#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"

namespace {

using namespace wheel::jobs;
using namespace wheel::jobs::beanstalk;
using std::chrono::milliseconds;

TEST(BeanstalkReply, FixedLinesAreBeanstalkds) {
  const std::vector<std::pair<Reply, std::string>> expected = {
      {Reply::kOutOfMemory, "OUT_OF_MEMORY\r\n"},
      {Reply::kInternalError, "INTERNAL_ERROR\r\n"},
      {Reply::kBadFormat, "BAD_FORMAT\r\n"},
      {Reply::kUnknownCommand, "UNKNOWN_COMMAND\r\n"},
      {Reply::kExpectedCrlf, "EXPECTED_CRLF\r\n"},
      {Reply::kJobTooBig, "JOB_TOO_BIG\r\n"},
      {Reply::kDraining, "DRAINING\r\n"},
      {Reply::kNotFound, "NOT_FOUND\r\n"},
      {Reply::kDeadlineSoon, "DEADLINE_SOON\r\n"},
      {Reply::kTimedOut, "TIMED_OUT\r\n"},
      {Reply::kDeleted, "DELETED\r\n"},
      {Reply::kReleased, "RELEASED\r\n"},
      {Reply::kBuried, "BURIED\r\n"},
      {Reply::kKicked, "KICKED\r\n"},
      {Reply::kTouched, "TOUCHED\r\n"},
      {Reply::kPaused, "PAUSED\r\n"},
      {Reply::kNotIgnored, "NOT_IGNORED\r\n"}};
  for (const auto& [reply, line] : expected) {
    EXPECT_EQ(reply_line(reply), line);
    std::string out = "x";
    append_reply(out, reply);
    EXPECT_EQ(out, "x" + line);
  }
  EXPECT_EQ(reply_line(static_cast<Reply>(17)), "INTERNAL_ERROR\r\n");  // not a Reply
}

TEST(BeanstalkReply, ProtocolErrorsMapToTheirReplies) {
  EXPECT_EQ(reply_for(ProtocolError::kBadFormat), Reply::kBadFormat);
  EXPECT_EQ(reply_for(ProtocolError::kUnknownCommand), Reply::kUnknownCommand);
  EXPECT_EQ(reply_for(ProtocolError::kExpectedCrlf), Reply::kExpectedCrlf);
  EXPECT_EQ(reply_for(ProtocolError::kJobTooBig), Reply::kJobTooBig);
}

TEST(BeanstalkReply, LinesWithValues) {
  std::string out;
  append_inserted(out, 18446744073709551615u);
  append_buried_id(out, 7);
  append_using(out, "emails");
  append_watching(out, 2);
  append_kicked_count(out, 0);
  EXPECT_EQ(out,
            "INSERTED 18446744073709551615\r\nBURIED 7\r\nUSING emails\r\nWATCHING 2\r\n"
            "KICKED 0\r\n");
}

TEST(BeanstalkReply, JobsCarryTheirBodyAndItsLength) {
  std::string out;
  append_job(out, JobReply::kReserved, 12, std::string("a\r\n\0b", 5));
  append_job(out, JobReply::kFound, 3, "");
  EXPECT_EQ(out, std::string("RESERVED 12 5\r\na\r\n\0b\r\nFOUND 3 0\r\n\r\n", 35));
  std::string header;
  append_job_header(header, JobReply::kReserved, 1, 1'073'741'824);
  EXPECT_EQ(header, "RESERVED 1 1073741824\r\n");
}

TEST(BeanstalkReply, OkWrapsAYamlBody) {
  std::string out;
  append_ok(out, "---\n- default\n");
  EXPECT_EQ(out, "OK 14\r\n---\n- default\n\r\n");
}

TEST(BeanstalkStats, TubeListIsAYamlSequence) {
  const std::vector<std::string_view> names = {"default", "a-b", "x(1)"};
  EXPECT_EQ(tube_list_yaml(names), "---\n- default\n- a-b\n- x(1)\n");
  EXPECT_EQ(tube_list_yaml({}), "---\n");
}

TEST(BeanstalkStats, JobStatsAsBeanstalkdPrintsThem) {
  JobStats s;
  s.id = 5;
  s.tube = "emails";
  s.state = JobState::kDelayed;
  s.priority = 1024;
  s.age = milliseconds(3999);
  s.delay = milliseconds(250);  // decimal delays print in whole seconds, rounded down
  s.ttr = milliseconds(60'000);
  s.time_left = milliseconds(1500);
  s.reserves = 1;
  s.timeouts = 2;
  s.releases = 3;
  s.buries = 4;
  s.kicks = 5;
  EXPECT_EQ(job_stats_yaml(s),
            "---\nid: 5\ntube: emails\nstate: delayed\npri: 1024\nage: 3\ndelay: 0\n"
            "ttr: 60\ntime-left: 1\nfile: 0\nreserves: 1\ntimeouts: 2\nreleases: 3\n"
            "buries: 4\nkicks: 5\n");
  for (auto [state, name] :
       {std::pair{JobState::kReady, "ready"}, std::pair{JobState::kReserved, "reserved"},
        std::pair{JobState::kBuried, "buried"}}) {
    EXPECT_EQ(job_state_name(state), name);
  }
  EXPECT_EQ(job_state_name(static_cast<JobState>(4)), "ready");  // not a JobState
}

TEST(BeanstalkStats, TubeStatsAsBeanstalkdPrintsThem) {
  const TubeStats s{.name = "default",
                    .urgent = 1,
                    .ready = 2,
                    .reserved = 3,
                    .delayed = 4,
                    .buried = 5,
                    .total_jobs = 6,
                    .using_count = 7,
                    .watching = 8,
                    .waiting = 9,
                    .cmd_delete = 10,
                    .cmd_pause_tube = 11,
                    .pause = milliseconds(60'000),
                    .pause_time_left = milliseconds(59'999)};
  EXPECT_EQ(tube_stats_yaml(s),
            "---\nname: default\ncurrent-jobs-urgent: 1\ncurrent-jobs-ready: 2\n"
            "current-jobs-reserved: 3\ncurrent-jobs-delayed: 4\ncurrent-jobs-buried: 5\n"
            "total-jobs: 6\ncurrent-using: 7\ncurrent-watching: 8\ncurrent-waiting: 9\n"
            "cmd-delete: 10\ncmd-pause-tube: 11\npause: 60\npause-time-left: 59\n");
}

// The keys of beanstalkd 1.12's stats reply, in its order.
const char* const kServerStatsKeys[] = {"current-jobs-urgent",
                                        "current-jobs-ready",
                                        "current-jobs-reserved",
                                        "current-jobs-delayed",
                                        "current-jobs-buried",
                                        "cmd-put",
                                        "cmd-peek",
                                        "cmd-peek-ready",
                                        "cmd-peek-delayed",
                                        "cmd-peek-buried",
                                        "cmd-reserve",
                                        "cmd-reserve-with-timeout",
                                        "cmd-delete",
                                        "cmd-release",
                                        "cmd-use",
                                        "cmd-watch",
                                        "cmd-ignore",
                                        "cmd-bury",
                                        "cmd-kick",
                                        "cmd-touch",
                                        "cmd-stats",
                                        "cmd-stats-job",
                                        "cmd-stats-tube",
                                        "cmd-list-tubes",
                                        "cmd-list-tube-used",
                                        "cmd-list-tubes-watched",
                                        "cmd-pause-tube",
                                        "job-timeouts",
                                        "total-jobs",
                                        "max-job-size",
                                        "current-tubes",
                                        "current-connections",
                                        "current-producers",
                                        "current-workers",
                                        "current-waiting",
                                        "total-connections",
                                        "pid",
                                        "version",
                                        "rusage-utime",
                                        "rusage-stime",
                                        "uptime",
                                        "binlog-oldest-index",
                                        "binlog-current-index",
                                        "binlog-records-migrated",
                                        "binlog-records-written",
                                        "binlog-max-size",
                                        "draining",
                                        "id",
                                        "hostname",
                                        "os",
                                        "platform"};

TEST(BeanstalkStats, ServerStatsHaveBeanstalkdsKeysInItsOrder) {
  ServerStats s;
  s.commands["put"] = 3;
  s.commands["delete"] = 4;
  s.commands["pause-tube"] = 5;
  s.max_job_size = 65'535;
  s.pid = 1234;
  s.version = "0.1.0";
  s.rusage_user = std::chrono::microseconds(1'000'002);
  s.uptime = std::chrono::seconds(9);
  s.draining = true;
  s.id = "0123456789abcdef";
  s.hostname = "host";
  s.os = "#1 SMP";
  s.platform = "x86_64";
  const std::string yaml = server_stats_yaml(s);
  ASSERT_EQ(yaml.substr(0, 4), "---\n");
  std::vector<std::string> keys;
  for (std::size_t at = 4; at < yaml.size();) {
    const std::size_t end = yaml.find('\n', at);
    ASSERT_NE(end, std::string::npos);
    const std::string line = yaml.substr(at, end - at);
    keys.push_back(line.substr(0, line.find(':')));
    at = end + 1;
  }
  EXPECT_EQ(keys,
            std::vector<std::string>(std::begin(kServerStatsKeys), std::end(kServerStatsKeys)));
  for (const char* line : {"\ncmd-put: 3\n", "\ncmd-delete: 4\n", "\ncmd-pause-tube: 5\n",
                           "\nmax-job-size: 65535\n", "\npid: 1234\n", "\nversion: \"0.1.0\"\n",
                           "\nrusage-utime: 1.000002\n", "\nrusage-stime: 0.000000\n",
                           "\nuptime: 9\n", "\ndraining: true\n", "\nid: 0123456789abcdef\n",
                           "\nhostname: host\n", "\nos: #1 SMP\n", "\nplatform: x86_64\n"}) {
    EXPECT_NE(yaml.find(line), std::string::npos) << line;
  }
}

// Names come from kCommandNames by the request's place in Request; a count is found by name.
TEST(BeanstalkStats, CommandNamesAndCountsByName) {
  static_assert(command_name<Put>() == "put");
  static_assert(command_name<ReserveWithTimeout>() == "reserve-with-timeout");
  static_assert(command_name<PauseTube>() == "pause-tube");
  EXPECT_EQ(kCountedCommands.front(), "put");
  EXPECT_EQ(kCountedCommands.back(), "pause-tube");
  CommandCounts counts;
  counts["stats-tube"] = 7;
  EXPECT_EQ(counts.by_command[counted_command_index("stats-tube")], 7u);
  EXPECT_EQ(std::as_const(counts)["stats-tube"], 7u);
  EXPECT_THROW(counts["quit"], std::out_of_range);  // quit is never counted
  EXPECT_THROW(counts["cmd-put"], std::out_of_range);
}

// Every kind of request, by its index in Request, counts under the key beanstalkd 1.12 counts
// it under ("" for none): reserve-job as a reserve, kick-job as a kick.
TEST(BeanstalkStats, EachCommandCountsUnderItsKey) {
  const std::array<std::string_view, std::variant_size_v<Request>> want = {
      "cmd-put",
      "cmd-use",
      "cmd-reserve",
      "cmd-reserve-with-timeout",
      "cmd-reserve",
      "cmd-delete",
      "cmd-release",
      "cmd-bury",
      "cmd-touch",
      "cmd-watch",
      "cmd-ignore",
      "cmd-peek",
      "cmd-peek-ready",
      "cmd-peek-delayed",
      "cmd-peek-buried",
      "cmd-kick",
      "cmd-kick",
      "cmd-stats-job",
      "cmd-stats-tube",
      "cmd-stats",
      "cmd-list-tubes",
      "cmd-list-tube-used",
      "cmd-list-tubes-watched",
      "",
      "cmd-pause-tube",
      ""};
  auto requests = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<Request, sizeof...(I)>{Request(std::in_place_index<I>)...};
  }
  (std::make_index_sequence<std::variant_size_v<Request>>());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CommandCounts counts;
    count_command(counts, requests[i]);
    count_command(counts, requests[i]);
    for (std::size_t k = 0; k < kCountedCommands.size(); ++k) {
      const std::string key = "cmd-" + std::string(kCountedCommands[k]);
      EXPECT_EQ(counts.by_command[k], key == want[i] ? 2U : 0U) << "request #" << i << ", " << key;
    }
  }
}

TEST(BeanstalkStats, QuotedValuesAreEscaped) {
  ServerStats s;
  s.version = "a\"b\\c";
  EXPECT_NE(server_stats_yaml(s).find("\nversion: \"a\\\"b\\\\c\"\n"), std::string::npos);
}

// The process's part of `stats`, shared by the in-memory and the Redis servers.
TEST(BeanstalkStats, ProcessFieldsComeFromTheServerInfoAndGetrusage) {
  wheel::jobs::ServerInfo info;
  info.version = "1.2.3";
  info.id = "abc123";
  info.hostname = "host";
  info.os = "#1 SMP";
  info.platform = "x86_64";
  info.pid = 4242;
  volatile std::uint64_t spin = 0;  // some CPU time for rusage to show
  for (std::uint64_t i = 0; i < 10'000'000 && spin < ~0ULL; ++i) spin = spin + i;
  ServerStats s;
  wheel::jobs::fill_process_stats(info, s);
  EXPECT_EQ(s.pid, 4242);
  EXPECT_EQ(s.version, "1.2.3");
  EXPECT_EQ(s.id, "abc123");
  EXPECT_EQ(s.hostname, "host");
  EXPECT_EQ(s.os, "#1 SMP");
  EXPECT_EQ(s.platform, "x86_64");
  EXPECT_GT(s.rusage_user + s.rusage_system, std::chrono::microseconds(0));
  const std::string yaml = server_stats_yaml(s);
  EXPECT_NE(yaml.find("\npid: 4242\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("\nhostname: host\n"), std::string::npos) << yaml;
}

TEST(BeanstalkStats, JobCountsComeFromTheQueuesCounters) {
  wheel::jobs::QueueCounters q;
  q.urgent = 1;
  q.ready = 2;
  q.reserved = 3;
  q.delayed = 4;
  q.buried = 5;
  q.job_timeouts = 6;
  q.total_jobs = 7;
  q.tubes = 8;
  ServerStats s;
  wheel::jobs::fill_job_counts(q, s);
  const std::string yaml = server_stats_yaml(s);
  for (const char* line :
       {"\ncurrent-jobs-urgent: 1\n", "\ncurrent-jobs-ready: 2\n", "\ncurrent-jobs-reserved: 3\n",
        "\ncurrent-jobs-delayed: 4\n", "\ncurrent-jobs-buried: 5\n", "\njob-timeouts: 6\n",
        "\ntotal-jobs: 7\n", "\ncurrent-tubes: 8\n"}) {
    EXPECT_NE(yaml.find(line), std::string::npos) << line << yaml;
  }
}

// Each count after the current-jobs-* ones (the test above) under its own key: every count gets
// its place in kServerStatsKeys (from 1) as its value, so a mix-up of two counts shows (the
// conformance test's fresh beanstalkd has only 0s).
TEST(BeanstalkStats, EveryCountIsPrintedUnderItsOwnKey) {
  ServerStats s;
  CommandCounts& c = s.commands;
  // In kServerStatsKeys' order from "cmd-put", written out here rather than taken from
  // beanstalk_stats.h's tables, which are what is under test.
  std::uint64_t* const counts[] = {&c["put"],
                                   &c["peek"],
                                   &c["peek-ready"],
                                   &c["peek-delayed"],
                                   &c["peek-buried"],
                                   &c["reserve"],
                                   &c["reserve-with-timeout"],
                                   &c["delete"],
                                   &c["release"],
                                   &c["use"],
                                   &c["watch"],
                                   &c["ignore"],
                                   &c["bury"],
                                   &c["kick"],
                                   &c["touch"],
                                   &c["stats"],
                                   &c["stats-job"],
                                   &c["stats-tube"],
                                   &c["list-tubes"],
                                   &c["list-tube-used"],
                                   &c["list-tubes-watched"],
                                   &c["pause-tube"],
                                   &s.job_timeouts,
                                   &s.total_jobs,
                                   &s.max_job_size,
                                   &s.tubes,
                                   &s.connections,
                                   &s.producers,
                                   &s.workers,
                                   &s.waiting,
                                   &s.total_connections};
  constexpr std::size_t kFirst = 5;  // "cmd-put"
  for (std::size_t i = 0; i < std::size(counts); ++i) *counts[i] = kFirst + i + 1;
  const std::string yaml = server_stats_yaml(s);
  for (std::size_t i = kFirst; i < kFirst + std::size(counts); ++i) {
    const std::string line =
        "\n" + std::string(kServerStatsKeys[i]) + ": " + std::to_string(i + 1) + "\n";
    EXPECT_NE(yaml.find(line), std::string::npos) << line << yaml;
  }
}

}  // namespace
