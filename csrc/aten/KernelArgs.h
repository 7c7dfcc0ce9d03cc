// Translating at::Tensor metadata into the kernel library's arguments, and
// launching a kernel on the current stream of a tensor's device.
//
// A kernel closure captures raw pointers and by-value shape/stride arrays
// (mlu::kernels::Shape/Strides), never at::Tensor: tensors may be resized or
// freed by the host before the task runs, while the memory itself stays valid
// because frees are stream-ordered (Note [Stream-ordered frees]).
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>
#include <mlu_kernels/dtype.h>
#include <mlu_kernels/layout.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

// The kernel library's dtype for `type`, if it has one.
std::optional<mlu::kernels::ScalarType> kernel_dtype(at::ScalarType type);
// Whether the element-wise/indexing kernels take t's dtype (not complex).
inline bool has_kernel(const at::Tensor& t) {
  return !t.is_complex() && kernel_dtype(t.scalar_type()).has_value();
}
// Like kernel_dtype, but throws a clear error naming `op` when unsupported.
mlu::kernels::ScalarType require_kernel_dtype(at::ScalarType type, const char* op);

// t, or a 1-D view of it when it has more dims than the kernels take but is
// contiguous (its row-major element order is then unchanged).
at::Tensor flat_if_deep(const at::Tensor& t);

// t's data for a kernel argument; nullptr for an undefined (optional) tensor.
inline void* kernel_data(const at::Tensor& t) {
  return t.defined() ? const_cast<void*>(t.const_data_ptr()) : nullptr;
}

mlu::kernels::Shape kernel_shape(const at::Tensor& t);
mlu::kernels::Strides kernel_strides(const at::Tensor& t);

// Enqueues `fn` on the current stream of `device`; waits for it when
// MLU_LAUNCH_BLOCKING=1 so device errors surface at the op.
template <class F>
void launch_kernel(c10::DeviceIndex device, const char* name, F&& fn) {
  MLUStream stream = getCurrentMLUStream(device);
  MLU_CHECK(mlu::mluLaunchTask(stream.queue(), name, std::forward<F>(fn)));
  if (launch_blocking()) stream.synchronize();
}

}  // namespace torch_mlu
