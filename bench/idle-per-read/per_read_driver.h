// SPDX-License-Identifier: Apache-2.0
// The measurement shared by every implementation of wheel-idle-bench: N simulated connections,
// each with an idle deadline that every read of it pushes back. No sockets: a "connection" is the
// per-connection state an idle timeout needs, and a "read" is what the server does about the
// timeout when data arrives. One implementation per process, so its RSS is its own.
//
// Phases, in order, each on the implementation's event-loop thread:
//   setup  - opens N connections (one deadline each, --idle-ms away); RSS delta / N.
//   idle   - the loop runs with no reads while another thread reads the loop thread's CPU
//            clock and its count of wake-ups (voluntary context switches: each one is the
//            thread going to sleep, so the next is a wake-up) at the start and end of a window
//            of --idle-secs, as NettyIdlePerRead reads its event loop thread's: the phase's own
//            start and stop stay outside the window. The window ends kIdleTail before the
//            first deadline (shorter than asked when setup was slow; "secs" says).
//   paced  - --read-secs of reads at --rate per second on random connections, in a batch every
//            1 ms (as a server handles a batch of readable sockets per loop turn; at most 10 ms
//            of reads per batch); deadlines that pass meanwhile fire and re-arm. The loop
//            thread's CPU / reads = ns per read, timer work included. The default rate
//            (200,000/s: each of 10^6 connections reads every 5 s on average, idle time 10 s)
//            is one that every implementation holds on this 2-core machine.
//   tight  - --tight-reads reads back to back in one callback, then the loop runs what they
//            queued (Asio's cancelled waits): the loop thread's CPU time / reads (wall time
//            beside: on a shared machine it measures the other programs too).
// Every CPU figure is the loop thread's (its own CPU clock); the whole process's is beside it
// in the raw line as process_*.
// A deadline that passes without a read counts one idle event and re-arms for the full time
// (Netty's IdleStateHandler: the connection stays open, the handler is told).
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <functional>
#include <string>

namespace wheel::bench {

struct PerReadParams {
  std::int64_t n = 1'000'000;
  std::int64_t idle_ms = 10'000;
  double idle_secs = 5.0;
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

// The idle window starts this long after the phase and ends at least this long before the first
// deadline (NettyIdlePerRead uses the same).
inline constexpr double kIdleSettleSecs = 0.2;
inline constexpr double kIdleTailSecs = 0.5;

// The thread that constructs it (the loop's): its CPU time and context switches, readable from
// any thread of the process.
class ThreadProbe {
 public:
  ThreadProbe();  // throws std::system_error when the thread's CPU clock is not available
  struct Sample {
    std::int64_t cpu_ns = 0;
    std::int64_t wakeups = 0;    // voluntary context switches (slept, then woken)
    std::int64_t preempted = 0;  // involuntary ones (the machine's other load)
  };
  Sample sample() const;

 private:
  clockid_t clock_;
  pid_t tid_;
};

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
  // Loop iterations so far, or -1 when the implementation cannot count them. Safe from any
  // thread.
  virtual std::int64_t loop_iterations() const { return -1; }
};

// Runs the phases on `impl` (made by `make` after the first RSS reading) and prints JSON lines.
void run_per_read(const PerReadParams& p, const std::function<PerReadImpl*()>& make);

}  // namespace wheel::bench
