// Device memory shared between processes (cudaIpc*-shaped).
//
// Outside the host-access trap every device allocation (mluMalloc,
// mluMallocShareable, and the mapped parts of a reservation) lives in an
// anonymous shared-memory file: see Note [Shareable device memory] in
// ipc.cpp. So any byte range of live device memory can be shared where it is,
// without a copy and without its address changing (as cudaIpcGetMemHandle
// shares any cudaMalloc allocation): mluIpcGetMemHandle names the range by its
// file, the range's offset in that file and its size. The file's descriptor
// travels to another process over a Unix socket (SCM_RIGHTS, as
// torch.multiprocessing passes file descriptors), which maps the same pages
// onto one of its devices with mluIpcOpenMemHandle. Writes on either side are
// seen by the other once the writing device's work is synchronised.
//
// Invariants:
// - an allocation counts against the capacity of the device that made it,
//   once; an opened mapping counts against no device.
// - the pages live while any process maps them: the maker may free its
//   allocation (mluFree / mluFreeAsync) or exit while another process still
//   uses its mapping; the kernel releases the file with its last mapping.
// - an opened range stays "in use" (mluIpcMemInUse, in every process) from
//   mluIpcOpenMemHandle until mluIpcCloseMemHandle or the exit of the process
//   that opened it: that is how the maker's caching allocator knows not to
//   hand out memory another process still maps (cf. CUDA's IPC ref counts).
// - an opened mapping is released with mluIpcCloseMemHandle (mluFree refuses
//   it). Device memory made under the host-access trap has no handle (Note
//   [Host-access trap]): the calls refuse with mluErrorNotSupported.
#pragma once

#include <cstddef>

#include "mlu_runtime/status.h"

namespace mlu {

struct mluIpcMemHandle_t {
  int fd;             // the memory's file: a descriptor of this process, owned by the runtime (dup() it to keep it)
  size_t size;        // bytes named, starting at `offset`
  size_t offset = 0;  // where they start in the file
};

// Allocates on the current device, like mluMalloc, but never without a
// shared-memory file (mluMalloc falls back to unshareable memory when the
// host cannot make one). size 0 yields nullptr and success.
mluError_t mluMallocShareable(void** ptr, size_t size);
// The handle of the device memory from `ptr` (anywhere inside an allocation,
// opened mapping or mapped part of a reservation) to the end of its
// allocation. Narrow `size` to share less.
mluError_t mluIpcGetMemHandle(mluIpcMemHandle_t* handle, void* ptr);
// Maps `handle.size` bytes at `handle.offset` of another process's memory onto
// the current device; *ptr is the address of the first. `handle.fd` is a
// descriptor of this process (the runtime opens the file again for itself).
mluError_t mluIpcOpenMemHandle(void** ptr, mluIpcMemHandle_t handle);
// Unmaps after the device has finished all its work, like mluFree.
mluError_t mluIpcCloseMemHandle(void* ptr);
// Whether some byte of [ptr, ptr + size), device memory of this process, is
// open through mluIpcOpenMemHandle in any process, this one included (when
// `ptr` lies in an opened mapping, that mapping itself does not count). `ptr`
// must stay allocated during the call. Memory without a file is never in use.
mluError_t mluIpcMemInUse(const void* ptr, size_t size, bool* in_use);

}  // namespace mlu
