// See MLUCachingAllocator.h for the model and Note [Stream-ordered reuse].
#include "csrc/core/MLUCachingAllocator.h"

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <set>
#include <vector>

#include <mlu_runtime/device.h>
#include <mlu_runtime/event.h>
#include <mlu_runtime/memcpy.h>
#include <mlu_runtime/memory.h>

#include <c10/util/flat_hash_map.h>

#include "csrc/core/MLUAllocatorConfig.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUTrace.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

constexpr size_t kMinBlockSize = 512;       // every size is a multiple of this
constexpr size_t kSmallSize = 1 << 20;      // largest request served by the small pool
constexpr size_t kSmallBuffer = 2 << 20;    // small-pool segment size
constexpr size_t kLargeBuffer = 20 << 20;   // segment size for requests under kMinLargeAlloc
constexpr size_t kMinLargeAlloc = 10 << 20;
constexpr size_t kRoundLarge = 2 << 20;     // larger segments are rounded to this

struct BlockPool;

struct Block {
  Block(c10::DeviceIndex device, MLUStream stream, size_t size, BlockPool* pool, void* ptr)
      : device(device), stream(stream), size(size), pool(pool), ptr(ptr) {}
  c10::DeviceIndex device;
  MLUStream stream;        // the segment's stream: see Note [Stream-ordered reuse]
  size_t size;
  size_t requested = 0;    // bytes asked for by the current allocation
  BlockPool* pool;
  void* ptr;
  bool allocated = false;
  Block* prev = nullptr;   // neighbours within the segment
  Block* next = nullptr;
  int pending_events = 0;  // events to complete before the block is free
  std::vector<MLUStream> stream_uses;
  std::shared_ptr<c10::GatheredContext> context;  // who allocated it (history recording)
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

bool block_less(const Block* a, const Block* b) {
  if (a->stream.id() != b->stream.id()) return a->stream.id() < b->stream.id();
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

struct BlockPool {
  explicit BlockPool(bool small, c10::MempoolId_t owner = {0, 0}) : is_small(small), owner(owner) {}
  std::set<Block*, decltype(&block_less)> blocks{&block_less};  // free blocks
  const bool is_small;
  const c10::MempoolId_t owner;  // the private pool this belongs to; {0, 0}: the default pools
  int segments = 0;              // segments whose blocks belong here
  bool is_private() const { return owner != c10::MempoolId_t{0, 0}; }
};

// Note [Graph pools]
// A graph's memory comes from a private pool (its own small and large
// BlockPools) while it is captured: every allocation on a stream that the
// capture's filter accepts is served from it, and blocks freed later return
// to it, so replays may use the same addresses forever and no other work is
// ever handed memory a live graph uses. Graphs given the same pool id share
// one pool (safe when they replay in capture order). use_count counts the
// graphs (and capture_begin calls) holding the pool; at zero the pool is
// freeable: empty_cache (or an out-of-memory retry) gives its whole free
// segments back, and the pool goes away once it holds none. While any
// capture is underway the allocator neither synchronizes nor returns
// segments to the device, and records no events for frees of blocks used on
// other streams: those wait (deferred_frees_) until no capture is underway.
struct PrivatePool {
  explicit PrivatePool(c10::MempoolId_t id) : small(true, id), large(false, id) {}
  BlockPool small;
  BlockPool large;
  int use_count = 1;
};

std::string format_size(uint64_t size) {
  std::ostringstream os;
  os.precision(2);
  os << std::fixed;
  if (size <= 1024) {
    os << size << " bytes";
  } else if (size <= 1048576) {
    os << (static_cast<double>(size) / 1024.0) << " KiB";
  } else if (size <= 1073741824ULL) {
    os << static_cast<double>(size) / 1048576.0 << " MiB";
  } else {
    os << static_cast<double>(size) / 1073741824.0 << " GiB";
  }
  return os.str();
}

size_t round_size(size_t size, const MLUAllocatorConfig& config) {
  if (size < kMinBlockSize) return kMinBlockSize;
  size_t divisions = config.roundup_power2_divisions;
  if (divisions > 0 && (size & (size - 1)) != 0) {
    size_t floor = size_t{1} << (63 - __builtin_clzll(size));
    size_t step = floor / divisions;
    if (step >= kMinBlockSize) return (size + step - 1) / step * step;
  }
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// Adds `delta` to the aggregate stat and to the stat of `pool`.
void update(StatArray& stats, const BlockPool& pool, int64_t delta) {
  for (StatType type : {StatType::AGGREGATE, pool.is_small ? StatType::SMALL_POOL : StatType::LARGE_POOL}) {
    Stat& stat = stats[static_cast<size_t>(type)];
    if (delta >= 0) {
      stat.increase(static_cast<size_t>(delta));
    } else {
      stat.decrease(static_cast<size_t>(-delta));
    }
  }
}

template <class F>
void for_each_stat(DeviceStats& s, F fn) {
  for (StatArray* array : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                           &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes}) {
    for (Stat& stat : *array) fn(stat);
  }
  fn(s.oversize_allocations);
  fn(s.oversize_segments);
}

// See MLUAllocatorHistory.h. Read on every allocation, so the common "off"
// case is one relaxed atomic load.
struct History {
  std::atomic<bool> on{false};
  std::mutex mu;
  HistorySettings settings;

  HistorySettings get() {
    if (!on.load(std::memory_order_relaxed)) return {};
    std::lock_guard<std::mutex> lock(mu);
    return settings;
  }
};

History& history() {
  static History instance;
  return instance;
}

std::shared_ptr<c10::GatheredContext> gather_if(const HistorySettings& h, RecordContext at_least) {
  if (h.gather == nullptr || h.context < at_least) return nullptr;
  return h.gather();
}

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(c10::DeviceIndex device) : device_(device) {
    mlu::mluDeviceProp prop{};
    MLU_CHECK(mlu::mluGetDeviceProperties(&prop, device));
    capacity_ = prop.totalGlobalMem;
    allowed_ = capacity_;
    stats_.max_split_size = static_cast<int64_t>(MLUAllocatorConfig::get().max_split_size);
  }

  Block* malloc(size_t requested, MLUStream stream) {
    const MLUAllocatorConfig& config = MLUAllocatorConfig::get();
    HistorySettings h = history().get();
    std::shared_ptr<c10::GatheredContext> context = gather_if(h, RecordContext::STATE);
    std::unique_lock<std::mutex> lock(mu_);
    const bool capturing = !captures_underway_.empty();
    if (!capturing) {  // Note [Graph pools]: no event queries while capturing
      free_deferred(h);
      process_events(h);
    }
    size_t size = round_size(requested, config);
    BlockPool& pool = pool_for(size, stream);
    const bool cache = !config.caching_disabled || pool.is_private();
    Block* block = cache ? take_free_block(pool, stream, size, config) : nullptr;
    if (block == nullptr) {
      size_t bytes = cache ? segment_size(size) : size;
      if (!capturing && config.garbage_collection_threshold > 0 &&
          reserved() + bytes > config.garbage_collection_threshold * allowed_) {
        release_cached_blocks(/*wait=*/false, h);
      }
      block = new_segment(pool, stream, bytes, h);
      if (block == nullptr && !capturing) {
        stats_.num_alloc_retries += 1;
        release_cached_blocks(/*wait=*/true, h);
        block = new_segment(pool, stream, bytes, h);
      }
      if (block == nullptr) {
        stats_.num_ooms += 1;
        record(h, TraceEntry::OOM, free_bytes(), requested, stream, context);
        if (c10::memoryProfilingEnabled()) {
          c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(requested),
                                           static_cast<size_t>(stats_.allocated_bytes[0].current), reserved(),
                                           c10::Device(c10::DeviceType::PrivateUse1, device_));
        }
        std::string message = oom_message(requested);
        lock.unlock();
        TORCH_CHECK_WITH(OutOfMemoryError, false, message);
      }
    }
    if (cache && should_split(*block, size, config)) split(block, size);
    block->allocated = true;
    block->requested = requested;
    block->context = h.enabled ? context : nullptr;
    allocated_[block->ptr] = block;
    record(h, TraceEntry::ALLOC, reinterpret_cast<uintptr_t>(block->ptr), block->size, stream,
           h.context >= RecordContext::ALLOC ? context : nullptr);
    update(stats_.allocation, pool, 1);
    update(stats_.allocated_bytes, pool, static_cast<int64_t>(block->size));
    update(stats_.active, pool, 1);
    update(stats_.active_bytes, pool, static_cast<int64_t>(block->size));
    update(stats_.requested_bytes, pool, static_cast<int64_t>(requested));
    if (block->size >= config.max_split_size) stats_.oversize_allocations.increase(1);
    report_to_profiler(block->ptr, static_cast<int64_t>(block->size));
    return block;
  }

