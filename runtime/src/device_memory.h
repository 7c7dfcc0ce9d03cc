// Internal: what memory.cpp, virtual_memory.cpp and ipc.cpp (shared-memory
// files, Note [Shareable device memory]) share: sizes as the runtime rounds
// them, charging a device's capacity, and releasing an allocation of any
// backing (registry.h).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "mlu_runtime/status.h"
#include "registry.h"

namespace mlu::detail {

constexpr size_t kAlignment = 256;  // like cudaMalloc's guarantee

inline size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

inline std::string describe(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

inline std::string mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
  return text;
}

// Charges round_up(size) bytes to `device`, or fails with the out-of-memory message.
mluError_t reserve_device_memory(int device, size_t size);
// Returns the pages of an unregistered allocation and, unless it is an opened
// mapping, its bytes to its device.
void release_device_block(const Allocation& allocation);
// ipc.cpp: unmaps a kShareable / kOpened allocation and closes its file.
void unmap_shared_block(const Allocation& allocation);
// ipc.cpp: `bytes` of device memory in a new shared-memory file of their own,
// mapped read-write at *ptr; false, holding nothing, when the host cannot
// (*why then says why).
bool map_new_shared_block(size_t bytes, int* fd, void** ptr, std::string* why);
// ipc.cpp: a new shared-memory file of `bytes` mapped over the reservation
// [base, base + bytes), inaccessible until mluMemMap; -1 (the range left as it
// was) when the host cannot make one.
int back_reservation(void* base, size_t bytes);
// ipc.cpp: whether some byte of [offset, offset + size) of the file behind
// `fd` is open through mluIpcOpenMemHandle (in any process; not counting a
// range opened through `fd` itself).
bool file_range_in_use(int fd, size_t offset, size_t size);
// The error for mluFree / mluFreeAsync on an opened mapping.
mluError_t fail_opened_mapping(const void* ptr);

}  // namespace mlu::detail
