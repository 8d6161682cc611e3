// SPDX-License-Identifier: Apache-2.0
// LineFramer: splits a byte stream into lines, like Netty's LineBasedFrameDecoder. A line ends
// at "\n"; one "\r" before it is stripped; a line longer than max_line bytes (without its
// "\r\n") is an error. Lines that arrive whole are handed out as views of the caller's bytes
// (no copy); only the incomplete tail of a read is copied into a LineBuffer, which is freed as
// soon as its line completes.
//
// Threads: a LineFramer is immutable (safe from any thread); a LineBuffer belongs to one
// connection and is used by one thread at a time.
#pragma once

#include <cstddef>
#include <string_view>

namespace wheel::net {

// The bytes of one incomplete line. One pointer while empty (an idle connection pays 8 bytes).
class LineBuffer {
 public:
  LineBuffer() = default;
  ~LineBuffer() { clear(); }
  LineBuffer(const LineBuffer&) = delete;
  LineBuffer& operator=(const LineBuffer&) = delete;

  // Appends `bytes`, growing the heap block geometrically. Throws std::bad_alloc.
  void append(std::string_view bytes);
  // Frees the heap block.
  void clear() noexcept;
  std::string_view view() const noexcept;
  std::size_t size() const noexcept;
  bool empty() const noexcept { return block_ == nullptr; }

 private:
  struct Block;
  Block* block_ = nullptr;
};

class LineFramer {
 public:
  enum class Result { kOk, kStopped, kLineTooLong };

  // REQUIRES max_line >= 1 (std::invalid_argument otherwise); SIZE_MAX means "no limit".
  explicit LineFramer(std::size_t max_line);

  // Feeds one read's `bytes`, with `partial` holding what earlier reads left incomplete. For
  // each complete line calls on_line(std::string_view) -> bool, the line without "\n" and one
  // trailing "\r"; the view is valid during the call only. on_line returns false to stop (the
  // connection closed, or its input paused): kStopped is returned and the bytes after that
  // line are left in `*rest` (if given; the caller keeps or drops them). kLineTooLong as
  // soon as a line, complete or not, is known to exceed max_line: `partial` is cleared and the
  // rest dropped. Otherwise kOk, with the incomplete tail (if any) in `partial`.
  template <class OnLine>
  Result feed(LineBuffer& partial, std::string_view bytes, OnLine&& on_line,
              std::string_view* rest = nullptr) const {
    while (!bytes.empty()) {
      const std::size_t nl = bytes.find('\n');
      const std::string_view piece = bytes.substr(0, nl);
      if (too_long(partial, piece)) {
        partial.clear();
        return Result::kLineTooLong;
      }
      if (nl == std::string_view::npos) {
        partial.append(piece);
        return Result::kOk;
      }
      bytes.remove_prefix(nl + 1);
      std::string_view line = piece;
      if (!partial.empty()) {
        partial.append(piece);
        line = partial.view();
      }
      const bool go_on = on_line(strip_cr(line));
      partial.clear();
      if (!go_on) {
        if (rest != nullptr) *rest = bytes;
        return Result::kStopped;
      }
    }
    return Result::kOk;
  }

  std::size_t max_line() const noexcept { return max_line_; }

  // The line without one trailing "\r".
  static std::string_view strip_cr(std::string_view line) noexcept {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }

 private:
  // Whether partial + piece exceeds max_line once a trailing "\r" is discounted (an incomplete
  // line may still end in "\r\n"). Never adds to max_line, so SIZE_MAX cannot wrap.
  bool too_long(const LineBuffer& partial, std::string_view piece) const noexcept;

  std::size_t max_line_;
};

}  // namespace wheel::net
