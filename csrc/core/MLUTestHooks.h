// Hooks that exist to observe the device from tests and benchmarks: a sleep
// (torch.mlu._sleep, as torch.cuda._sleep), a failing task (to check that
// device errors surface at the next synchronization), a gate that holds a
// stream until the host opens it (deterministic asynchrony tests), and a timer
// of the caching allocator's cached allocate+free path, measured in C++.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <c10/core/Device.h>

namespace torch_mlu {

// Occupies the current stream for `cycles` nanoseconds (a 1 GHz clock).
void sleep_on_current_stream(int64_t cycles);
// Launches a task named `name` that fails with `message`.
void launch_failing_task(const std::string& name, const std::string& message);

// Median nanoseconds of one allocate+free of `bytes` on the current device,
// over `rounds` rounds of `iterations` pairs, after a warm-up that fills the cache.
double time_cached_alloc_free_ns(size_t bytes, int iterations, int rounds);

// A runtime queue on `device` made outside torch_mlu's pools, as a C++
// extension would make one (for torch.mlu.ExternalStream tests), and its end.
void* create_foreign_queue(c10::DeviceIndex device);
void destroy_foreign_queue(void* queue);

// Holds the current stream (at construction) until open() or destruction.
// A held task gives up after `timeout_s` seconds and fails, so a test that
// forgets to open the gate fails instead of hanging. With `hold_pool`, the
// task waits inside a parallel region of the kernel library's compute pool,
// which every device shares: meanwhile other devices' parallel loops run on
// their calling thread alone and their teams have one member (Note [Teams]
// in mlu_kernels/parallel.h), as under contention.
class StreamGate {
 public:
  explicit StreamGate(double timeout_s = 30.0, bool hold_pool = false);
  ~StreamGate();
  void open();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace torch_mlu
