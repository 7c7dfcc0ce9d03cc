// See MLUCachingAllocator.h for the model and Note [Stream-ordered reuse].
#include "csrc/core/MLUCachingAllocator.h"

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <set>
#include <thread>
#include <vector>

#include <mlu_runtime/device.h>
#include <mlu_runtime/event.h>
#include <mlu_runtime/memcpy.h>
#include <mlu_runtime/memory.h>

#include <c10/util/flat_hash_map.h>

#include "csrc/core/MLUAllocatorConfig.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUExpandableSegment.h"
#include "csrc/core/MLUTrace.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUPluggableAllocator.h"
#include "csrc/core/MLUStorageSharing.h"

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
constexpr size_t kExpandablePage = 512 << 10;  // what an expandable segment maps at a time
constexpr size_t kReclaimSlackDivisor = 64;     // Note [Expandable segments]: reclaim past peak + peak / 64

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
  ExpandableSegment* expandable = nullptr;  // the segment it is part of, if expandable
  bool mapped = true;                       // false: address space of `expandable` without memory
  bool is_split() const { return prev != nullptr || next != nullptr; }
  bool is_free() const { return !allocated && pending_events == 0 && stream_uses.empty(); }
};

bool block_less(const Block* a, const Block* b) {
  if (a->stream.id() != b->stream.id()) return a->stream.id() < b->stream.id();
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

bool address_less(const Block* a, const Block* b) {
  if (a->stream.id() != b->stream.id()) return a->stream.id() < b->stream.id();
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

struct BlockPool {
  explicit BlockPool(bool small, c10::MempoolId_t owner = {0, 0}) : is_small(small), owner(owner) {}
  std::set<Block*, decltype(&block_less)> blocks{&block_less};  // free blocks (mapped)
  std::set<Block*, decltype(&address_less)> unmapped{&address_less};  // of expandable segments
  const bool is_small;
  const c10::MempoolId_t owner;  // the private pool this belongs to; {0, 0}: the default pools
  int segments = 0;              // segments whose blocks belong here
  bool no_split = false;         // a MemPool's: blocks are never split
  std::shared_ptr<MLUPluggableAllocator> allocator;  // a MemPool's: where segments come from (else the device)
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
// Note [Expandable segments]
// With expandable_segments:True, a pool does not take new fixed-size segments
// from the device. Instead each stream gets one reservation of address space
// as large as the device (ExpandableSegment) and blocks grow into it: a
// request no cached block fits maps just the pages it needs (512 KiB each) at
// the end of the free block that already ends there, or at the start of the
// unmapped space. So freed blocks merge across what would have been segment
// boundaries. Unmapped ranges are blocks too (mapped == false, in
// BlockPool::unmapped), so splitting and merging work as for mapped blocks; a
// block only merges with a neighbour in the same state.
// Two choices differ from CUDA's, which keeps the small and large pools apart
// and maps 2 MiB / 20 MiB pages (peak reserved / peak allocated 1.04-1.15 on
// the model suite, docs/memory.md):
// - One segment per stream serves every size (the large pool; the small
//   pool's statistics stay 0): two pools each hold their own peak, at
//   different times of a step.
// - Before a growth would take the reserved memory past its peak (plus
//   1/64), the whole free pages of every other cached expandable block are
//   unmapped first (reclaim_free_pages), so memory one stream or region no
//   longer needs serves the growth. Unmapping waits for the device; the slack
//   keeps a steady state (which stays under its peak) from paying for it.
// Releasing cached memory (empty_cache, out-of-memory retries, garbage
// collection) unmaps the whole pages of free blocks, and gives a reservation
// back once nothing in it is mapped. The `segment` statistics count
// reservations with memory mapped; num_device_alloc and num_device_free count
// maps and unmaps. Blocks of expandable segments made while the setting was
// on stay usable after it is turned off, but are no longer chosen for new
// requests.
struct PrivatePool {
  explicit PrivatePool(c10::MempoolId_t id) : small(true, id), large(false, id) {}
  BlockPool small;
  BlockPool large;
  int use_count = 1;
  bool use_on_oom = false;  // requests outside any pool may take its free blocks
};

// Where allocations go while a capture (or a use_mem_pool block) is underway.
struct PoolRouting {
  c10::MempoolId_t id;
  std::function<bool(const MLUStream&)> filter;  // which allocations: by stream (graphs) or thread (MemPool)
  bool graph;  // a graph capture: the allocator must not synchronize meanwhile
};

// Set by the first allocation (MLUCachingAllocator::hasAllocated).
std::atomic<bool> g_has_allocated{false};

// MLUCachingAllocator::attachOutOfMemoryObserver / setOutOfMemorySnapshotPath.
struct OutOfMemoryHooks {
  std::mutex mu;
  std::vector<MLUCachingAllocator::OutOfMemoryObserver> observers;
  std::string snapshot_path;
};

OutOfMemoryHooks& oom_hooks() {
  static auto* hooks = new OutOfMemoryHooks();  // observers may hold Python objects: never destroyed at exit
  return *hooks;
}

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
    if (!g_has_allocated.load(std::memory_order_relaxed)) g_has_allocated.store(true, std::memory_order_relaxed);
    const bool capturing = capturing_graph();
    if (!capturing) {  // Note [Graph pools]: no event queries while capturing
      free_deferred(h);
      process_events(h);
    }
    size_t size = round_size(requested, config);
    BlockPool& pool = pool_for(size, stream, config);
    const bool cache = !config.caching_disabled || pool.is_private();
    Block* block = cache ? take_free_block(pool, stream, size, config) : nullptr;
    if (block == nullptr) {
      const bool expandable = cache && config.expandable_segments && pool.allocator == nullptr;
      size_t bytes = !cache ? size : expandable ? size : segment_size(size);
      if (!capturing && config.garbage_collection_threshold > 0 &&
          reserved() + bytes > config.garbage_collection_threshold * allowed_) {
        release_cached_blocks(/*wait=*/false, h);
      }
      block = expandable ? grow_expandable(pool, stream, size, h) : new_segment(pool, stream, bytes, h);
      if (block == nullptr && !capturing) {
        stats_.num_alloc_retries += 1;
        release_cached_blocks(/*wait=*/true, h);
        block = expandable ? grow_expandable(pool, stream, size, h) : new_segment(pool, stream, bytes, h);
      }
      if (block == nullptr && !capturing && !pool.is_private()) {
        // Note [Sharing mlu storages between processes]: blocks of shared
        // storages that died while other processes had them open, and that
        // they have let go of since. Freeing them takes this lock.
        lock.unlock();
        const bool freed = collect_shared_blocks();
        lock.lock();
        if (freed && !capturing_graph()) {
          block = cache ? take_free_block(pool, stream, size, config) : nullptr;
          if (block == nullptr) {
            release_cached_blocks(/*wait=*/true, h);
            block = expandable ? grow_expandable(pool, stream, size, h) : new_segment(pool, stream, bytes, h);
          }
        }
      }
      if (block == nullptr && !pool.is_private()) block = take_from_oom_pools(size, stream, config);
      if (block == nullptr) {
        stats_.num_ooms += 1;
        record(h, TraceEntry::OOM, free_bytes(), requested, stream, context);
        if (c10::memoryProfilingEnabled()) {
          c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(requested),
                                           static_cast<size_t>(stats_.allocated_bytes[0].current), reserved(),
                                           c10::Device(c10::DeviceType::PrivateUse1, device_));
        }
        std::string message = oom_message(requested);
        auto [device_free, device_total] = memory_info();
        const size_t total = std::min(device_total, allowed_);
        lock.unlock();
        message += notify_out_of_memory(requested, total, device_free);
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
    if (capturing_graph()) {            // Note [Graph pools]
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
    TORCH_CHECK(!capturing_graph(), "torch.mlu.empty_cache() cannot run while a graph is being captured on mlu:",
                static_cast<int>(device_), " (it would synchronize the device); call it before capture_begin or after "
                "capture_end");
    free_deferred(h);
    stats_.num_sync_all_streams += 1;
    for (auto& [event, block] : events_) MLU_CHECK(mlu::mluEventSynchronize(event));
    process_events(h);
    release_cached_blocks(/*wait=*/true, h);
  }

  // empty_cache for one private pool: its free segments, once it is unused.
  void empty_pool_cache(c10::MempoolId_t id) {
    HistorySettings h = history().get();
    std::lock_guard<std::mutex> lock(mu_);
    if (capturing_graph()) return;  // a MemPool dropped during a capture keeps its memory until the next empty_cache
    process_events(h);
    release_cached_blocks(/*wait=*/false, h, id);
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
      // A segment, or a mapped run of an expandable one (Note [Expandable segments]).
      if (head->prev != nullptr && head->prev->mapped) continue;
      SegmentInfo segment{device_, reinterpret_cast<uintptr_t>(head->ptr), 0, 0, 0, 0, head->stream.id(),
                          head->pool->is_small, head->pool->owner, head->expandable != nullptr, {}};
      for (Block* b = head; b != nullptr && b->mapped; b = b->next) {
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
    DeviceStats copy = stats_;
    copy.max_split_size = static_cast<int64_t>(MLUAllocatorConfig::get().max_split_size);  // settings may change
    return copy;
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

  // Note [Graph pools]: allocations `filter` accepts come from pool `id` until
  // end_allocate_to_pool; `graph`: for a capture, which must not synchronize.
  void begin_allocate_to_pool(c10::MempoolId_t id, std::function<bool(const MLUStream&)> filter, bool graph) {
    std::lock_guard<std::mutex> lock(mu_);
    incref_pool(id);
    captures_underway_.push_back({id, std::move(filter), graph});
  }

  // Creates pool `id` with one use, or adds a use (torch.mlu.MemPool).
  void create_or_incref_pool(c10::MempoolId_t id, bool use_on_oom, bool no_split,
                             std::shared_ptr<MLUPluggableAllocator> allocator) {
    std::lock_guard<std::mutex> lock(mu_);
    PrivatePool& pool = incref_pool(id);
    if (pool.use_count > 1) return;
    pool.use_on_oom = use_on_oom;
    for (BlockPool* blocks : {&pool.small, &pool.large}) {
      blocks->no_split = no_split;
      blocks->allocator = allocator;
    }
  }

  int pool_use_count(c10::MempoolId_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graph_pools_.find(id);
    return it == graph_pools_.end() ? 0 : it->second->use_count;
  }

  void end_allocate_to_pool(c10::MempoolId_t id) {
    HistorySettings h = history().get();
    std::lock_guard<std::mutex> lock(mu_);
    // The latest routing to `id` ends (routings nest).
    auto it = std::find_if(captures_underway_.rbegin(), captures_underway_.rend(),
                           [&](const PoolRouting& routing) { return routing.id == id; });
    TORCH_CHECK(it != captures_underway_.rend(), "endAllocateToPool: no capture or use_mem_pool allocates to pool (",
                id.first, ", ", id.second, ") on mlu:", static_cast<int>(device_));
    captures_underway_.erase(std::next(it).base());
    if (!capturing_graph()) free_deferred(h);
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
    if ((*it)->expandable != nullptr) {
      if (config.expandable_segments) {
        // Best fit counts what a block can grow into: prefer a smaller block
        // that fits over one that could serve larger requests by growing.
        auto growable = [](const Block* b) { return b->size + (b->next && !b->next->mapped ? b->next->size : 0); };
        for (auto next = std::next(it); next != pool.blocks.end() && (*next)->stream == stream; ++next) {
          if ((*it)->expandable == nullptr || growable(*next) >= growable(*it)) break;
          it = next;
        }
      } else {  // the setting was turned off: expandable blocks serve no new requests
        while (it != pool.blocks.end() && (*it)->stream == stream && (*it)->expandable != nullptr) ++it;
        if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
      }
    }
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

  // The pool a request of `size` on `stream` is served from (Note [Graph
  // pools]); the innermost routing that accepts it wins.
  BlockPool& pool_for(size_t size, const MLUStream& stream, const MLUAllocatorConfig& config) {
    // Note [Expandable segments]: one segment per stream serves every size.
    const bool small = size <= kSmallSize && !config.expandable_segments;
    for (auto it = captures_underway_.rbegin(); it != captures_underway_.rend(); ++it) {
      if (!it->filter(stream)) continue;
      PrivatePool& pool = *graph_pools_.at(it->id);
      return small ? pool.small : pool.large;
    }
    return small ? small_ : large_;
  }

  bool capturing_graph() const {
    return std::any_of(captures_underway_.begin(), captures_underway_.end(),
                       [](const PoolRouting& routing) { return routing.graph; });
  }

  PrivatePool& incref_pool(c10::MempoolId_t id) {
    auto it = graph_pools_.find(id);
    if (it == graph_pools_.end()) return *graph_pools_.emplace(id, std::make_unique<PrivatePool>(id)).first->second;
    TORCH_CHECK(it->second->use_count > 0, "pool (", id.first, ", ", id.second, ") on mlu:", static_cast<int>(device_),
                " was released and cannot be used again");
    it->second->use_count += 1;
    return *it->second;
  }

  // Out of memory outside any pool: a free block of a use_on_oom MemPool.
  Block* take_from_oom_pools(size_t size, MLUStream stream, const MLUAllocatorConfig& config) {
    for (auto& [id, pool] : graph_pools_) {
      if (!pool->use_on_oom || pool->use_count == 0) continue;
      if (Block* block = take_free_block(size <= kSmallSize ? pool->small : pool->large, stream, size, config)) {
        return block;
      }
    }
    return nullptr;
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
    if (block.pool->no_split) return false;
    if (block.pool->is_small || block.expandable != nullptr) return remaining >= kMinBlockSize;
    return size < config.max_split_size && remaining > kSmallSize;
  }

  void split(Block* block, size_t size) {
    auto* rest = new Block(device_, block->stream, block->size - size, block->pool, static_cast<char*>(block->ptr) + size);
    rest->expandable = block->expandable;
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
    void* ptr = nullptr;
    if (pool.allocator != nullptr) {  // a MemPool's own allocator
      try {
        ptr = pool.allocator->raw_alloc(bytes, device_, stream.queue());
      } catch (const c10::OutOfMemoryError& e) {
        last_device_failure_ = e.what_without_backtrace();
        return nullptr;
      }
    } else {
      c10::DeviceIndex previous = exchange_device(device_);
      mlu::mluError_t status = mlu::mluMalloc(&ptr, bytes);
      exchange_device(previous);
      if (status == mlu::mluErrorMemoryAllocation) {
        last_device_failure_ = mlu::mluGetLastErrorDetail();
        return nullptr;
      }
      MLU_CHECK(status);
    }
    pool.segments += 1;
    update(stats_.segment, pool, 1);
    update(stats_.reserved_bytes, pool, static_cast<int64_t>(bytes));
    stats_.num_device_alloc += 1;
    if (bytes >= MLUAllocatorConfig::get().max_split_size) stats_.oversize_segments.increase(1);
    record(h, TraceEntry::SEGMENT_ALLOC, reinterpret_cast<uintptr_t>(ptr), bytes, stream, nullptr);
    return new Block(device_, stream, bytes, &pool, ptr);
  }

  // Note [Expandable segments]: a block of at least `size` bytes made of free
  // mapped memory and newly mapped pages of the stream's expandable segment,
  // taken out of the pool; nullptr when the device is full.
  Block* grow_expandable(BlockPool& pool, MLUStream stream, size_t size, const HistorySettings& h) {
    const size_t peak = static_cast<size_t>(stats_.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)].peak);
    const size_t pages = (size + kExpandablePage - 1) / kExpandablePage * kExpandablePage;
    if (!capturing_graph() && reserved() + pages > peak + peak / kReclaimSlackDivisor) {
      reclaim_free_pages(pool, find_expandable_block(pool, stream, size, /*reserve=*/false), h);
    }
    Block* candidate = find_expandable_block(pool, stream, size, /*reserve=*/true);
    if (candidate == nullptr) return new_segment(pool, stream, segment_size(size), h);  // no address space left
    // The candidate is unmapped, or free and followed by unmapped space.
    if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), h)) return nullptr;
    while (candidate->size < size) {
      Block* next = candidate->next;  // unmapped: map_block merges `candidate` into it
      if (!map_block(next, std::min(size - candidate->size, next->size), h)) return nullptr;
      candidate = next;
    }
    erase_free(candidate);
    return candidate;
  }

  // Note [Expandable segments]: unmaps the whole free pages of the cached
  // expandable blocks of the default pools (and of `pool`) but `growing`, the
  // block the growth will extend.
  void reclaim_free_pages(BlockPool& pool, const Block* growing, const HistorySettings& h) {
    std::vector<BlockPool*> pools{&small_, &large_};
    if (pool.is_private()) pools.push_back(&pool);
    std::vector<Block*> holes;
    for (BlockPool* p : pools) {
      for (Block* b : p->blocks) {
        if (b->expandable != nullptr && b != growing) holes.push_back(b);
      }
    }
    for (Block* b : holes) unmap_block(b, h);
  }

  // The lowest-addressed free-or-unmapped run of the stream's expandable
  // segment with room for `size` bytes, reserving the segment on first use;
  // nullptr when no address space is left.
  Block* find_expandable_block(BlockPool& pool, MLUStream stream, size_t size, bool reserve) {
    auto room_from = [&](Block* b) {
      size_t bytes = 0;
      for (; bytes < size && b != nullptr && !b->allocated && b->is_free(); b = b->next) bytes += b->size;
      return bytes >= size;
    };
    Block key(device_, stream, 0, &pool, nullptr);
    for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
      Block* candidate = *it;
      if (candidate->prev != nullptr && candidate->prev->is_free()) candidate = candidate->prev;
      if (room_from(candidate)) return candidate;
    }
    if (!reserve) return nullptr;
    const size_t span = (capacity_ + kExpandablePage - 1) / kExpandablePage * kExpandablePage;
    std::unique_ptr<ExpandableSegment> segment = ExpandableSegment::reserve(device_, span, kExpandablePage);
    if (segment == nullptr || segment->size() < size) return nullptr;
    auto* candidate = new Block(device_, stream, segment->size(), &pool, segment->ptr());
    candidate->mapped = false;
    candidate->expandable = segment.get();
    expandable_segments_.push_back(std::move(segment));
    pool.segments += 1;  // keeps a private pool alive while the reservation is
    pool.unmapped.insert(candidate);
    return candidate;
  }

  // Maps the first `size` bytes of the unmapped block `block` (rounded up to
  // pages; the rest stays an unmapped block), merges it with free mapped
  // neighbours and caches it. False when the device is full.
  bool map_block(Block* block, size_t size, const HistorySettings& h) {
    ExpandableSegment& segment = *block->expandable;
    const size_t mapped_before = segment.mapped_bytes();
    const size_t need = (size + segment.page() - 1) / segment.page() * segment.page();
    if (reserved() + need > allowed_) return false;  // set_per_process_memory_fraction
    ExpandableSegment::Range range = segment.map({static_cast<char*>(block->ptr), size});
    if (range.size == 0) {
      last_device_failure_ = mlu::mluGetLastErrorDetail();
      return false;
    }
    BlockPool& pool = *block->pool;
    pool.unmapped.erase(block);
    block->mapped = true;
    if (range.size < block->size) {  // block -> rest (unmapped) -> next
      auto* rest = new Block(device_, block->stream, block->size - range.size, &pool, range.ptr + range.size);
      rest->mapped = false;
      rest->expandable = block->expandable;
      rest->prev = block;
      rest->next = block->next;
      if (rest->next != nullptr) rest->next->prev = rest;
      block->next = rest;
      block->size = range.size;
      pool.unmapped.insert(rest);
    }
    merge(block, block->prev);
    merge(block, block->next);
    insert_free(block);
    if (mapped_before == 0) update(stats_.segment, pool, 1);
    update(stats_.reserved_bytes, pool, static_cast<int64_t>(range.size));
    stats_.num_device_alloc += 1;
    record(h, TraceEntry::SEGMENT_MAP, reinterpret_cast<uintptr_t>(range.ptr), range.size, block->stream, nullptr);
    return true;
  }

  // Unmaps the whole pages of the free cached block `block`; what is left of
  // it on either side stays free and cached.
  void unmap_block(Block* block, const HistorySettings& h) {
    ExpandableSegment& segment = *block->expandable;
    ExpandableSegment::Range range =
        segment.unmap({static_cast<char*>(block->ptr), block->size}, block->stream.queue());
    if (range.size == 0) return;
    BlockPool& pool = *block->pool;
    erase_free(block);
    const size_t before = static_cast<size_t>(range.ptr - static_cast<char*>(block->ptr));
    const size_t after = block->size - before - range.size;
    if (before > 0) {  // prev -> head -> block
      auto* head = new Block(device_, block->stream, before, &pool, block->ptr);
      head->expandable = block->expandable;
      head->prev = block->prev;
      if (head->prev != nullptr) head->prev->next = head;
      head->next = block;
      block->prev = head;
      insert_free(head);
    }
    if (after > 0) {  // block -> tail -> next
      auto* tail = new Block(device_, block->stream, after, &pool, range.ptr + range.size);
      tail->expandable = block->expandable;
      tail->next = block->next;
      if (tail->next != nullptr) tail->next->prev = tail;
      tail->prev = block;
      block->next = tail;
      insert_free(tail);
    }
    block->ptr = range.ptr;
    block->size = range.size;
    block->mapped = false;
    merge(block, block->prev);
    merge(block, block->next);
    pool.unmapped.insert(block);
    if (segment.mapped_bytes() == 0) update(stats_.segment, pool, -1);
    update(stats_.reserved_bytes, pool, -static_cast<int64_t>(range.size));
    stats_.num_device_free += 1;
    record(h, TraceEntry::SEGMENT_UNMAP, reinterpret_cast<uintptr_t>(range.ptr), range.size, block->stream, nullptr);
    if (!block->is_split()) {  // nothing of the reservation is mapped any more: give it back
      pool.unmapped.erase(block);
      pool.segments -= 1;
      std::erase_if(expandable_segments_, [&](const auto& s) { return s.get() == block->expandable; });
      delete block;
    }
  }

  // A free mapped block enters / leaves its pool's cache (inactive_split counts the split ones).
  void insert_free(Block* block) {
    block->pool->blocks.insert(block);
    if (block->is_split()) {
      update(stats_.inactive_split, *block->pool, 1);
      update(stats_.inactive_split_bytes, *block->pool, static_cast<int64_t>(block->size));
    }
  }

  void erase_free(Block* block) {
    block->pool->blocks.erase(block);
    if (block->is_split()) {
      update(stats_.inactive_split, *block->pool, -1);
      update(stats_.inactive_split_bytes, *block->pool, -static_cast<int64_t>(block->size));
    }
  }

  // Returns a whole (unsplit, free) segment to the device, ordered on its stream.
  void release_segment(Block* block, const HistorySettings& h) {
    record(h, TraceEntry::SEGMENT_FREE, reinterpret_cast<uintptr_t>(block->ptr), block->size, block->stream, nullptr);
    if (block->pool->allocator != nullptr) {
      block->pool->allocator->raw_free(block->ptr, block->size, device_, block->stream.queue());
    } else {
      mlu::mluError_t status = mlu::mluFreeAsync(block->ptr, block->stream.queue());
      if (status == mlu::mluErrorInvalidResourceHandle) {
        status = mlu::mluFree(block->ptr);  // the segment's (external) queue is gone: free synchronously
      }
      MLU_CHECK(status);
    }
    block->pool->segments -= 1;
    update(stats_.segment, *block->pool, -1);
    update(stats_.reserved_bytes, *block->pool, -static_cast<int64_t>(block->size));
    stats_.num_device_free += 1;
    if (block->size >= MLUAllocatorConfig::get().max_split_size) stats_.oversize_segments.decrease(1);
    delete block;
  }

  // Releases every cached whole segment (unmaps the free pages of expandable
  // ones): of the default pools and unused private pools, or with `only`, of
  // that private pool if unused. With `wait`, also waits until the device has
  // the memory back (stream-ordered frees complete).
  void release_cached_blocks(bool wait, const HistorySettings& h, c10::MempoolId_t only = {0, 0}) {
    const bool everything = only == c10::MempoolId_t{0, 0};
    std::vector<BlockPool*> pools;
    if (everything) pools = {&large_, &small_};
    for (auto& [id, pool] : graph_pools_) {
      if (pool->use_count > 0 || (!everything && id != only)) continue;  // a live graph's memory stays
      pools.push_back(&pool->large);
      pools.push_back(&pool->small);
    }
    for (BlockPool* pool : pools) {
      std::vector<Block*> to_unmap;  // unmapping changes the set: gathered first
      for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
        Block* block = *it;
        if (block->expandable != nullptr) to_unmap.push_back(block);
        if (block->expandable != nullptr || block->is_split()) {
          ++it;
          continue;
        }
        it = pool->blocks.erase(it);
        release_segment(block, h);
      }
      for (Block* block : to_unmap) unmap_block(block, h);
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
    if (MLUAllocatorConfig::get().caching_disabled && !pool.is_private() && !capturing_graph()) {
      release_segment(block, h);
      return;
    }
    merge(block, block->prev);
    merge(block, block->next);
    insert_free(block);
  }

  // Absorbs `neighbour` into `block` if it is free (or unmapped) and cached
  // as `block` will be: mapped free blocks merge, and unmapped ones.
  void merge(Block* block, Block* neighbour) {
    if (neighbour == nullptr || !neighbour->is_free() || neighbour->mapped != block->mapped) return;
    BlockPool& pool = *block->pool;
    if (neighbour->mapped) {
      erase_free(neighbour);
    } else {
      pool.unmapped.erase(neighbour);
    }
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

  // Runs the out-of-memory observers (no lock held); what the message adds about a snapshot.
  std::string notify_out_of_memory(size_t requested, size_t total, size_t free) {
    OutOfMemoryHooks& hooks = oom_hooks();
    std::vector<MLUCachingAllocator::OutOfMemoryObserver> observers;
    std::string path;
    {
      std::lock_guard<std::mutex> lock(hooks.mu);
      observers = hooks.observers;
      path = hooks.snapshot_path;
    }
    for (const auto& observer : observers) observer(device_, requested, total, free);
    if (path.empty()) return "";
    return " A memory snapshot was written to " + path + " (open it at https://pytorch.org/memory_viz).";
  }

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
    // Note [Shared device capacity] (mlu_runtime/monitor.h): what neither this pool nor free memory accounts for.
    if (total > free + reserved()) {
      os << "Other processes hold " << format_size(total - free - reserved()) << " of it (mlu-smi lists them). ";
    }
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
  std::vector<PoolRouting> captures_underway_;
  std::vector<Block*> deferred_frees_;  // freed while capturing, used on other streams
  ska::flat_hash_map<void*, Block*> allocated_;
  std::string last_device_failure_;  // the runtime's explanation of the last failed mluMalloc
  std::deque<std::pair<mlu::mluEvent_t, Block*>> events_;
  std::vector<mlu::mluEvent_t> free_events_;
  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;
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

  void emptyCache(c10::MempoolId_t pool) override {
    collect_shared_blocks();  // Note [Sharing mlu storages between processes]
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      if (pool == c10::MempoolId_t{0, 0}) {
        for_device(d).empty_cache();
      } else {
        for_device(d).empty_pool_cache(pool);
      }
    }
  }

  void recordStream(const c10::DataPtr& shared_or_not, c10::Stream stream) override {
    // A shared storage's DataPtr wraps the block's (Note [Sharing mlu storages between processes]).
    const c10::DataPtr& data = allocator_data_ptr(shared_or_not);
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

// The caching allocator's own queries, refused while a pluggable allocator serves tensors.
void check_caching_current(const char* what) {
  if (currentPluggableAllocator() != nullptr) MLUPluggableAllocator::unsupported(what);
}

}  // namespace

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

namespace MLUCachingAllocator {

c10::DeviceAllocator* get() { return &g_allocator; }
bool hasAllocated() { return g_has_allocated.load(std::memory_order_relaxed); }

void emptyCache(c10::MempoolId_t pool) { getMLUDeviceAllocator()->emptyCache(pool); }

void setMemoryFraction(double fraction, c10::DeviceIndex device) {
  TORCH_CHECK(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction, ". Allowed range: 0~1");
  check_caching_current("setMemoryFraction");
  MLUCachingDeviceAllocator::for_device(device).set_fraction(fraction);
}

double getMemoryFraction(c10::DeviceIndex device) { return MLUCachingDeviceAllocator::for_device(device).fraction(); }

DeviceStats getDeviceStats(c10::DeviceIndex device) { return getMLUDeviceAllocator()->getDeviceStats(device); }
void resetAccumulatedStats(c10::DeviceIndex device) { getMLUDeviceAllocator()->resetAccumulatedStats(device); }
void resetPeakStats(c10::DeviceIndex device) { getMLUDeviceAllocator()->resetPeakStats(device); }
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
  check_caching_current("snapshot");
  SnapshotInfo info;
  info.device_traces.resize(device_count());
  for (c10::DeviceIndex d = 0; d < device_count(); ++d) MLUCachingDeviceAllocator::for_device(d).snapshot(info);
  return info;
}

void attachOutOfMemoryObserver(OutOfMemoryObserver observer) {
  OutOfMemoryHooks& hooks = oom_hooks();
  std::lock_guard<std::mutex> lock(hooks.mu);
  hooks.observers.push_back(std::move(observer));
}

void setOutOfMemorySnapshotPath(std::string path) {
  OutOfMemoryHooks& hooks = oom_hooks();
  std::lock_guard<std::mutex> lock(hooks.mu);
  hooks.snapshot_path = std::move(path);
}

void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t id, std::function<bool(const MLUStream&)> filter) {
  MLUCachingDeviceAllocator::for_device(device).begin_allocate_to_pool(id, std::move(filter), /*graph=*/true);
}

