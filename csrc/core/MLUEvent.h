// MLUEvent: an owned runtime event for C++ code (cf. at::cuda::CUDAEvent).
// Movable, not copyable; destroyed with its owner. Semantics are the
// runtime's (Note [Event versioning] in mlu_runtime/event.h): record marks
// the stream's current point, block makes another stream wait for it, and
// query/synchronize refer to the record that existed when they were called.
// Python code uses torch.mlu.Event (a torch.Event) instead.
#pragma once

#include <mlu_runtime/event.h>

#include "csrc/core/MLUStream.h"

namespace torch_mlu {

class MLUEvent {
 public:
  explicit MLUEvent(bool enable_timing = false);
  MLUEvent(MLUEvent&& other) noexcept;
  MLUEvent& operator=(MLUEvent&& other) noexcept;
  MLUEvent(const MLUEvent&) = delete;
  MLUEvent& operator=(const MLUEvent&) = delete;
  ~MLUEvent();

  void record(const MLUStream& stream);
  void block(const MLUStream& stream) const;
  bool query() const;
  void synchronize() const;
  float elapsed_time(const MLUEvent& end) const;  // milliseconds; both need timing

 private:
  mlu::mluEvent_t event_ = nullptr;
};

}  // namespace torch_mlu
