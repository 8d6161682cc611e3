// SPDX-License-Identifier: Apache-2.0
// Internal: ConnectionTable, the server's connections by id, from accept until the object is
// freed (closing ones included). An id is (generation << 32 | slot) with a 30-bit generation,
// so a timeout naming a closed connection does not match the one that reuses its slot.
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wheel::net {

class Connection;

class ConnectionTable {
 public:
  // A fresh id whose slot is reserved; put() or give_back() it next.
  std::uint64_t reserve();
  // Stores `c` (whose id() was reserved) in its slot.
  void put(Connection* c);
  // Returns a reserved id's slot unused (the accept failed after reserve()).
  void give_back(std::uint64_t id);
  // Empties `id`'s slot (the connection is being freed).
  void erase(std::uint64_t id);

  // The connection `id`, open or closing, or nullptr (freed, or never).
  Connection* get(std::uint64_t id) const;
  // Connection objects alive, closing ones included.
  std::size_t size() const { return size_; }

  // Calls `visit(Connection*)` for each one alive. `visit` may close but not free them.
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (Connection* c : slots_) {
      if (c != nullptr) visit(c);
    }
  }

 private:
  static constexpr std::uint32_t kGenerationMask = (1u << 30) - 1;
  std::vector<Connection*> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint32_t generation_ = 0;
  std::size_t size_ = 0;
};

}  // namespace wheel::net
