#include "csrc/core/MLUStream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include <mlu_runtime/device.h>
#include <mlu_runtime/graph.h>

#include <c10/util/Exception.h>

#include "csrc/core/MLUEvent.h"
#include "csrc/core/MLUTrace.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

constexpr int kMaxDevices = 64;
constexpr c10::StreamId kPoolSlots = 2 * kStreamsPerPool;

struct ExternalQueue {
  mlu::mluQueue_t queue;
  bool known;  // a handle the runtime made (mluQueueCheckHandle); unknown ones are never passed to it
};

struct DevicePools {
  std::once_flag created;
  std::array<mlu::mluQueue_t, kPoolSlots> queues{};
  std::atomic<uint32_t> next[2] = {0, 0};
  std::mutex external_mu;
  std::vector<ExternalQueue> external;  // id kExternalStreamBase + i
};

DevicePools& pools(c10::DeviceIndex device) {
  static std::array<DevicePools, kMaxDevices> all;
  DevicePools& p = all[device];
  bool created_now = false;
  std::call_once(p.created, [&] {
    created_now = true;
    c10::DeviceIndex previous = exchange_device(device);
    int least = 0, greatest = 0;
    MLU_CHECK(mlu::mluDeviceGetQueuePriorityRange(&least, &greatest));
    for (int i = 0; i < kPoolSlots; ++i) {
      MLU_CHECK(mlu::mluQueueCreateWithPriority(&p.queues[i], i < kStreamsPerPool ? least : greatest));
    }
    exchange_device(previous);
  });
  if (created_now) {
    for (mlu::mluQueue_t queue : p.queues) trace::stream_creation(queue);  // outside call_once (MLUTrace.h)
  }
  return p;
}

c10::DeviceIndex resolve(c10::DeviceIndex device) {
  if (device < 0) return current_device();
  check_device_index(device);
  return device;
}

// Current stream id per device, for this thread.
std::vector<c10::StreamId>& current_ids() {
  thread_local std::vector<c10::StreamId> ids;
  if (ids.empty()) ids.assign(static_cast<size_t>(std::max<int>(1, device_count())), 0);
  return ids;
}

MLUStream make(c10::DeviceIndex device, c10::StreamId id) {
  return MLUStream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id));
}

}  // namespace

MLUStream::MLUStream(c10::Stream stream) : stream_(stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "Expected an mlu stream, got a ",
              stream.device_type(), " stream");
  TORCH_CHECK((stream.id() >= 0 && stream.id() <= kPoolSlots) || stream.id() >= kExternalStreamBase,
              "Invalid mlu stream id ", stream.id());
}

mlu::mluQueue_t MLUStream::queue() const {
  if (id() == 0) {
    // The hot path of every launch on the default stream: look the handle up
    // once per device (it never changes) instead of asking the runtime each time.
    static std::array<std::atomic<mlu::mluQueue_t>, kMaxDevices> defaults{};
    mlu::mluQueue_t queue = defaults[device_index()].load(std::memory_order_acquire);
    if (queue == nullptr) {
      MLU_CHECK(mlu::mluGetDefaultQueue(device_index(), &queue));
      defaults[device_index()].store(queue, std::memory_order_release);
    }
    return queue;
  }
  DevicePools& p = pools(device_index());
  if (id() >= kExternalStreamBase) {
    std::lock_guard<std::mutex> lock(p.external_mu);
    size_t index = static_cast<size_t>(id() - kExternalStreamBase);
    TORCH_CHECK(index < p.external.size(), "Unknown external mlu stream id ", id());
    const ExternalQueue& external = p.external[index];
    // Like CUDA, a bad handle is an error when the stream is used, not made.
    TORCH_CHECK(external.known, "MLU error: invalid resource handle (ExternalStream(", external.queue,
                ") is not a queue of the MLU runtime: pass the mluQueue_t of a queue made by mluQueueCreate)");
    return external.queue;
  }
  return p.queues[id() - 1];
}