  void free(Block* block) {
    const MLUAllocatorConfig& config = MLUAllocatorConfig::get();
    HistorySettings h = history().get();
    std::shared_ptr<c10::GatheredContext> context = gather_if(h, RecordContext::ALL);
    std::lock_guard<std::mutex> lock(mu_);
    record(h, TraceEntry::FREE_REQUESTED, reinterpret_cast<uintptr_t>(block->ptr), block->size, block->stream,
           context ? context : block->context);
    block->allocated = false;
    allocated_.erase(block->ptr);
    const BlockPool& pool = *block->pool;
    update(stats_.allocation, pool, -1);
    update(stats_.allocated_bytes, pool, -static_cast<int64_t>(block->size));
    update(stats_.requested_bytes, pool, -static_cast<int64_t>(block->requested));
    if (block->size >= config.max_split_size) stats_.oversize_allocations.decrease(1);
    report_to_profiler(block->ptr, -static_cast<int64_t>(block->size));
    if (block->stream_uses.empty()) {
      free_block(block, h);
      return;
    }
    if (!captures_underway_.empty()) {  // Note [Graph pools]
      block->pending_events += 1;       // not reusable until its events are recorded
      deferred_frees_.push_back(block);
      return;
    }
    record_free_events(block, h);
  }

  // Records, on each other stream that used `block`, the event its reuse waits for.
  void record_free_events(Block* block, const HistorySettings& h) {
    for (const MLUStream& stream : block->stream_uses) {
      mlu::mluEvent_t event = take_event();
      // A destroyed (external) queue has finished its work: nothing to wait for.
      if (mlu::mluEventRecord(event, stream.queue()) != mlu::mluSuccess) {
        free_events_.push_back(event);
        continue;
      }
      events_.emplace_back(event, block);
      block->pending_events += 1;
    }
    block->stream_uses.clear();
    if (block->pending_events == 0) free_block(block, h);
  }

