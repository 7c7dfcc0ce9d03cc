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
  kHeap,        // mluMalloc / mluHostMalloc: aligned heap memory
  kShareable,   // mluMallocShareable: a mapping of a shared-memory file (fd)
  kOpened,      // mluIpcOpenMemHandle: another process's file mapped here (fd); counts nowhere
  kReserved,    // mluMemAddressReserve: address space, mapped granule by granule (reservation.h)
};

struct Reservation;

struct Allocation {
  uintptr_t base;
  size_t size;
  int device;  // -1 for pinned host memory
  Backing backing = Backing::kHeap;
  int fd = -1;  // the shared-memory file of kShareable and kOpened
  std::shared_ptr<Reservation> reservation = nullptr;  // kReserved: which granules are mapped
};

void register_allocation(const Allocation& allocation);
// Removes and returns the allocation starting exactly at `ptr`.
std::optional<Allocation> unregister_allocation(const void* ptr);
// The allocation containing `ptr`, if any.
std::optional<Allocation> find_allocation(const void* ptr);

}  // namespace mlu::detail
