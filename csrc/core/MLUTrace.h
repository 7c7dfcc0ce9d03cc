// Device-trace events for Python observers (the stream sanitizer,
// torch_mlu/mlu/_sanitizer.py), through PyTorch's GPUTrace as c10/cuda emits
// them for CUDA: PyTorch hands each event to
// torch.mlu._gpu_trace.<Kind>Callbacks. Streams are named by their runtime
// queue handle (torch.mlu.Stream.mlu_stream), events by theirs, memory by the
// block's address.
//
// Invariant: nothing here is called with a lock of ours held: the callbacks
// take the GIL, and a thread holding it may be waiting for that lock. When no
// observer is active (torch._C._activate_gpu_trace was never called) each
// call is one atomic load.
#pragma once

#include <cstdint>

#include <c10/core/impl/GPUTrace.h>

namespace torch_mlu::trace {

inline const c10::impl::PyInterpreter* active() { return c10::impl::GPUTrace::get_trace(); }

inline uintptr_t id(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

inline void event_creation(const void* event) {
  if (auto* t = active()) (*t)->trace_gpu_event_creation(c10::kPrivateUse1, id(event));
}
inline void event_deletion(const void* event) {
  if (auto* t = active()) (*t)->trace_gpu_event_deletion(c10::kPrivateUse1, id(event));
}
inline void event_record(const void* event, const void* queue) {
  if (auto* t = active()) (*t)->trace_gpu_event_record(c10::kPrivateUse1, id(event), id(queue));
}
inline void event_wait(const void* event, const void* queue) {
  if (auto* t = active()) (*t)->trace_gpu_event_wait(c10::kPrivateUse1, id(event), id(queue));
}
inline void event_synchronization(const void* event) {
  if (auto* t = active()) (*t)->trace_gpu_event_synchronization(c10::kPrivateUse1, id(event));
}
inline void stream_creation(const void* queue) {
  if (auto* t = active()) (*t)->trace_gpu_stream_creation(c10::kPrivateUse1, id(queue));
}
inline void stream_synchronization(const void* queue) {
  if (auto* t = active()) (*t)->trace_gpu_stream_synchronization(c10::kPrivateUse1, id(queue));
}
inline void device_synchronization() {
  if (auto* t = active()) (*t)->trace_gpu_device_synchronization(c10::kPrivateUse1);
}
inline void memory_allocation(const void* ptr) {
  if (auto* t = active()) (*t)->trace_gpu_memory_allocation(c10::kPrivateUse1, id(ptr));
}
inline void memory_deallocation(const void* ptr) {
  if (auto* t = active()) (*t)->trace_gpu_memory_deallocation(c10::kPrivateUse1, id(ptr));
}

}  // namespace torch_mlu::trace
