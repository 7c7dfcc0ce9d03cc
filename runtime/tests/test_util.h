// Shared helpers of the runtime's GoogleTest suites (not a test file itself:
// CMake only globs tests/*.cpp).
//
// Rules the suites follow:
//  * Nothing blocks forever. A task that waits for the host waits on a Gate
//    with a timeout and fails (TaskContext::fail) when it expires, so a broken
//    runtime turns into a failed assertion instead of a hung test.
//  * Sleeps only widen race windows; what a test asserts is decided by flags,
//    futures, events and queue queries.
//  * Declaration order matters for early returns (a failed ASSERT): declare
//    the data tasks touch first, then the ScopedQueue, then the Gates, so that
//    on scope exit the gates open first, then the queue drains, then the data
//    goes away.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "mlu_runtime/mlu_runtime.h"

namespace mlu_test {

using namespace std::chrono_literals;

// The suites assume the machine CMake's test environment describes; setting it
// here too (without overriding) lets the binary run by hand. The runtime reads
// the environment on its first call, which happens after static initialization.
inline const bool kEnvironmentDefaults = [] {
  setenv("TORCH_MLU_DEVICE_COUNT", "2", /*overwrite=*/0);
  setenv("TORCH_MLU_DEVICE_MEMORY", "256M", /*overwrite=*/0);
  return true;
}();

constexpr size_t kMiB = size_t{1} << 20;
constexpr auto kTaskTimeout = 10s;  // how long a task waits for the host before failing

// A one-shot barrier the host opens; tasks wait on it with a timeout.
class Gate {
 public:
  Gate() : future_(promise_.get_future().share()) {}
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() { open(); }

  void open() {
    std::call_once(opened_, [this] { promise_.set_value(); });
  }
  // True once opened; false after `timeout`.
  bool wait(std::chrono::milliseconds timeout = kTaskTimeout) const {
    return future_.wait_for(timeout) == std::future_status::ready;
  }
  // A task body that blocks its queue until the gate opens (or fails after
  // kTaskTimeout). It owns a copy of the future, so it may outlive the Gate.
  auto blocker() const {
    return [f = future_](mlu::TaskContext& ctx) {
      if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("test gate timed out");
    };
  }
  std::shared_future<void> future() const { return future_; }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_;
  std::once_flag opened_;
};

// Polls `done` (1 ms apart) until it holds or `timeout` passes.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = kTaskTimeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Sets the current device for the lifetime of the object.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    mlu::mluGetDevice(&previous_);
    EXPECT_EQ(mlu::mluSetDevice(device), mlu::mluSuccess);
  }
  ~ScopedDevice() { mlu::mluSetDevice(previous_); }

 private:
  int previous_ = 0;
};

// A queue created on `device` and destroyed (drained) on scope exit.
class ScopedQueue {
 public:
  explicit ScopedQueue(int device = 0, int priority = 0) {
    ScopedDevice on(device);
    EXPECT_EQ(mlu::mluQueueCreateWithPriority(&queue_, priority), mlu::mluSuccess);
  }
  ScopedQueue(const ScopedQueue&) = delete;
  ScopedQueue& operator=(const ScopedQueue&) = delete;
  ~ScopedQueue() {
    if (queue_ != nullptr) mlu::mluQueueDestroy(queue_);
  }
  mlu::mluQueue_t get() const { return queue_; }
  operator mlu::mluQueue_t() const { return queue_; }
  // Hands the handle over (the test destroys it itself).
  mlu::mluQueue_t release() {
    mlu::mluQueue_t q = queue_;
    queue_ = nullptr;
    return q;
  }

 private:
  mlu::mluQueue_t queue_ = nullptr;
};

class ScopedEvent {
 public:
  explicit ScopedEvent(unsigned flags = mlu::mluEventDefault) {
    EXPECT_EQ(mlu::mluEventCreateWithFlags(&event_, flags), mlu::mluSuccess);
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  ~ScopedEvent() {
    if (event_ != nullptr) mlu::mluEventDestroy(event_);
  }
  mlu::mluEvent_t get() const { return event_; }
  operator mlu::mluEvent_t() const { return event_; }

 private:
  mlu::mluEvent_t event_ = nullptr;
};

// Device memory freed (synchronously) on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, int device = 0) : bytes_(bytes) {
    ScopedDevice on(device);
    EXPECT_EQ(mlu::mluMalloc(&ptr_, bytes), mlu::mluSuccess);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) mlu::mluFree(ptr_);
  }
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(mlu::mluHostMalloc(&ptr_, bytes), mlu::mluSuccess);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) mlu::mluFreeHost(ptr_);
  }
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

inline size_t free_bytes(int device) {
  ScopedDevice on(device);
  size_t free = 0, total = 0;
  EXPECT_EQ(mlu::mluMemGetInfo(&free, &total), mlu::mluSuccess);
  return free;
}

}  // namespace mlu_test
