// Launching host code as a device kernel on an mlu stream.
//
// A kernel is a C++ callable the device runs on one of its queues, in order
// with everything else queued there (mlu_runtime/queue.h): callable as
// fn() or fn(mlu::TaskContext&), where ctx.fail(message) (or a thrown
// std::exception) reports a device-side error at the next synchronizing call.
// The closure must capture raw pointers (from device_data, below) and sizes,
// never at::Tensor: the host may free a tensor before the kernel runs, while
// its memory stays valid for work queued on the same stream (Note [Stream-ordered reuse] in
// MLUCachingAllocator.h). A kernel that reads memory another stream writes
// must be ordered after it (an event, or record_stream). Split large work
// over the device's compute cores with mlu::kernels::parallel_for
// (mlu_kernels/parallel.h).
#pragma once

#include <type_traits>
#include <utility>

#include <ATen/core/Tensor.h>
#include <mlu_runtime/host_trap.h>
#include <mlu_runtime/queue.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

// The address a kernel dereferences for t's data: mlu::mluDevicePointer of
// t.data_ptr<T>(), which is t.data_ptr<T>() itself unless the process runs
// with TORCH_MLU_TRAP_HOST_ACCESS=1 (Note [Host-access trap] in
// mlu_runtime/host_trap.h). Take the pointers a kernel captures from here.
template <class T>  // T may be const: device_data<const float>(t) for what a kernel only reads
T* device_data(const at::Tensor& t) {
  return const_cast<T*>(mlu::mluDevicePointer(t.const_data_ptr<std::remove_const_t<T>>()));
}

// Enqueues `fn` on `stream`; waits for it when MLU_LAUNCH_BLOCKING=1 so
// device errors surface at the launch. `name` must outlive the kernel (a
// string literal): device errors and the profiler name the kernel with it.
template <class F>
void launch_kernel(const MLUStream& stream, const char* name, F&& fn) {
  MLU_CHECK(mlu::mluLaunchTask(stream.queue(), name, std::forward<F>(fn)));
  if (launch_blocking()) stream.synchronize();
}

// launch_kernel on the current stream of `device` (-1: the current device).
template <class F>
void launch_kernel(c10::DeviceIndex device, const char* name, F&& fn) {
  launch_kernel(getCurrentMLUStream(device), name, std::forward<F>(fn));
}

// Ops of at most this many elements launch as small tasks: on an idle stream
// the calling thread runs them (Note [Small tasks run inline] in
// mlu_runtime/queue.h), which spares the tiny op the hand-off to the device
// thread; a few microseconds of work at most.
constexpr int64_t kSmallKernelElements = 4096;

// launch_kernel for a small task (above).
template <class F>
void launch_small_kernel(c10::DeviceIndex device, const char* name, F&& fn) {
  MLUStream stream = getCurrentMLUStream(device);
  MLU_CHECK(mlu::mluLaunchSmallTask(stream.queue(), name, std::forward<F>(fn)));
  if (launch_blocking()) stream.synchronize();
}

}  // namespace torch_mlu
