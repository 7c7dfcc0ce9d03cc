#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "capture.h"
#include "config.h"
#include "device_state.h"
#include "error_state.h"
#include "fault_state.h"
#include "fork_state.h"
#include "mlu_runtime/device.h"
#include "monitor_record.h"
#include "queue_impl.h"

namespace mlu::detail {
namespace {

constexpr int kArchMajor = 5;
constexpr int kArchMinor = 9;

std::vector<std::unique_ptr<DeviceState>> make_devices() {
  const MachineConfig& config = machine_config();
  std::vector<std::unique_ptr<DeviceState>> devices;
  for (size_t i = 0; i < config.visible.size(); ++i) {
    auto state = std::make_unique<DeviceState>();
    state->index = static_cast<int>(i);
    state->capacity = config.memory_per_device;
    mluDeviceProp& p = state->props;
    std::snprintf(p.name, sizeof p.name, "%s", kDeviceName);
    p.totalGlobalMem = config.memory_per_device;
    p.major = kArchMajor;
    p.minor = kArchMinor;
    p.multiProcessorCount = config.cores_per_device;
    p.clusterCount = config.cores_per_device;
    p.coresPerCluster = 1;
    p.isIntegrated = 0;
    p.physicalId = config.visible[i];
    p.directHostAccess = config.trap_host_access ? 0 : 1;  // Note [Host-access trap]
    devices.push_back(std::move(state));
  }
  return devices;
}

// Devices live for the whole process (never destroyed: device threads may
// still use them while static destructors run).
std::vector<std::unique_ptr<DeviceState>>& devices() {
  static auto* all = new std::vector<std::unique_ptr<DeviceState>>(make_devices());
  return *all;
}

}  // namespace

int visible_device_count() {
  static const int count = static_cast<int>(devices().size());
  return count;
}

DeviceState* device_state(int device) {
  if (device < 0 || device >= visible_device_count()) return nullptr;
  return devices()[device].get();
}

mluError_t check_device(int device) {
  // Every device guard and mluSetDevice comes here: the common case is two
  // comparisons.
  static const bool configured = machine_config().error.empty();
  if (configured && device >= 0 && device < visible_device_count()) return mluSuccess;
  if (!configured) return fail(mluErrorInitialization, machine_config().error);
  int count = visible_device_count();
  std::string detail = "device ordinal " + std::to_string(device) + " is not valid: ";
  detail += count == 0 ? std::string("no MLU device is visible")
                       : "valid ordinals are 0.." + std::to_string(count - 1);
  return fail(mluErrorInvalidDevice, detail);
}

int& current_device() {
  thread_local int device = 0;
  return device;
}

void DeviceState::adopt_error(std::string detail) {
  std::lock_guard<std::mutex> lock(error_mu);
  if (has_error) return;
  has_error = true;
  error_detail = std::move(detail);
}

mluError_t DeviceState::take_error() {
  std::string detail;
  {
    std::lock_guard<std::mutex> lock(error_mu);
    if (has_error) {
      has_error = false;
      detail.swap(error_detail);
      return fail(mluErrorLaunchFailure, std::move(detail));
    }
  }
  std::vector<mluQueue_st*> live;
  {
    std::lock_guard<std::mutex> lock(queues_mu);
    live = queues;
  }
  for (mluQueue_st* queue : live) {
    if (queue->take_error_detail(UINT64_MAX, &detail)) return fail(mluErrorLaunchFailure, std::move(detail));
  }
  return mluSuccess;
}

void DeviceState::wait_idle() {
  std::vector<std::pair<mluQueue_st*, uint64_t>> targets;
  {
    std::lock_guard<std::mutex> lock(queues_mu);
    for (mluQueue_st* queue : queues) targets.emplace_back(queue, queue->last_launched());
  }
  for (auto& [queue, seq] : targets) queue->wait_for(seq);
}

size_t DeviceState::effective_capacity() const { return std::min(capacity, fault_capacity_limit()); }

bool DeviceState::reserve_memory(size_t bytes) {
  const size_t capacity = effective_capacity();
  // Note [Shared device capacity]: the other processes' use counts, read under the lock that orders reservations.
  SharedCapacityLock shared(index);
  size_t others = shared.active() ? monitor_others_memory(index, /*check_alive=*/false) : 0;
  size_t current = used.load(std::memory_order_relaxed);
  if (others != 0 && (bytes > capacity || current + others > capacity - std::min(bytes, capacity))) {
    others = monitor_others_memory(index, /*check_alive=*/true);  // a dead process's memory comes back
  }
  do {
    if (bytes > capacity || others > capacity - bytes || current > capacity - bytes - others) return false;
  } while (!used.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  monitor_memory(index, int64_t(bytes));
  return true;
}

mluQueue_st* default_queue(DeviceState& state) {
  std::lock_guard<std::mutex> lock(state.queues_mu);
  if (state.default_queue == nullptr) {
    auto* queue = new mluQueue_st();
    queue->device = state.index;
    queue->is_default = true;
    register_queue(queue);
    state.default_queue = queue;
    state.queues.insert(state.queues.begin(), queue);
    monitor_queues(state.index, 1);
  }
  return state.default_queue;
}

}  // namespace mlu::detail

namespace mlu {
using namespace detail;

mluError_t mluGetDeviceCount(int* count) {
  if (count == nullptr) return fail(mluErrorInvalidValue, "count must not be null");
  if (!machine_config().error.empty()) {
    *count = 0;
    return fail(mluErrorInitialization, machine_config().error);
  }
  *count = visible_device_count();
  return mluSuccess;
}

bool mluIsForkedChild() { return in_forked_child(); }

mluError_t mluGetDevice(int* device) {
  if (device == nullptr) return fail(mluErrorInvalidValue, "device must not be null");
  *device = current_device();
  return mluSuccess;
}

mluError_t mluSetDevice(int device) {
  if (mluError_t status = check_device(device)) return status;
  current_device() = device;
  return mluSuccess;
}

int mluConfiguredCoresPerDevice() {
  std::string ignored;  // reported by the first call that reads the whole configuration
  return read_cores_per_device(ignored);
}

mluError_t mluGetDeviceProperties(mluDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(mluErrorInvalidValue, "prop must not be null");
  if (mluError_t status = check_device(device)) return status;
  *prop = device_state(device)->props;
  return mluSuccess;
}

mluError_t mluRuntimeGetVersion(int* version) {
  if (version == nullptr) return fail(mluErrorInvalidValue, "version must not be null");
  *version = kMluRuntimeVersion;
  return mluSuccess;
}

mluError_t mluDriverGetVersion(int* version) { return mluRuntimeGetVersion(version); }

mluError_t mluDeviceSynchronizeOn(int device) {
  if (mluError_t status = check_device(device)) return status;
  if (in_forked_child()) return fail_in_forked_child();
  if (on_device_thread()) return fail(mluErrorInvalidValue, "a device task cannot synchronize a whole device");
  if (mluError_t s = refuse_if_device_captures(device, "synchronizing a device that has a capturing queue")) return s;
  if (mluError_t s = refuse_unsafe_call("synchronizing a device")) return s;
  DeviceState* state = device_state(device);
  state->wait_idle();
  return state->take_error();
}

mluError_t mluDeviceSynchronize() { return mluDeviceSynchronizeOn(current_device()); }

}  // namespace mlu
