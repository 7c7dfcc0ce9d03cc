// Internal: the registry of live allocations (device and pinned host).
// Every pointer the runtime hands out is registered until it is freed; lookups
// resolve interior pointers to their allocation. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace mlu::detail {

// How an allocation's pages are held (ipc.h for the shared kinds).
enum class Backing : uint8_t {
  kHeap,       // mluHostMalloc, and device memory under the trap or without a file: aligned heap memory
  kShareable,  // mluMalloc / mluMallocShareable: a mapping of its own shared-memory file (fd)
  kOpened,     // mluIpcOpenMemHandle: another process's file mapped here (fd); counts nowhere
  kReserved,   // mluMemAddressReserve: address space, mapped granule by granule (reservation.h);
               // outside the trap a shared-memory file of its size lies behind it (fd)
};

struct Reservation;

struct Allocation {
  uintptr_t base;
  size_t size;
  int device;  // -1 for pinned host memory
  Backing backing = Backing::kHeap;
  int fd = -1;  // the shared-memory file (Note [Shareable device memory] in ipc.cpp); -1: none
  std::shared_ptr<Reservation> reservation = nullptr;  // kReserved: which granules are mapped
  size_t file_offset = 0;                              // where `base` lies in the file: 0 but for kOpened
};

void register_allocation(const Allocation& allocation);
// Removes and returns the allocation starting exactly at `ptr`.
std::optional<Allocation> unregister_allocation(const void* ptr);
// The allocation containing `ptr`, if any.
std::optional<Allocation> find_allocation(const void* ptr);

}  // namespace mlu::detail
