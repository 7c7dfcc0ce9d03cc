// Internal: the registry of live allocations (device and pinned host).
// Every pointer the runtime hands out is registered until it is freed; lookups
// resolve interior pointers to their allocation. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace mlu::detail {

struct Allocation {
  uintptr_t base;
  size_t size;
  int device;  // -1 for pinned host memory
};

void register_allocation(const Allocation& allocation);
// Removes and returns the allocation starting exactly at `ptr`.
std::optional<Allocation> unregister_allocation(const void* ptr);
// The allocation containing `ptr`, if any.
std::optional<Allocation> find_allocation(const void* ptr);

}  // namespace mlu::detail
