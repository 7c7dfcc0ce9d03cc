// Fresh mlu tensors for kernel outputs, built directly (no dispatch), as the
// CPU's structured kernels use at::detail::empty_strided_cpu.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mlu {

// An uninitialised tensor on options.device() (an mlu device) of options'
// dtype: row-major (or options' memory format) when `strides` is empty, else
// with those strides. What at::empty / at::empty_strided return on mlu.
at::Tensor empty_for_kernel_output(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options);

}  // namespace torch_mlu
