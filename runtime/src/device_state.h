// Internal: per-device state of the runtime.
//
// DeviceState objects are created once (for the visible devices) and live as
// long as the process. Each records its memory use against its capacity, the
// queues created on it (for device-wide synchronization) and the error that a
// destroyed queue left pending (see Note [Errors belong to queues] in queue.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "mlu_runtime/device.h"
#include "mlu_runtime/status.h"
#include "monitor_record.h"

namespace mlu {
struct mluQueue_st;
}

namespace mlu::detail {

// What every device calls itself (mluDeviceProp::name, the monitor).
constexpr const char* kDeviceName = "MLU590 (software MLU)";

struct DeviceState {
  int index = 0;
  mluDeviceProp props{};
  size_t capacity = 0;
  std::atomic<size_t> used{0};

  std::mutex queues_mu;
  std::vector<mluQueue_st*> queues;   // live queues, default queue first
  mluQueue_st* default_queue = nullptr;

  std::mutex error_mu;
  bool has_error = false;
  std::string error_detail;  // left pending by a destroyed queue

  // Keeps a destroyed queue's pending error (the first one wins).
  void adopt_error(std::string detail);
  // Device-wide: mluErrorLaunchFailure (and the detail) for one pending error
  // of this device (a destroyed queue's, else the first queue's with one),
  // which it clears; mluSuccess when none is pending.
  mluError_t take_error();
  // Waits for all work launched so far on this device's queues.
  void wait_idle();
  // The capacity, or the smaller one Note [Fault injection] imposes.
  size_t effective_capacity() const;
  // Reserves `bytes` against the capacity; false if they do not fit.
  bool reserve_memory(size_t bytes);
  void release_memory(size_t bytes) {
    used.fetch_sub(bytes, std::memory_order_relaxed);
    monitor_memory(index, -int64_t(bytes));
  }
};

int visible_device_count();
// nullptr if `device` is not a visible ordinal.
DeviceState* device_state(int device);
// mluSuccess, or mluErrorInvalidDevice with a detail naming the valid range.
mluError_t check_device(int device);
int& current_device();
mluQueue_st* default_queue(DeviceState& state);

}  // namespace mlu::detail
