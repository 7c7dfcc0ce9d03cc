// Device memory shared between processes (cudaIpc*-shaped).
//
// mluMallocShareable allocates device memory, like mluMalloc, whose pages live
// in an anonymous shared-memory file. Its handle (mluIpcGetMemHandle) names
// that file by a descriptor of this process; the descriptor travels to another
// process over a Unix socket (SCM_RIGHTS, as torch.multiprocessing passes
// file descriptors), which maps the same pages onto one of its devices with
// mluIpcOpenMemHandle. Writes on either side are seen by the other once the
// writing device's work is synchronised.
//
// Invariants:
// - a shareable allocation counts against the capacity of the device that made
//   it, once; an opened mapping counts against no device.
// - the pages live while any process maps them: the maker may free its
//   allocation (mluFree / mluFreeAsync) or exit while another process still
//   uses its mapping; the kernel releases the file with its last mapping.
// - an opened mapping is released with mluIpcCloseMemHandle (mluFree refuses
//   it), and a pointer from mluMalloc has no handle.
#pragma once

#include <cstddef>

#include "mlu_runtime/status.h"

namespace mlu {

struct mluIpcMemHandle_t {
  int fd;       // a descriptor of this process, owned by the runtime: dup() it to keep it
  size_t size;  // bytes of the allocation
};

// Allocates on the current device. size 0 yields nullptr and success.
mluError_t mluMallocShareable(void** ptr, size_t size);
// The handle of the shareable allocation starting at `ptr`.
mluError_t mluIpcGetMemHandle(mluIpcMemHandle_t* handle, void* ptr);
// Maps another process's allocation onto the current device; `handle.fd` is a
// descriptor of this process (the runtime keeps its own duplicate).
mluError_t mluIpcOpenMemHandle(void** ptr, mluIpcMemHandle_t handle);
// Unmaps after the device has finished all its work, like mluFree.
mluError_t mluIpcCloseMemHandle(void* ptr);

}  // namespace mlu
