#include "csrc/core/MLUTestHooks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <mlu_kernels/parallel.h>
#include <mlu_runtime/queue.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

struct StreamGate::State {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
};

void sleep_on_current_stream(int64_t cycles) {
  auto duration = std::chrono::nanoseconds(cycles);
  MLU_CHECK(mlu::mluLaunchTask(getCurrentMLUStream().queue(), "sleep", [duration] {
    std::this_thread::sleep_for(duration);
  }));
}

void launch_failing_task(const std::string& name, const std::string& message) {
  // The runtime keeps the name pointer: intern it for the process lifetime.
  static std::mutex mu;
  static auto* names = new std::vector<std::unique_ptr<std::string>>();
  const char* interned;
  {
    std::lock_guard<std::mutex> lock(mu);
    names->push_back(std::make_unique<std::string>(name));
    interned = names->back()->c_str();
  }
  auto failure = std::make_shared<std::string>(message);
  MLU_CHECK(mlu::mluLaunchTask(getCurrentMLUStream().queue(), interned,
                               [failure](mlu::TaskContext& context) { context.fail(*failure); }));
}

double time_cached_alloc_free_ns(size_t bytes, int iterations, int rounds) {
  c10::Allocator* allocator = getMLUDeviceAllocator();
  allocator->allocate(bytes);  // warm-up: the block is cached from here on
  std::vector<double> per_pair;
  for (int r = 0; r < rounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      c10::DataPtr block = allocator->allocate(bytes);
    }
    std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
    per_pair.push_back(elapsed.count() / iterations);
  }
  std::sort(per_pair.begin(), per_pair.end());
  return per_pair[per_pair.size() / 2];
}

void* create_foreign_queue(c10::DeviceIndex device) {
  c10::DeviceIndex previous = exchange_device(device);
  mlu::mluQueue_t queue = nullptr;
  mlu::mluError_t status = mlu::mluQueueCreate(&queue);
  exchange_device(previous);
  MLU_CHECK(status);
  return queue;
}

void destroy_foreign_queue(void* queue) { MLU_CHECK(mlu::mluQueueDestroy(static_cast<mlu::mluQueue_t>(queue))); }

StreamGate::StreamGate(double timeout_s, bool hold_pool) : state_(std::make_shared<State>()) {
  auto timeout = std::chrono::duration<double>(timeout_s);
  MLU_CHECK(mlu::mluLaunchTask(getCurrentMLUStream().queue(), "stream gate",
                               [state = state_, timeout, hold_pool](mlu::TaskContext& context) {
                                 std::atomic<bool> opened{true};
                                 auto wait = [&](int64_t, int64_t) {
                                   std::unique_lock<std::mutex> lock(state->mu);
                                   if (!state->cv.wait_for(lock, timeout, [&] { return state->open; })) {
                                     opened = false;
                                   }
                                 };
                                 if (hold_pool) {
                                   mlu::kernels::parallel_for(0, mlu::kernels::num_threads(), 1, wait);
                                 } else {
                                   wait(0, 1);
                                 }
                                 if (!opened) context.fail("the gate was never opened");
                               }));
}

StreamGate::~StreamGate() { open(); }

void StreamGate::open() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->open = true;
  }
  state_->cv.notify_all();
}

}  // namespace torch_mlu
