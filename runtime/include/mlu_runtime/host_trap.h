// The host-access trap: device memory the host cannot touch.
//
// Note [Host-access trap]
// With TORCH_MLU_TRAP_HOST_ACCESS=1 (read at the first runtime call), device
// memory lives in a window of address space the host cannot read or write
// (PROT_NONE): the pointers mluMalloc returns point there. The same memory is
// reachable at a second mapping, a fixed distance away, that only device code
// uses: a kernel turns each device pointer it is given into the address it
// dereferences with mluDevicePointer, and the runtime's copies do the same
// internally. So a stray host dereference of a device pointer (a glue bug, a
// ctypes trick, an extension) faults at once, whatever queues run meanwhile,
// and the runtime reports the address, the allocation it falls in and the
// native stack that allocated it, then lets the fault take its course
// (Python's faulthandler, if enabled, prints the Python stack; the process
// ends with SIGSEGV). Nothing is toggled per operation, so concurrent queues
// cost nothing extra. In this mode mluDeviceProp::directHostAccess is 0 and
// memory cannot be shared between processes (mluMallocShareable refuses).
// Off, mluDevicePointer is the identity at the cost of two relaxed loads.
#pragma once

#include <atomic>
#include <cstdint>

namespace mlu {

namespace detail {
// The trapped window [base, base + size) and the distance to its device mapping; all 0 when off.
struct TrapWindow {
  std::atomic<uintptr_t> base{0};
  std::atomic<uintptr_t> size{0};
  std::atomic<uintptr_t> delta{0};
};
extern TrapWindow g_trap_window;
}  // namespace detail

// The address device code dereferences for `ptr`: `ptr` itself unless it
// points into trapped device memory (Note [Host-access trap]).
inline void* mluDevicePointer(const void* ptr) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t offset = address - detail::g_trap_window.base.load(std::memory_order_relaxed);
  if (offset >= detail::g_trap_window.size.load(std::memory_order_relaxed)) return const_cast<void*>(ptr);
  return reinterpret_cast<void*>(address + detail::g_trap_window.delta.load(std::memory_order_relaxed));
}

template <class T>
T* mluDevicePointer(T* ptr) {
  return static_cast<T*>(mluDevicePointer(static_cast<const void*>(ptr)));
}

// Whether this process runs with the trap (TORCH_MLU_TRAP_HOST_ACCESS=1).
bool mluHostAccessTrapped();

}  // namespace mlu
