// Pinned host memory for mlu (Tensor.pin_memory(), DataLoader pinning).
// This is the simple allocator: each allocation is an mluHostMalloc and each
// free an mluFreeHost, which waits for the devices (as cudaFreeHost does), so
// an asynchronous copy from pinned memory can never outlive its buffer. The
// caching host allocator replaces it in a later issue.
#pragma once

#include <c10/core/Allocator.h>

namespace torch_mlu {

c10::Allocator* getMLUHostAllocator();
bool isPinnedPtr(const void* ptr);

}  // namespace torch_mlu
