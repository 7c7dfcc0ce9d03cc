// Launching host code as a device kernel on an mlu stream.
//
// A kernel is a C++ callable the device runs on one of its queues, in order
// with everything else queued there (mlu_runtime/queue.h): callable as
// fn() or fn(mlu::TaskContext&), where ctx.fail(message) (or a thrown
// std::exception) reports a device-side error at the next synchronizing call.
// The closure must capture raw pointers (from device_ptr, below) and sizes,
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

// Note [Device pointers]
// device_ptr is the one way to the address a kernel dereferences: every
// pointer a kernel closure (launch_kernel, launch_small_kernel) dereferences
// comes from it, and host code never dereferences what it returns. It is
// mlu::mluDevicePointer of the data, which is the data itself unless the
// process runs with TORCH_MLU_TRAP_HOST_ACCESS=1 (Note [Host-access trap] in
// mlu_runtime/host_trap.h). A forgotten translation would show only in a
// trapped run, so tools/lint.py (device-pointers) refuses the other
// spellings: mlu::mluDevicePointer and host_trap.h outside its allowlist, and
// a tensor's data_ptr() inside a launch_kernel closure in csrc/aten.
//
//   device_ptr<T>(t)  t's data as T* (T = void: untyped, else checked against
//                     t's dtype). const T for what the kernel only reads (the
//                     tensor's const_data_ptr); a non-const T is its
//                     mutable_data_ptr (= data_ptr()), for what it writes.
//                     An undefined tensor (an absent optional) gives nullptr,
//                     and so does one without elements (as data_ptr() does).
//   device_ptr(p)     a raw pointer into device memory that no tensor hands
//                     over whole (a TensorIterator operand, an ATen stub's
//                     argument, a compiled kernel's argument), as const as p.
template <class T = void>
T* device_ptr(const at::Tensor& t) {
  using Element = std::remove_const_t<T>;
  if (!t.defined()) return nullptr;
  if constexpr (std::is_const_v<T> && std::is_void_v<Element>) {
    return mlu::mluDevicePointer(t.const_data_ptr());
  } else if constexpr (std::is_const_v<T>) {
    return mlu::mluDevicePointer(t.const_data_ptr<Element>());
  } else if constexpr (std::is_void_v<Element>) {
    return mlu::mluDevicePointer(t.mutable_data_ptr());
  } else {
    return mlu::mluDevicePointer(t.mutable_data_ptr<Element>());
  }
}

template <class T>
T* device_ptr(T* ptr) {
  static_assert(!std::is_base_of_v<at::TensorBase, std::remove_cv_t<T>>,
                "device_ptr takes the tensor, not its address");
  return mlu::mluDevicePointer(ptr);
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