  void record_stream(Block* block, MLUStream stream) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream == block->stream) return;
    for (const MLUStream& s : block->stream_uses) {
      if (s == stream) return;
    }
    block->stream_uses.push_back(stream);
  }

  void empty_cache() {
    HistorySettings h = history().get();
    std::lock_guard<std::mutex> lock(mu_);
    TORCH_CHECK(captures_underway_.empty(), "torch.mlu.empty_cache() cannot run while a graph is being captured on mlu:",
                static_cast<int>(device_), " (it would synchronize the device); call it before capture_begin or after "
                "capture_end");
    free_deferred(h);
    stats_.num_sync_all_streams += 1;
    for (auto& [event, block] : events_) MLU_CHECK(mlu::mluEventSynchronize(event));
    process_events(h);
    release_cached_blocks(/*wait=*/true, h);
  }

  void set_history(const HistorySettings& h, bool clear) {
    std::lock_guard<std::mutex> lock(mu_);
    if (clear) trace_.clear();
    if (!h.enabled) {
      for (auto& [ptr, block] : allocated_) block->context = nullptr;
    }
  }

  void snapshot(SnapshotInfo& out) {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<Block*> all;
    for (auto& [ptr, block] : allocated_) all.insert(block);
    for (BlockPool* pool : all_pools()) all.insert(pool->blocks.begin(), pool->blocks.end());
    for (auto& [event, block] : events_) all.insert(block);
    all.insert(deferred_frees_.begin(), deferred_frees_.end());
    for (Block* head : all) {
      if (head->prev != nullptr) continue;
      SegmentInfo segment{device_, reinterpret_cast<uintptr_t>(head->ptr), 0, 0, 0, 0, head->stream.id(),
                          head->pool->is_small, head->pool->owner, {}};
      for (Block* b = head; b != nullptr; b = b->next) {
        const char* state = b->allocated ? "active_allocated" : b->pending_events > 0 ? "active_pending_free" : "inactive";
        segment.blocks.push_back({reinterpret_cast<uintptr_t>(b->ptr), b->size, b->allocated ? b->requested : 0, state,
                                  b->context});
        segment.total_size += b->size;
        if (b->allocated) {
          segment.allocated_size += b->size;
          segment.requested_size += b->requested;
        }
        if (b->allocated || b->pending_events > 0) segment.active_size += b->size;
      }
      out.segments.push_back(std::move(segment));
    }
    out.device_traces[device_] = trace_.ordered();
  }

  Block* find_allocated(void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocated_.find(ptr);
    return it == allocated_.end() ? nullptr : it->second;
  }

  DeviceStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> lock(mu_);
    for_each_stat(stats_, [](Stat& stat) { stat.reset_accumulated(); });
    stats_.num_alloc_retries = 0;
    stats_.num_ooms = 0;
    stats_.num_sync_all_streams = 0;
    stats_.num_device_alloc = 0;
    stats_.num_device_free = 0;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    for_each_stat(stats_, [](Stat& stat) { stat.reset_peak(); });
  }

  // Note [Graph pools]: allocations on streams `filter` accepts come from pool `id` until end_allocate_to_pool.
  void begin_allocate_to_pool(c10::MempoolId_t id, std::function<bool(const MLUStream&)> filter) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graph_pools_.find(id);
    if (it == graph_pools_.end()) {
      graph_pools_.emplace(id, std::make_unique<PrivatePool>(id));
    } else {
      TORCH_INTERNAL_ASSERT(it->second->use_count > 0, "a released graph pool was reused");
      it->second->use_count += 1;
    }
    captures_underway_.emplace_back(id, std::move(filter));
  }

  void end_allocate_to_pool(c10::MempoolId_t id) {
    HistorySettings h = history().get();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(captures_underway_.begin(), captures_underway_.end(),
                           [&](const auto& capture) { return capture.first == id; });
    TORCH_INTERNAL_ASSERT(it != captures_underway_.end(), "endAllocateToPool: no capture allocates to this pool");
    captures_underway_.erase(it);
    if (captures_underway_.empty()) free_deferred(h);
  }

  // One graph (or capture) stops using pool `id`; at zero the pool is freeable.
  void release_pool(c10::MempoolId_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graph_pools_.find(id);
    TORCH_CHECK(it != graph_pools_.end() && it->second->use_count > 0, "releasePool: mlu:", static_cast<int>(device_),
                " has no graph pool (", id.first, ", ", id.second, ") in use");
    it->second->use_count -= 1;
  }

  void set_fraction(double fraction) {
    std::lock_guard<std::mutex> lock(mu_);
    fraction_ = fraction;
    allowed_ = static_cast<size_t>(fraction * static_cast<double>(capacity_));
  }

  double fraction() {
    std::lock_guard<std::mutex> lock(mu_);
    return fraction_;
  }

 private:
  // profile_memory=True: the [memory] events and device-memory columns of
  // torch.profiler. Called with mu_ held, after the stats changed.
  void report_to_profiler(void* ptr, int64_t delta) const {
    if (!c10::memoryProfilingEnabled()) return;
    const auto aggregate = static_cast<size_t>(StatType::AGGREGATE);
    c10::reportMemoryUsageToProfiler(ptr, delta, static_cast<size_t>(stats_.allocated_bytes[aggregate].current),
                                     reserved(), c10::Device(c10::DeviceType::PrivateUse1, device_));
  }

  size_t reserved() const {
    return static_cast<size_t>(stats_.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)].current);
  }

  Block* take_free_block(BlockPool& pool, MLUStream stream, size_t size, const MLUAllocatorConfig& config) {
    Block key(device_, stream, size, &pool, nullptr);
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
    Block* block = *it;
    // Keep oversize blocks for oversize requests, and do not waste them.
    if (size < config.max_split_size && block->size >= config.max_split_size) return nullptr;
    if (size >= config.max_split_size && block->size >= size + kLargeBuffer) return nullptr;
    pool.blocks.erase(it);
    if (block->is_split()) {
      update(stats_.inactive_split, pool, -1);
      update(stats_.inactive_split_bytes, pool, -static_cast<int64_t>(block->size));
    }
    return block;
  }

  // The pool a request of `size` on `stream` is served from (Note [Graph pools]).
  BlockPool& pool_for(size_t size, const MLUStream& stream) {
    for (const auto& [id, filter] : captures_underway_) {
      if (!filter(stream)) continue;
      PrivatePool& pool = *graph_pools_.at(id);
      return size <= kSmallSize ? pool.small : pool.large;
    }
    return size <= kSmallSize ? small_ : large_;
  }

  std::vector<BlockPool*> all_pools() {
    std::vector<BlockPool*> pools{&small_, &large_};
    for (auto& [id, pool] : graph_pools_) {
      pools.push_back(&pool->small);
      pools.push_back(&pool->large);
    }
    return pools;
  }

  // Frees that waited for the end of all captures (Note [Graph pools]).
  void free_deferred(const HistorySettings& h) {
    std::vector<Block*> blocks;
    blocks.swap(deferred_frees_);
    for (Block* block : blocks) {
      block->pending_events -= 1;
      record_free_events(block, h);
    }
  }

  bool should_split(const Block& block, size_t size, const MLUAllocatorConfig& config) const {
    size_t remaining = block.size - size;
    if (block.pool->is_small) return remaining >= kMinBlockSize;
    return size < config.max_split_size && remaining > kSmallSize;
  }

  void split(Block* block, size_t size) {
    auto* rest = new Block(device_, block->stream, block->size - size, block->pool, static_cast<char*>(block->ptr) + size);
    rest->prev = block;
    rest->next = block->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    block->pool->blocks.insert(rest);
    update(stats_.inactive_split, *rest->pool, 1);
    update(stats_.inactive_split_bytes, *rest->pool, static_cast<int64_t>(rest->size));
  }

  Block* new_segment(BlockPool& pool, MLUStream stream, size_t bytes, const HistorySettings& h) {
    if (reserved() + bytes > allowed_) return nullptr;
    c10::DeviceIndex previous = exchange_device(device_);
    void* ptr = nullptr;
    mlu::mluError_t status = mlu::mluMalloc(&ptr, bytes);
    exchange_device(previous);
    if (status == mlu::mluErrorMemoryAllocation) {
      last_device_failure_ = mlu::mluGetLastErrorDetail();
      return nullptr;
    }
    MLU_CHECK(status);
    pool.segments += 1;
    update(stats_.segment, pool, 1);
    update(stats_.reserved_bytes, pool, static_cast<int64_t>(bytes));
    stats_.num_device_alloc += 1;
    if (bytes >= MLUAllocatorConfig::get().max_split_size) stats_.oversize_segments.increase(1);
    record(h, TraceEntry::SEGMENT_ALLOC, reinterpret_cast<uintptr_t>(ptr), bytes, stream, nullptr);
    return new Block(device_, stream, bytes, &pool, ptr);
  }

  // Returns a whole (unsplit, free) segment to the device, ordered on its stream.
  void release_segment(Block* block, const HistorySettings& h) {
    record(h, TraceEntry::SEGMENT_FREE, reinterpret_cast<uintptr_t>(block->ptr), block->size, block->stream, nullptr);
    mlu::mluError_t status = mlu::mluFreeAsync(block->ptr, block->stream.queue());
    if (status == mlu::mluErrorInvalidResourceHandle) {
      status = mlu::mluFree(block->ptr);  // the segment's (external) queue is gone: free synchronously
    }
    MLU_CHECK(status);
    block->pool->segments -= 1;
    update(stats_.segment, *block->pool, -1);
    update(stats_.reserved_bytes, *block->pool, -static_cast<int64_t>(block->size));
    stats_.num_device_free += 1;
    if (block->size >= MLUAllocatorConfig::get().max_split_size) stats_.oversize_segments.decrease(1);
    delete block;
  }

  // Releases every cached whole segment; with `wait`, also waits until the
  // device has the memory back (stream-ordered frees complete).
  void release_cached_blocks(bool wait, const HistorySettings& h) {
    std::vector<BlockPool*> pools{&large_, &small_};
    for (auto& [id, pool] : graph_pools_) {
      if (pool->use_count > 0) continue;  // a live graph's memory stays
      pools.push_back(&pool->large);
      pools.push_back(&pool->small);
    }
    for (BlockPool* pool : pools) {
      for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
        Block* block = *it;
        if (block->is_split()) {
          ++it;
          continue;
        }
        it = pool->blocks.erase(it);
        release_segment(block, h);
      }
    }
    for (auto it = graph_pools_.begin(); it != graph_pools_.end();) {
      const PrivatePool& pool = *it->second;
      const bool empty = pool.use_count == 0 && pool.small.segments == 0 && pool.large.segments == 0;
      it = empty ? graph_pools_.erase(it) : std::next(it);
    }
    if (wait) MLU_CHECK(mlu::mluDeviceSynchronizeOn(device_));
  }

  void free_block(Block* block, const HistorySettings& h) {
    BlockPool& pool = *block->pool;
    update(stats_.active, pool, -1);
    update(stats_.active_bytes, pool, -static_cast<int64_t>(block->size));
    record(h, TraceEntry::FREE_COMPLETED, reinterpret_cast<uintptr_t>(block->ptr), block->size, block->stream,
           block->context);
    block->context = nullptr;
    if (MLUAllocatorConfig::get().caching_disabled && !pool.is_private() && captures_underway_.empty()) {
      release_segment(block, h);
      return;
    }
    merge(block, block->prev);
    merge(block, block->next);
    if (block->is_split()) {
      update(stats_.inactive_split, pool, 1);
      update(stats_.inactive_split_bytes, pool, static_cast<int64_t>(block->size));
    }
    pool.blocks.insert(block);
  }

  // Absorbs `neighbour` into `block` if it is free and cached.
  void merge(Block* block, Block* neighbour) {
    if (neighbour == nullptr || neighbour->allocated || neighbour->pending_events > 0) return;
    BlockPool& pool = *block->pool;
    pool.blocks.erase(neighbour);
    update(stats_.inactive_split, pool, -1);
    update(stats_.inactive_split_bytes, pool, -static_cast<int64_t>(neighbour->size));
    if (block->prev == neighbour) {
      block->ptr = neighbour->ptr;
      block->prev = neighbour->prev;
      if (block->prev != nullptr) block->prev->next = block;
    } else {
      block->next = neighbour->next;
      if (block->next != nullptr) block->next->prev = block;
    }
    block->size += neighbour->size;
    delete neighbour;
  }

  // Frees the blocks whose recorded streams have passed their free point.
  void process_events(const HistorySettings& h) {
    for (auto it = events_.begin(); it != events_.end();) {
      mlu::mluError_t status = mlu::mluEventQuery(it->first);
      if (status == mlu::mluErrorNotReady) {
        ++it;
        continue;
      }
      MLU_CHECK(status);
      Block* block = it->second;
      free_events_.push_back(it->first);
      it = events_.erase(it);
      if (--block->pending_events == 0) free_block(block, h);
    }
  }

  mlu::mluEvent_t take_event() {
    if (!free_events_.empty()) {
      mlu::mluEvent_t event = free_events_.back();
      free_events_.pop_back();
      return event;
    }
    mlu::mluEvent_t event = nullptr;
    MLU_CHECK(mlu::mluEventCreateWithFlags(&event, mlu::mluEventDisableTiming));
    return event;
  }

  std::pair<size_t, size_t> memory_info() const {
    size_t free = 0, total = 0;
    c10::DeviceIndex previous = exchange_device(device_);
    mlu::mluMemGetInfo(&free, &total);
    exchange_device(previous);
    return {free, total};
  }

  size_t free_bytes() const { return memory_info().first; }

  void record(const HistorySettings& h, TraceEntry::Action action, uintptr_t addr, size_t size, const MLUStream& stream,
              std::shared_ptr<c10::GatheredContext> context) {
    if (!h.record_trace) return;
    trace_.push(TraceEntry{action, addr, size, stream.id(), now_us(), std::move(context)}, h.max_entries);
  }

  std::string oom_message(size_t requested) const {
    auto [free, total] = memory_info();
    size_t allocated = static_cast<size_t>(stats_.allocated_bytes[0].current);
    std::ostringstream os;
    os << "MLU out of memory. Tried to allocate " << format_size(requested) << ". MLU " << static_cast<int>(device_)
       << " has a total capacity of " << format_size(total) << " of which " << format_size(free) << " is free. ";
    if (fraction_ < 1.0) {
      os << "This process is limited to " << format_size(allowed_) << " (set_per_process_memory_fraction("
         << fraction_ << ")). ";
    }
    os << "Of the allocated memory " << format_size(allocated) << " is allocated by PyTorch, and "
       << format_size(reserved() - allocated) << " is reserved by PyTorch but unallocated. If reserved but "
       << "unallocated memory is large try setting max_split_size_mb in PYTORCH_MLU_ALLOC_CONF to avoid "
       << "fragmentation. The software MLU's capacity is set by TORCH_MLU_DEVICE_MEMORY.";
    // A failure that was not the capacity's (Note [Fault injection]) says why.
    if (last_device_failure_.find("TORCH_MLU_FAULT_INJECT") != std::string::npos) os << " " << last_device_failure_;
    return os.str();
  }

  const c10::DeviceIndex device_;
  size_t capacity_ = 0;
  size_t allowed_ = 0;     // fraction_ * capacity_
  double fraction_ = 1.0;
  std::mutex mu_;
  BlockPool small_{true};
  BlockPool large_{false};
  std::map<c10::MempoolId_t, std::unique_ptr<PrivatePool>> graph_pools_;
  std::vector<std::pair<c10::MempoolId_t, std::function<bool(const MLUStream&)>>> captures_underway_;
  std::vector<Block*> deferred_frees_;  // freed while capturing, used on other streams
  ska::flat_hash_map<void*, Block*> allocated_;
  std::string last_device_failure_;  // the runtime's explanation of the last failed mluMalloc
  std::deque<std::pair<mlu::mluEvent_t, Block*>> events_;
  std::vector<mlu::mluEvent_t> free_events_;
  DeviceStats stats_;
  TraceRing trace_;
};

class MLUCachingDeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t size) override {
    c10::DeviceIndex device = current_device();
    c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (size == 0) return c10::DataPtr(nullptr, nullptr, &free_block_context, where);
    Block* block = for_device(device).malloc(size, getCurrentMLUStream(device));
    trace::memory_allocation(block->ptr);
    return c10::DataPtr(block->ptr, block, &free_block_context, where);
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    MLU_CHECK(mlu::mluMemcpyAsync(dest, src, count, mlu::mluMemcpyDeviceToDevice, getCurrentMLUStream().queue()));
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t) override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) for_device(d).empty_cache();
  }

  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    if (data.get_deleter() != &free_block_context || data.get_context() == nullptr) return;
    auto* block = static_cast<Block*>(data.get_context());
    for_device(block->device).record_stream(block, MLUStream(stream));
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override { return for_device(device).stats(); }
  void resetAccumulatedStats(c10::DeviceIndex device) override { for_device(device).reset_accumulated(); }
  void resetPeakStats(c10::DeviceIndex device) override { for_device(device).reset_peak(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    c10::DeviceIndex previous = exchange_device(device);
    size_t free = 0, total = 0;
    mlu::mluError_t status = mlu::mluMemGetInfo(&free, &total);
    exchange_device(previous);
    MLU_CHECK(status);
    return {free, total};
  }

  static DeviceCachingAllocator& for_device(c10::DeviceIndex device) {
    static std::vector<std::unique_ptr<DeviceCachingAllocator>>* allocators = [] {
      auto* all = new std::vector<std::unique_ptr<DeviceCachingAllocator>>();
      for (c10::DeviceIndex d = 0; d < device_count(); ++d) all->push_back(std::make_unique<DeviceCachingAllocator>(d));
      return all;
    }();
    check_device_index(device);
    return *(*allocators)[device];
  }

  static void free_block_context(void* context) {
    // A forked child leaks what it inherited (Note [Forked children]): its
    // exit gives the memory back, and the allocator's lock may be held by a
    // parent thread that does not exist in the child.
    if (context == nullptr || mlu::mluIsForkedChild()) return;
    auto* block = static_cast<Block*>(context);
    trace::memory_deallocation(block->ptr);
    for_device(block->device).free(block);
  }
};

