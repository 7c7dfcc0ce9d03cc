#include "csrc/core/MLUTestHooks.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <mlu_runtime/queue.h>

#include "csrc/core/MLUException.h"
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

StreamGate::StreamGate(double timeout_s) : state_(std::make_shared<State>()) {
  auto timeout = std::chrono::duration<double>(timeout_s);
  MLU_CHECK(mlu::mluLaunchTask(getCurrentMLUStream().queue(), "stream gate",
                               [state = state_, timeout](mlu::TaskContext& context) {
                                 std::unique_lock<std::mutex> lock(state->mu);
                                 if (!state->cv.wait_for(lock, timeout, [&] { return state->open; })) {
                                   context.fail("the gate was never opened");
                                 }
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