void beginAllocateCurrentThreadToPool(c10::DeviceIndex device, c10::MempoolId_t id) {
  check_caching_current("use_mem_pool");
  auto filter = [thread = std::this_thread::get_id()](const MLUStream&) { return std::this_thread::get_id() == thread; };
  MLUCachingDeviceAllocator::for_device(device).begin_allocate_to_pool(id, filter, /*graph=*/false);
}

void createOrIncrefPool(c10::DeviceIndex device, c10::MempoolId_t id, bool use_on_oom, bool no_split,
                        std::shared_ptr<MLUPluggableAllocator> allocator) {
  check_caching_current("MemPool");
  MLUCachingDeviceAllocator::for_device(device).create_or_incref_pool(id, use_on_oom, no_split, std::move(allocator));
}

int getPoolUseCount(c10::DeviceIndex device, c10::MempoolId_t id) {
  return MLUCachingDeviceAllocator::for_device(device).pool_use_count(id);
}

void endAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t id) {
  MLUCachingDeviceAllocator::for_device(device).end_allocate_to_pool(id);
}

void releasePool(c10::DeviceIndex device, c10::MempoolId_t id) {
  MLUCachingDeviceAllocator::for_device(device).release_pool(id);
}

void* raw_alloc(size_t bytes, MLUStream stream) {
  if (bytes == 0) return nullptr;
  check_caching_current("caching_allocator_alloc");
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
