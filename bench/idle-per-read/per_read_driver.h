// SPDX-License-Identifier: Apache-2.0
// The measurement shared by every implementation of wheel-idle-bench: N simulated connections,
// each with an idle deadline that every read of it pushes back. No sockets: a "connection" is the
// per-connection state an idle timeout needs, and a "read" is what the server does about the
// timeout when data arrives. One implementation per process, so its RSS is its own.
//
// Phases, in order, each on the implementation's event-loop thread:
//   setup  - opens N connections (one deadline each, --idle-ms away); RSS delta / N.
//   idle   - --idle-secs with no reads (ends before any deadline): CPU of the process per second.
//   paced  - --read-secs of reads at --rate per second on random connections, in a batch every
//            1 ms (as a server handles a batch of readable sockets per loop turn; at most 10 ms
//            of reads per batch); deadlines that pass meanwhile fire and re-arm. Process CPU /
//            reads = ns per read, timer work included. The default rate (200,000/s: each of
//            10^6 connections reads every 5 s on average, idle time 10 s) is one that every
//            implementation holds on this 2-core machine.
//   tight  - --tight-reads reads back to back in one callback, then the loop runs what they
//            queued (Asio's cancelled waits): process CPU time / reads (wall time beside: on a
//            shared machine it measures the other programs too).
// A deadline that passes without a read counts one idle event and re-arms for the full time
// (Netty's IdleStateHandler: the connection stays open, the handler is told).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace wheel::bench {

struct PerReadParams {
  std::int64_t n = 1'000'000;
  std::int64_t idle_ms = 10'000;
  double idle_secs = 3.0;
  double read_secs = 10.0;
  std::int64_t rate = 200'000;
  std::int64_t tight_reads = 1'000'000;
  std::int64_t tick_ms = 1;  // the wheel's tick (wheel only)
  std::uint64_t seed = 42;
};

// xorshift64*: the same sequence of connection numbers for every implementation (and Java's).
class ConnPicker {
 public:
  // REQUIRES: 0 < n < 2^32.
  explicit ConnPicker(std::uint64_t seed, std::uint64_t n) : x_(seed | 1), n_(n) {}
  std::uint32_t next() {
    x_ ^= x_ >> 12;
    x_ ^= x_ << 25;
    x_ ^= x_ >> 27;
    const std::uint64_t r = x_ * 0x2545F4914F6CDD1DULL;
    return static_cast<std::uint32_t>(((r >> 32) * n_) >> 32);  // n_ < 2^32
  }

 private:
  std::uint64_t x_;
  std::uint64_t n_;
};

// Resident set size of this process, in bytes (/proc/self/statm).
std::int64_t rss_bytes();
// Threads of this process (/proc/self/task).
int thread_count();

// What the driver needs from an implementation. Every call is on the calling (loop) thread.
class PerReadImpl {
 public:
  virtual ~PerReadImpl() = default;
  virtual const char* name() const = 0;
  // Opens connections 0..n-1, each with a deadline idle_ms from now.
  virtual void open_all() = 0;
  // Reads of `count` connections chosen by `picker`.
  virtual void read_batch(ConnPicker& picker, std::int64_t count) = 0;
  // Runs the loop for `secs`; calls `every_ms` (if set) from a 1 ms repeating timer.
  virtual void run_for(double secs, const std::function<void()>& every_ms) = 0;
  // Calls `fn` from the loop, then runs the loop until nothing it queued is left ready.
  virtual void run_once_then_drain(const std::function<void()>& fn) = 0;
  // Deadlines that passed without a read since the start.
  virtual std::uint64_t idle_events() const = 0;
  // A note on what one read does, for the JSON lines.
  virtual std::string read_note() const = 0;
};

// Runs the phases on `impl` (made by `make` after the first RSS reading) and prints JSON lines.
void run_per_read(const PerReadParams& p, const std::function<PerReadImpl*()>& make);

}  // namespace wheel::bench
