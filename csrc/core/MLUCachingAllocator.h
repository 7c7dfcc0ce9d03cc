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
#include <memory>
#include <string>

#include <c10/core/CachingDeviceAllocator.h>

#include "csrc/core/MLUAllocatorHistory.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

class MLUPluggableAllocator;

// The allocator mlu tensors come from: the caching allocator, unless
// torch.mlu.memory.change_current_allocator installed a pluggable one
// (MLUPluggableAllocator.h).
c10::DeviceAllocator* getMLUDeviceAllocator();

namespace MLUCachingAllocator {

// The caching allocator itself.
c10::DeviceAllocator* get();
// Whether it has handed out memory yet (a pluggable allocator may replace it until then).
bool hasAllocated();

// Gives cached memory back: of the default pools and every unused private
// pool, or with `pool` only that pool's (if no longer in use).
void emptyCache(c10::MempoolId_t pool = {0, 0});
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
// Memory pools (torch.mlu.MemPool; Note [Graph pools]): creates pool `id` on
// `device` with one use, or adds a use. `use_on_oom`: requests outside any
// pool may take its free blocks rather than fail; `no_split`: its blocks are
// never split; `allocator`: where its segments come from (else the device).
void createOrIncrefPool(c10::DeviceIndex device, c10::MempoolId_t id, bool use_on_oom = false, bool no_split = false,
                        std::shared_ptr<MLUPluggableAllocator> allocator = nullptr);
// Routes the calling thread's allocations on `device` to pool `id` (adds a use).
void beginAllocateCurrentThreadToPool(c10::DeviceIndex device, c10::MempoolId_t id);
// The uses of pool `id` (0 if none).
int getPoolUseCount(c10::DeviceIndex device, c10::MempoolId_t id);
// Turns memory-history recording on or off (see MLUAllocatorHistory.h).
void recordHistory(const HistorySettings& settings, bool clear_history);
SnapshotInfo snapshot();
// Called on every out-of-memory error, before it is raised and with no
// allocator lock held: (device, bytes requested, bytes the process may use,
// bytes free on the device). As torch._C._cuda_attach_out_of_memory_observer.
using OutOfMemoryObserver = std::function<void(int64_t device, size_t requested, size_t total, size_t free)>;
void attachOutOfMemoryObserver(OutOfMemoryObserver observer);
// The path the out-of-memory message names as holding a snapshot (the Python
// observer torch.mlu.memory._dump_snapshot_on_oom installs writes it); empty: none.
void setOutOfMemorySnapshotPath(std::string path);

}  // namespace MLUCachingAllocator
}  // namespace torch_mlu
