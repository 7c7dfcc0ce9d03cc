// The mlu caching device allocator (cf. c10/cuda/CUDACachingAllocator).
//
// Model. Device memory is obtained from the runtime in segments and cut into
// blocks. Requests are rounded up to 512 bytes (or to power-of-two divisions,
// see MLUAllocatorConfig). Requests up to 1 MiB come from the small pool
// (2 MiB segments); larger ones from the large pool (a 20 MiB segment for
// requests under 10 MiB, else the request rounded up to 2 MiB). A free block
// is cached in its pool and reused for a later request on the same stream;
// blocks split when the remainder is useful and merge with free neighbours.
//
// Note [Stream-ordered reuse]
// A block belongs to the stream it was allocated on. Reusing it on that
// stream is safe without any synchronization, because the stream runs in
// order. A block also used on other streams (Tensor.record_stream) is not
// reused until an event recorded on each of those streams at free time has
// completed. Returning a segment to the device is a stream-ordered free on
// the block's stream.
//
// Out of memory: cached blocks are released and the allocation retried; if
// it still fails, torch.OutOfMemoryError explains the numbers. Statistics
// follow c10::CachingDeviceAllocator::DeviceStats exactly (aggregate, small
// and large pools).
#pragma once

#include <functional>

#include <c10/core/CachingDeviceAllocator.h>

#include "csrc/core/MLUAllocatorHistory.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

c10::DeviceAllocator* getMLUDeviceAllocator();

namespace MLUCachingAllocator {

void emptyCache();
void setMemoryFraction(double fraction, c10::DeviceIndex device);
double getMemoryFraction(c10::DeviceIndex device);
c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device);
void resetAccumulatedStats(c10::DeviceIndex device);
void resetPeakStats(c10::DeviceIndex device);
// The settings' max_split_size (SIZE_MAX when unlimited), for memory_stats.
size_t maxSplitSize();
// Tensor.record_stream: the block behind `data` is also used on `stream`
// (Note [Stream-ordered reuse]), as CUDACachingAllocator::recordStream.
inline void recordStream(const c10::DataPtr& data, MLUStream stream) {
  getMLUDeviceAllocator()->recordStream(data, stream.unwrap());
}
// Allocation outside of tensors (torch.mlu.caching_allocator_alloc).
void* raw_alloc(size_t bytes, MLUStream stream);
void raw_delete(void* ptr);
// Graph pools (Note [Graph pools] in MLUCachingAllocator.cpp): while a capture
// is underway, allocations on the streams `filter` accepts come from pool `id`
// of `device` (created at the first begin; each begin counts one use).
void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t id, std::function<bool(const MLUStream&)> filter);
void endAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t id);
// Drops one use of pool `id`; at zero, empty_cache returns its free segments.
void releasePool(c10::DeviceIndex device, c10::MempoolId_t id);
// Turns memory-history recording on or off (see MLUAllocatorHistory.h).
void recordHistory(const HistorySettings& settings, bool clear_history);
SnapshotInfo snapshot();

}  // namespace MLUCachingAllocator
}  // namespace torch_mlu