int MLUStream::priority() const {
  int priority = 0;
  MLU_CHECK(mlu::mluQueueGetPriority(queue(), &priority));
  return priority;
}

bool MLUStream::query() const {
  mlu::mluError_t status = mlu::mluQueueQuery(queue());
  if (status == mlu::mluErrorNotReady) return false;
  MLU_CHECK(status);
  return true;
}

void MLUStream::synchronize() const {
  MLU_CHECK(mlu::mluQueueSynchronize(queue()));
  trace::stream_synchronization(queue());
}

uint64_t MLUStream::capture_id() const {
  mlu::mluQueueCaptureStatus status = mlu::mluQueueCaptureStatusNone;
  uint64_t id = 0;
  MLU_CHECK(mlu::mluQueueGetCaptureInfo(queue(), &status, &id));
  return id;
}

MLUStream getDefaultMLUStream(c10::DeviceIndex device) { return make(resolve(device), 0); }

MLUStream getCurrentMLUStream(c10::DeviceIndex device) {
  device = resolve(device);
  return make(device, current_ids()[device]);
}

MLUStream getStreamFromPool(bool high_priority, c10::DeviceIndex device) {
  device = resolve(device);
  DevicePools& p = pools(device);
  uint32_t index = p.next[high_priority].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return make(device, 1 + (high_priority ? kStreamsPerPool : 0) + index);
}

MLUStream getStreamFromExternal(mlu::mluQueue_t queue, c10::DeviceIndex device) {
  device = resolve(device);
  // A handle that is no queue of ours is taken as it is and fails when the
  // stream is used (MLUStream::queue), like CUDA's; a real one is checked now.
  const bool known = mlu::mluQueueCheckHandle(queue) == mlu::mluSuccess;
  if (known) {
    int queue_device = -1;
    MLU_CHECK(mlu::mluQueueGetDevice(queue, &queue_device));
    TORCH_CHECK(queue_device == device, "ExternalStream: the queue belongs to mlu:", queue_device, ", not mlu:",
                static_cast<int>(device));
  }
  DevicePools& p = pools(device);
  std::lock_guard<std::mutex> lock(p.external_mu);
  auto it = std::find_if(p.external.begin(), p.external.end(),
                         [&](const ExternalQueue& e) { return e.queue == queue; });
  if (it == p.external.end()) it = p.external.insert(p.external.end(), ExternalQueue{queue, known});
  return make(device, kExternalStreamBase + (it - p.external.begin()));
}

std::optional<c10::StreamId> stream_id_of_queue(c10::DeviceIndex device, mlu::mluQueue_t queue) {
  if (device < 0 || device >= device_count()) return std::nullopt;
  if (getDefaultMLUStream(device).queue() == queue) return 0;
  DevicePools& p = pools(device);
  for (c10::StreamId i = 0; i < kPoolSlots; ++i) {
    if (p.queues[i] == queue) return i + 1;
  }
  std::lock_guard<std::mutex> lock(p.external_mu);
  for (size_t i = 0; i < p.external.size(); ++i) {
    if (p.external[i].queue == queue) return kExternalStreamBase + static_cast<c10::StreamId>(i);
  }
  return std::nullopt;
}

MLUStream exchangeCurrentMLUStream(MLUStream stream) {
  c10::DeviceIndex device = resolve(stream.device_index());
  c10::StreamId& slot = current_ids()[device];
  MLUStream previous = make(device, slot);
  slot = stream.id();
  return previous;
}

void setCurrentMLUStream(MLUStream stream) { exchangeCurrentMLUStream(stream); }

void stream_wait_stream(const MLUStream& waiter, const MLUStream& signaller) {
  if (waiter == signaller) return;
  thread_local MLUEvent event;
  event.record(signaller);
  event.block(waiter);
}

}  // namespace torch_mlu