MLUCachingDeviceAllocator g_allocator;

}  // namespace

c10::DeviceAllocator* getMLUDeviceAllocator() { return &g_allocator; }

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

namespace MLUCachingAllocator {

void emptyCache() { g_allocator.emptyCache({0, 0}); }

void setMemoryFraction(double fraction, c10::DeviceIndex device) {
  TORCH_CHECK(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction, ". Allowed range: 0~1");
  MLUCachingDeviceAllocator::for_device(device).set_fraction(fraction);
}

double getMemoryFraction(c10::DeviceIndex device) { return MLUCachingDeviceAllocator::for_device(device).fraction(); }

DeviceStats getDeviceStats(c10::DeviceIndex device) { return g_allocator.getDeviceStats(device); }
void resetAccumulatedStats(c10::DeviceIndex device) { g_allocator.resetAccumulatedStats(device); }
void resetPeakStats(c10::DeviceIndex device) { g_allocator.resetPeakStats(device); }
size_t maxSplitSize() { return MLUAllocatorConfig::get().max_split_size; }

void recordHistory(const HistorySettings& settings, bool clear_history) {
  History& h = history();
  {
    std::lock_guard<std::mutex> lock(h.mu);
    h.settings = settings;
    h.on.store(settings.enabled, std::memory_order_relaxed);
  }
  for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
    MLUCachingDeviceAllocator::for_device(d).set_history(settings, clear_history);
  }
}

