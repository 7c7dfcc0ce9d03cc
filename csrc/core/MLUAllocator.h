// The mlu device allocator (a c10::DeviceAllocator, so torch.accelerator's
// memory functions work). This is the simple, non-caching allocator: every
// allocation is a runtime allocation. The caching allocator replaces it in a
// later issue without changing this interface.
//
// Note [Stream-ordered frees]
// A block remembers the stream that was current when it was allocated. When
// its tensor dies the block is freed *on that stream* (mluFreeAsync), so work
// still queued there keeps valid memory. Streams added with recordStream are
// joined first: the allocation stream waits for an event recorded on each of
// them, then frees. Work on other streams without recordStream is the
// caller's bug, exactly as with CUDA.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace torch_mlu {

c10::DeviceAllocator* getMLUDeviceAllocator();

}  // namespace torch_mlu
