// empty / empty_strided on mlu: storage from the mlu device allocator.
#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DeviceGuard.h>

#include "csrc/aten/TensorFactories.h"
#include "csrc/aten/DeviceCheck.h"
#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

constexpr c10::DispatchKeySet kMluKeys(c10::DispatchKey::PrivateUse1);

c10::Device checked_device(std::optional<c10::Device> device, std::optional<c10::Layout> layout,
                           std::optional<bool> pin_memory) {
  c10::Device d = c10::device_or_default(device);
  TORCH_CHECK(d.type() == c10::DeviceType::PrivateUse1, "expected an mlu device, got ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "mlu tensors support only the strided layout");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
  if (d.has_index()) check_device_index(d.index());
  return d;
}

// torch.use_deterministic_algorithms(True) with
// torch.utils.deterministic.fill_uninitialized_memory (on by default): new
// memory holds NaN (floating types) or the largest value (integers), as
// ATen's CPU and CUDA empty do, so reading it by mistake is reproducible.
at::Tensor& fill_if_deterministic(at::Tensor& t) {
  if (C10_UNLIKELY(at::globalContext().deterministicAlgorithms() &&
                   at::globalContext().deterministicFillUninitializedMemory())) {
    at::native::fill_empty_deterministic_(t);
  }
  return t;
}

at::Tensor empty_mlu(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                     std::optional<c10::Device> device, std::optional<bool> pin_memory,
                     std::optional<c10::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(checked_device(device, layout, pin_memory));
  at::Tensor t =
      at::detail::empty_generic(size, getMLUDeviceAllocator(), kMluKeys, c10::dtype_or_default(dtype), memory_format);
  return fill_if_deterministic(t);
}

at::Tensor empty_strided_mlu(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                             std::optional<bool> pin_memory) {
  c10::DeviceGuard guard(checked_device(device, layout, pin_memory));
  at::Tensor t =
      at::detail::empty_strided_generic(size, stride, getMLUDeviceAllocator(), kMluKeys, c10::dtype_or_default(dtype));
  return fill_if_deterministic(t);
}

}  // namespace

at::Tensor empty_for_kernel_output(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  c10::DeviceGuard guard(options.device());
  if (strides.empty()) {
    return at::detail::empty_generic(sizes, getMLUDeviceAllocator(), kMluKeys, options.dtype().toScalarType(),
                                     options.memory_format_opt());
  }
  return at::detail::empty_strided_generic(sizes, strides, getMLUDeviceAllocator(), kMluKeys,
                                           options.dtype().toScalarType());
}

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/TensorFactories.inc"
