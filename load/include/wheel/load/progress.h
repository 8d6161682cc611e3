// SPDX-License-Identifier: Apache-2.0
// The once-a-second progress figures of a run, printed on stderr; a fan-out's parent sums its
// children's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace wheel::load {

struct Progress {
  double elapsed_s = 0;
  std::uint64_t requested = 0;
  std::uint64_t connected = 0;     // established so far
  std::uint64_t active_open = 0;   // active connections open now
  std::uint64_t idle_open = 0;     // idle connections open now
  std::uint64_t closed = 0;        // connections the server closed so far
  std::uint64_t errors = 0;        // connect errors + I/O errors so far
  std::uint64_t churn_cycles = 0;  // churn cycles completed so far
  std::uint64_t mix_failures = 0;  // DELAY, garbage and churn expectations broken so far

  Progress& operator+=(const Progress& other);
};

// What a run calls with its progress (LoadRunner: on the loop thread, about once a second and
// once at the end).
using ProgressCallback = std::function<void(const Progress&)>;

// One line, no newline: "wheel-load 3s: connected 10000/10000 active 5000 idle-open 2000 ...".
std::string format_progress(const Progress& p);

// Compact form carried over a pipe from a child to its parent, and back.
std::string encode_progress(const Progress& p);
// Returns false when `text` is not an encoded Progress.
bool decode_progress(const std::string& text, Progress& p);

}  // namespace wheel::load
