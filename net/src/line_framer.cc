// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/line_framer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace wheel::net {

// Header and bytes in one allocation.
struct LineBuffer::Block {
  std::size_t size;
  std::size_t capacity;
  char* data() { return reinterpret_cast<char*>(this + 1); }
};

void LineBuffer::append(std::string_view bytes) {
  if (bytes.empty()) return;
  const std::size_t size = this->size();
  if (bytes.size() > SIZE_MAX - sizeof(Block) - size) throw std::bad_alloc();
  const std::size_t needed = size + bytes.size();
  if (block_ == nullptr || needed > block_->capacity) {
    std::size_t capacity = block_ == nullptr ? 64 : block_->capacity;
    while (capacity < needed) capacity = capacity > SIZE_MAX / 4 ? needed : capacity * 2;
    if (capacity > SIZE_MAX - sizeof(Block)) throw std::bad_alloc();
    void* grown = std::realloc(block_, sizeof(Block) + capacity);
    if (grown == nullptr) throw std::bad_alloc();
    block_ = static_cast<Block*>(grown);
    block_->size = size;
    block_->capacity = capacity;
  }
  std::memcpy(block_->data() + size, bytes.data(), bytes.size());
  block_->size = needed;
}

void LineBuffer::clear() noexcept {
  std::free(block_);
  block_ = nullptr;
}

std::string_view LineBuffer::view() const noexcept {
  return block_ == nullptr ? std::string_view() : std::string_view(block_->data(), block_->size);
}

std::size_t LineBuffer::size() const noexcept {
  return block_ == nullptr ? 0 : block_->size;
}

LineFramer::LineFramer(std::size_t max_line) : max_line_(max_line) {
  if (max_line == 0) throw std::invalid_argument("max_line must be at least 1");
}

bool LineFramer::too_long(const LineBuffer& partial, std::string_view piece) const noexcept {
  const std::size_t held = partial.size();
  // Both sizes are of objects in memory, so their sum fits in size_t.
  std::size_t length = held + piece.size();
  const char last = !piece.empty() ? piece.back() : held > 0 ? partial.view().back() : '\0';
  if (last == '\r') --length;  // stripped when the line completes; may still be "\r\n"
  return length > max_line_;
}

}  // namespace wheel::net
