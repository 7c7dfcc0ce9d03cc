// The caching pinned-host allocator for mlu (Tensor.pin_memory(),
// torch.empty(..., pin_memory=True), DataLoader pinning), built on PyTorch's
// own at::CachingHostAllocatorImpl, as CUDA's and XPU's are.
//
// Freed pinned blocks are cached by size. A block used by an asynchronous
// copy is recorded on the copy's stream (record_host_use), and is not reused
// before an event recorded there at free time has completed.
#pragma once

#include <ATen/core/CachingHostAllocator.h>

#include "csrc/core/MLUStream.h"

namespace torch_mlu {

at::HostAllocator* getMLUHostAllocator();
bool isPinnedPtr(const void* ptr);
// Keeps the pinned block behind (ptr, ctx) from reuse until `stream` passes this point.
void record_host_use(void* ptr, void* ctx, const MLUStream& stream);

}  // namespace torch_mlu
