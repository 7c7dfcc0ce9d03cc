// Internal: the shared-memory record of Note [Monitor registry] (monitor.h)
// and the hooks through which the runtime keeps it current.
//
// Layout invariants: a record is one file of sizeof(MonitorRecord) bytes; its
// `magic` is stored last when it is created, under a temporary name, before
// the rename that makes it visible. Every field a reader reads after creation
// is a lock-free std::atomic (address-free, so valid across processes). The
// busy fields of a device (busy_since_ns and the buckets) change only under the
// writing process's per-device mutex and inside a sequence lock (`seq` odd
// while they change), so a reader retries instead of seeing half an update.
#pragma once

#include <atomic>
#include <cstdint>

namespace mlu::detail {

constexpr uint64_t kMonitorMagic = 0x0131494d53554c4dULL;  // "MLUSMI1\1"
constexpr int kMonitorDevices = 16;                         // the most physical devices (config.cpp)
constexpr int kMonitorBuckets = 10;
constexpr int64_t kMonitorBucketNs = 100'000'000;           // 10 x 100 ms: utilization over the last second

struct alignas(64) MonitorDeviceRecord {
  std::atomic<uint64_t> capacity;
  std::atomic<uint64_t> memory_used;
  std::atomic<uint32_t> queues;
  std::atomic<uint32_t> busy_queues;
  std::atomic<uint64_t> seq;            // sequence lock over the fields below
  std::atomic<int64_t> busy_since_ns;   // CLOCK_MONOTONIC start of the current busy period; 0: idle
  std::atomic<uint64_t> busy_total_ns;  // every finished busy period
  std::atomic<int64_t> bucket_index[kMonitorBuckets];  // which 100 ms bucket (time / kMonitorBucketNs) a slot holds
  std::atomic<uint64_t> bucket_busy_ns[kMonitorBuckets];
};

struct MonitorRecord {
  std::atomic<uint64_t> magic;
  uint32_t device_count;   // physical devices described
  int32_t pid;
  uint64_t start_ticks;    // field 22 of /proc/<pid>/stat: tells a reused pid apart
  char command[128];       // NUL-terminated
  MonitorDeviceRecord devices[kMonitorDevices];
};

int64_t monitor_now_ns();

// The hooks take a visible device ordinal. Each is a no-op when the record is
// off or could not be created; the first one creates it.
void monitor_memory(int device, int64_t delta_bytes);
void monitor_queues(int device, int delta);
// A queue starts / stops having work on `device`.
void monitor_busy(int device);
void monitor_idle(int device);
// A task ran inline on its launching thread (Note [Small tasks run inline])
// from `start` to `end` (monitor_now_ns): counted busy unless a queue of the
// device was busy then already. Takes no lock when start == end, the usual
// case for a tiny task (Note [Coarse busy clock]).
void monitor_ran_inline(int device, int64_t start, int64_t end);

// Note [Shared device capacity] (monitor.h): while alive, holds the
// cross-process lock over reservations on the physical device of visible
// device `device`; inactive (nothing locked, nothing shared) when sharing is
// off or this process has no record.
class SharedCapacityLock {
 public:
  explicit SharedCapacityLock(int device);
  ~SharedCapacityLock();
  SharedCapacityLock(const SharedCapacityLock&) = delete;
  SharedCapacityLock& operator=(const SharedCapacityLock&) = delete;
  bool active() const { return fd_ >= 0 || unlocked_share_; }

 private:
  int fd_ = -1;
  bool unlocked_share_ = false;
};

// The device memory other processes' records hold on the physical device of
// visible device `device` (counting those with this process's capacity for
// it); with `check_alive`, dead processes' records are deleted and not
// counted. 0 when sharing is off.
size_t monitor_others_memory(int device, bool check_alive);

}  // namespace mlu::detail
