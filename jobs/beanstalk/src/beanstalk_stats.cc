// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/beanstalk/beanstalk_stats.h"

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <string>
#include <type_traits>
#include <variant>

namespace wheel::jobs::beanstalk {
namespace {

// One "key: value\n" line after another, in the order of the calls.
class Yaml {
 public:
  Yaml() { text_ = "---\n"; }

  // Any whole number: counts, and the signed binlog and pid fields.
  template <std::integral T>
  void number(std::string_view key, T value) {
    char digits[24];
    const auto result = std::to_chars(digits, digits + sizeof digits, value);
    raw(key, std::string_view(digits, static_cast<std::size_t>(result.ptr - digits)));
  }

  void seconds(std::string_view key, Millis value) { number(key, value.count() / 1000); }

  // A double-quoted scalar, as beanstalkd prints its version. beanstalkd does not escape; we
  // do, so a quote or backslash cannot break the document.
  void quoted(std::string_view key, std::string_view value) {
    std::string escaped = "\"";
    for (const char c : value) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      escaped.push_back(c);
    }
    escaped.push_back('"');
    raw(key, escaped);
  }

  // rusage-utime: seconds and microseconds, "%d.%06d".
  void micros(std::string_view key, std::chrono::microseconds value) {
    const long long total = value.count() < 0 ? 0 : value.count();
    char text[48];
    std::snprintf(text, sizeof text, "%lld.%06lld", total / 1'000'000, total % 1'000'000);
    raw(key, text);
  }

  void raw(std::string_view key, std::string_view value) {
    text_.append(key);
    text_.append(": ");
    text_.append(value);
    text_.push_back('\n');
  }

  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

// One "key: count" line for each of `keys`, in their order.
template <class Stats, std::size_t N>
void counts(Yaml& y, const Stats& s, const StatsKey<Stats> (&keys)[N]) {
  for (const StatsKey<Stats>& k : keys) y.number(k.key, s.*k.field);
}

}  // namespace

std::string job_stats_yaml(const JobStats& s) {
  Yaml y;
  y.number("id", s.id);
  y.raw("tube", s.tube);
  y.raw("state", job_state_name(s.state));
  y.number("pri", s.priority);
  y.seconds("age", s.age);
  y.seconds("delay", s.delay);
  y.seconds("ttr", s.ttr);
  y.seconds("time-left", s.time_left);
  y.number("file", s.file);
  y.number("reserves", s.reserves);
  y.number("timeouts", s.timeouts);
  y.number("releases", s.releases);
  y.number("buries", s.buries);
  y.number("kicks", s.kicks);
  return y.take();
}

std::string tube_stats_yaml(const TubeStats& s) {
  Yaml y;
  y.raw("name", s.name);
  counts(y, s, kCurrentJobsKeys<TubeStats>);
  counts(y, s, kTubeCountKeys);
  y.seconds("pause", s.pause);
  y.seconds("pause-time-left", s.pause_time_left);
  return y.take();
}

std::string server_stats_yaml(const ServerStats& s) {
  Yaml y;
  counts(y, s, kCurrentJobsKeys<ServerStats>);
  for (std::size_t i = 0; i < kCountedCommands.size(); ++i) {
    y.number("cmd-" + std::string(kCountedCommands[i]), s.commands.by_command[i]);
  }
  counts(y, s, kServerCountKeys);
  y.number("pid", s.pid);
  y.quoted("version", s.version);
  y.micros("rusage-utime", s.rusage_user);
  y.micros("rusage-stime", s.rusage_system);
  y.number("uptime", s.uptime.count());
  y.number("binlog-oldest-index", s.binlog_oldest_index);
  y.number("binlog-current-index", s.binlog_current_index);
  y.number("binlog-records-migrated", s.binlog_records_migrated);
  y.number("binlog-records-written", s.binlog_records_written);
  y.number("binlog-max-size", s.binlog_max_size);
  y.raw("draining", s.draining ? "true" : "false");
  y.raw("id", s.id);
  y.raw("hostname", s.hostname);
  y.raw("os", s.os);
  y.raw("platform", s.platform);
  return y.take();
}

std::string tube_list_yaml(std::span<const std::string_view> names) {
  std::string text = "---\n";
  for (const std::string_view name : names) {
    text.append("- ");
    text.append(name);
    text.push_back('\n');
  }
  return text;
}

void count_command(CommandCounts& c, const Request& request) {
  std::visit(
      [&counts = c]<class T>(const T&) {
        if constexpr (std::is_same_v<T, ReserveJob>) {  // beanstalkd 1.12 counts it as a reserve
          ++counts.by_command[counted_command_index(command_name<Reserve>())];
        } else if constexpr (std::is_same_v<T, KickJob>) {  // and this one as a kick
          ++counts.by_command[counted_command_index(command_name<Kick>())];
        } else if constexpr (!std::is_same_v<T, ProtocolError>) {
          constexpr std::size_t i = counted_command_index(command_name<T>());
          if constexpr (i < kCountedCommands.size()) ++counts.by_command[i];  // not quit
        }
      },
      request);
}

}  // namespace wheel::jobs::beanstalk
