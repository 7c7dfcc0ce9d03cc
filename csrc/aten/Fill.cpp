// fill_ and zero_ on mlu: one fill kernel on the current stream. The scalar is
// converted to the tensor's dtype on the host, with PyTorch's own conversion
// (and its overflow check), and travels inside the task as raw bytes.
#include <array>
#include <cstring>

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/DeviceGuard.h>
#include <mlu_kernels/fill.h>
#include <torch/library.h>

#include "csrc/aten/Copy.h"
#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

at::Tensor& fill_scalar_mlu_(at::Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) return self;
  at::assert_no_internal_overlap(self);
  mlu::kernels::ScalarType type = require_kernel_dtype(self.scalar_type(), "fill_");
  at::Tensor host = at::scalar_tensor(value, self.options().device(c10::DeviceType::CPU));
  std::array<unsigned char, 16> bytes{};
  std::memcpy(bytes.data(), host.const_data_ptr(), host.element_size());
  const Collapsed layout = kernel_layout(self);  // Note [Collapsed dims]
  const mlu::kernels::Shape shape = layout.shape;
  const mlu::kernels::Strides strides = layout.first;
  void* out = self.data_ptr();
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), "fill_", [=] { mlu::kernels::fill(out, type, shape, strides, bytes.data()); });
  return self;
}

at::Tensor& fill_tensor_mlu_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  if (value.is_cpu() || self.is_alias_of(value)) return fill_scalar_mlu_(self, value.item());
  TORCH_CHECK(value.device() == self.device(), "Expected all tensors to be on the same device, but found at least "
              "two devices, ", self.device(), " and ", value.device(), "!");
  if (self.numel() == 0) return self;
  at::assert_no_internal_overlap(self);
  c10::DeviceGuard guard(self.device());
  copy_on_device(self, value.expand_as(self));  // stays on the device: no host sync
  return self;
}

at::Tensor& zero_mlu_(at::Tensor& self) { return fill_scalar_mlu_(self, 0); }

}  // namespace

TORCH_MLU_ATEN_IMPL(m) {
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar_mlu_));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor_mlu_));
  m.impl("zero_", TORCH_FN(zero_mlu_));
}

}  // namespace torch_mlu
