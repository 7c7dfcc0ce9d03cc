// Memory history of the mlu caching allocator, and snapshots of its state,
// in the shapes PyTorch's memory tools read (torch.cuda.memory._snapshot(),
// torch.cuda._memory_viz).
//
// Recording is off by default. When on, each allocation keeps the context
// (a stack trace, gathered by a function the Python layer installs) that
// created it, and with trace recording every alloc/free/segment event is
// appended to a per-device ring buffer of at most max_entries entries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

namespace torch_mlu {

struct TraceEntry {
  enum Action { ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, SEGMENT_MAP, SEGMENT_UNMAP, SNAPSHOT, OOM };
  Action action;
  uintptr_t addr;   // for OOM: the bytes still free on the device
  size_t size;
  int64_t stream;
  int64_t time_us;
  std::shared_ptr<c10::GatheredContext> context;
};

struct BlockInfo {
  uintptr_t address;
  size_t size;
  size_t requested_size;
  const char* state;  // "active_allocated", "active_pending_free" or "inactive"
  std::shared_ptr<c10::GatheredContext> context;
};

struct SegmentInfo {
  int device;
  uintptr_t address;
  size_t total_size;
  size_t allocated_size;
  size_t active_size;
  size_t requested_size;
  int64_t stream;
  bool is_small;
  c10::MempoolId_t pool_id;  // the private pool (graph, MemPool) it belongs to; {0, 0}: none
  bool is_expandable;        // a mapped run of an expandable segment
  std::vector<BlockInfo> blocks;
};

struct SnapshotInfo {
  std::vector<SegmentInfo> segments;
  std::vector<std::vector<TraceEntry>> device_traces;
};

// Who asked for a record, and which records carry a stack trace.
enum class RecordContext { NEVER, STATE, ALLOC, ALL };

struct HistorySettings {
  bool enabled = false;            // keep contexts of live allocations
  bool record_trace = false;       // also keep the event trace ("all")
  RecordContext context = RecordContext::NEVER;
  c10::CachingDeviceAllocator::CreateContextFn gather = nullptr;
  size_t max_entries = SIZE_MAX;
};

// Per-device ring buffer of trace entries. Not thread-safe: the owner locks.
class TraceRing {
 public:
  void push(TraceEntry entry, size_t max_entries);
  std::vector<TraceEntry> ordered() const;  // oldest first
  void clear();

 private:
  std::vector<TraceEntry> entries_;
  size_t next_ = 0;  // where the next entry goes once the ring is full
};

}  // namespace torch_mlu
