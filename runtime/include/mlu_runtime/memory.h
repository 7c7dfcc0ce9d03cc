// Device memory and pinned host memory.
//
// Device memory belongs to one device and counts against its capacity; an
// allocation past the capacity fails with mluErrorMemoryAllocation and changes
// nothing. The runtime keeps a registry of every live allocation, so frees are
// checked (a double free or a pointer the runtime did not hand out is
// mluErrorInvalidDevicePointer, never a crash) and any pointer inside an
// allocation can be resolved to its owner (mluPointerGetAttributes).
// Device pointers are not host pointers as far as the API is concerned: the
// host reads and writes device memory only through copies (memcpy.h).
// Pinned host memory is host memory the runtime registered; copies from and to
// it are truly asynchronous.
#pragma once

#include <cstddef>

#include "mlu_runtime/status.h"

namespace mlu {

typedef struct mluQueue_st* mluQueue_t;

enum mluMemoryType : int {
  mluMemoryTypeUnregistered = 0,  // plain (pageable) host memory, or unknown
  mluMemoryTypeHost = 1,          // pinned host memory from mluHostMalloc
  mluMemoryTypeDevice = 2,
};

struct mluPointerAttributes {
  mluMemoryType type;
  int device;        // owning device for device memory, -1 otherwise
  void* basePointer; // start of the allocation holding the pointer
  size_t size;       // size of that allocation in bytes
};

// Allocates on the current device. size 0 yields nullptr and success.
mluError_t mluMalloc(void** ptr, size_t size);
// Frees after the device has finished all its work (synchronizes the owning device).
mluError_t mluFree(void* ptr);
// Stream-ordered free: the pointer is invalid at once, the memory returns to
// the device when `queue` reaches this point.
mluError_t mluFreeAsync(void* ptr, mluQueue_t queue);

mluError_t mluHostMalloc(void** ptr, size_t size);
// Synchronizes every device first, like cudaFreeHost.
mluError_t mluFreeHost(void* ptr);

mluError_t mluPointerGetAttributes(mluPointerAttributes* attributes, const void* ptr);

// Free and total bytes of the current device.
mluError_t mluMemGetInfo(size_t* free, size_t* total);

}  // namespace mlu
