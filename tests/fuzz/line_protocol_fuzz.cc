// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the line framer and the command parser of wheel-server, as a hostile
// client drives them. The input is a header (max line, where to cut the stream into reads)
// and then the bytes of the stream. Checked: the lines from cut reads equal the lines from
// one read; no line exceeds max_line or contains "\n"; a too-long verdict is the same both
// ways; the parser's DELAY bounds hold and its text points into the line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "line_protocol.h"
#include "wheel/net/line_framer.h"

namespace {

using wheel::net::LineBuffer;
using wheel::net::LineFramer;
using wheel::server::Command;

void check(bool ok) {
  if (!ok) std::abort();
}

// Frames `reads` in order; returns the lines and whether a line was too long.
std::pair<std::vector<std::string>, bool> frame(const LineFramer& framer,
                                                const std::vector<std::string_view>& reads) {
  LineBuffer partial;
  std::vector<std::string> lines;
  for (const std::string_view bytes : reads) {
    const auto result = framer.feed(partial, bytes, [&](std::string_view line) {
      check(line.find('\n') == std::string_view::npos);
      check(line.size() <= framer.max_line());
      lines.emplace_back(line);
      const Command cmd = wheel::server::parse_stripped_command(line);
      if (cmd.kind == Command::kDelay) {
        check(cmd.delay_ms >= wheel::server::kMinDelayMs &&
              cmd.delay_ms <= wheel::server::kMaxDelayMs);
        check(cmd.text.empty() || (cmd.text.data() >= line.data() &&
                                   cmd.text.data() + cmd.text.size() <= line.data() + line.size()));
      } else {
        check(cmd.delay_ms == 0 && cmd.text.empty());
      }
      check(wheel::server::parse_command(line).kind == cmd.kind || line.ends_with('\r'));
      return true;
    });
    if (result == LineFramer::Result::kLineTooLong) return {lines, true};
  }
  return {lines, false};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  // Byte 0: max line (1..255, or 0 = SIZE_MAX, "no limit"); byte 1: cut seed; rest: stream.
  const std::size_t max_line = data[0] == 0 ? SIZE_MAX : data[0];
  const unsigned seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);
  const LineFramer framer(max_line);

  std::vector<std::string_view> cut;
  std::size_t at = 0, step = 1 + seed % 7;
  while (at < stream.size()) {
    const std::size_t n = std::min(step, stream.size() - at);
    cut.push_back(stream.substr(at, n));
    at += n;
    step = 1 + (step * 31 + seed) % 13;
  }
  const auto whole = frame(framer, {stream});
  const auto pieces = frame(framer, cut);
  check(whole.second == pieces.second);
  check(whole.first == pieces.first);
  return 0;
}
