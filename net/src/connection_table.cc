// SPDX-License-Identifier: Apache-2.0
#include "connection_table.h"

#include <cassert>

#include "wheel/net/connection.h"

namespace wheel::net {

std::uint64_t ConnectionTable::reserve() {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(nullptr);
  }
  generation_ = (generation_ + 1) & kGenerationMask;
  return (static_cast<std::uint64_t>(generation_) << 32) | slot;
}

void ConnectionTable::put(Connection* c) {
  const auto slot = static_cast<std::uint32_t>(c->id());
  assert(slot < slots_.size() && slots_[slot] == nullptr);
  slots_[slot] = c;
  ++size_;
}

void ConnectionTable::give_back(std::uint64_t id) {
  free_slots_.push_back(static_cast<std::uint32_t>(id));
}

void ConnectionTable::erase(std::uint64_t id) {
  const auto slot = static_cast<std::uint32_t>(id);
  assert(slot < slots_.size() && slots_[slot] != nullptr && slots_[slot]->id() == id);
  slots_[slot] = nullptr;
  free_slots_.push_back(slot);
  --size_;
}

Connection* ConnectionTable::get(std::uint64_t id) const {
  const auto slot = static_cast<std::uint32_t>(id);
  if (slot >= slots_.size()) return nullptr;
  Connection* c = slots_[slot];
  return c != nullptr && c->id() == id ? c : nullptr;
}

}  // namespace wheel::net