SnapshotInfo snapshot() {
  SnapshotInfo info;
  info.device_traces.resize(device_count());
  for (c10::DeviceIndex d = 0; d < device_count(); ++d) MLUCachingDeviceAllocator::for_device(d).snapshot(info);
  return info;
}

void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t id, std::function<bool(const MLUStream&)> filter) {
  MLUCachingDeviceAllocator::for_device(device).begin_allocate_to_pool(id, std::move(filter));
}

void endAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t id) {
  MLUCachingDeviceAllocator::for_device(device).end_allocate_to_pool(id);
}

void releasePool(c10::DeviceIndex device, c10::MempoolId_t id) {
  MLUCachingDeviceAllocator::for_device(device).release_pool(id);
}

void* raw_alloc(size_t bytes, MLUStream stream) {
  if (bytes == 0) return nullptr;
  void* ptr = MLUCachingDeviceAllocator::for_device(stream.device_index()).malloc(bytes, stream)->ptr;
  trace::memory_allocation(ptr);
  return ptr;
}

void raw_delete(void* ptr) {
  if (ptr == nullptr) return;
  for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
    DeviceCachingAllocator& allocator = MLUCachingDeviceAllocator::for_device(d);
    if (Block* block = allocator.find_allocated(ptr)) {
      trace::memory_deallocation(ptr);
      allocator.free(block);
      return;
    }
  }
  TORCH_CHECK(false, "caching_allocator_delete: ", ptr, " was not allocated by the mlu caching allocator");
}

}  // namespace MLUCachingAllocator
}  // namespace torch_mlu
