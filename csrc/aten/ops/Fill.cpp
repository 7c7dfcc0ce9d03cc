// fill_ and zero_ on mlu: one fill kernel on the current stream. The scalar is
// converted to the tensor's dtype on the host, with PyTorch's own conversion
// (and its overflow check), and travels inside the task as raw bytes. A fill
// is idempotent, so, as on the CPU, self may have elements sharing memory
// (an expanded tensor): its broadcast dims are filled once. With a tensor
// value the CPU refuses such a self, and so does mlu.
#include <array>

#include <cstring>
#include <vector>

#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <mlu_kernels/fill.h>

#include "csrc/aten/Copy.h"
#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

// self without its broadcast dims (stride 0 and longer than 1): the same
// memory, each address once.
at::Tensor distinct_elements(const at::Tensor& self) {
  std::vector<int64_t> sizes = self.sizes().vec();
  bool broadcast = false;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.stride(d) == 0 && sizes[d] > 1) {
      sizes[d] = 1;
      broadcast = true;
    }
  }
  return broadcast ? self.as_strided(sizes, self.strides(), self.storage_offset()) : self;
}

at::Tensor& fill_scalar_mlu_(at::Tensor& self_, const at::Scalar& value) {
  if (self_.numel() == 0) return self_;
  if (self_.scalar_type() == at::kComplexHalf) {
    // No kernel type: fill the (real, imaginary) Float16 pairs, each part
    // rounded on its own as c10::complex<Half>'s conversion does.
    const c10::complex<double> z = value.toComplexDouble();
    const at::Tensor pairs = at::view_as_real(self_);
    at::Tensor real = pairs.select(-1, 0), imag = pairs.select(-1, 1);
    fill_scalar_mlu_(real, z.real());
    fill_scalar_mlu_(imag, z.imag());
    return self_;
  }
  const at::Tensor self = distinct_elements(self_);
  mlu::kernels::ScalarType type = require_bits_dtype(self.scalar_type(), "fill_");
  // The CPU's fill_ converts with Scalar::to<T>, whose overflow check
  // scalar_tensor skips for the 16- and 8-bit floats.
  AT_DISPATCH_V2(self.scalar_type(), "fill_", AT_WRAP([&] { (void)value.to<scalar_t>(); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool, AT_EXPAND(AT_FLOAT8_TYPES),
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  at::Tensor host = at::scalar_tensor(value, self.options().device(c10::DeviceType::CPU));
  std::array<unsigned char, 16> bytes{};
  std::memcpy(bytes.data(), host.const_data_ptr(), host.element_size());
  const Collapsed layout = kernel_layout(self);  // Note [Collapsed dims]
  const mlu::kernels::Shape shape = layout.shape;
  const mlu::kernels::Strides strides = layout.first;
  void* out = device_ptr(self);
  c10::DeviceGuard guard(self.device());
  launch_kernel(self.device().index(), "fill_", [=] { mlu::kernels::fill(out, type, shape, strides, bytes.data()); });
  return self_;
}

at::Tensor& fill_tensor_mlu_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  at::assert_no_internal_overlap(self);  // the CPU's fill_ with a tensor value refuses it (unlike a scalar's)
  if (value.is_cpu() || self.is_alias_of(value)) return fill_scalar_mlu_(self, value.item());
  TORCH_CHECK(value.device() == self.device(),
              "Expected all tensors to be on the same device, but found at least "
              "two devices, ",
              self.device(), " and ", value.device(), "!");
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  copy_on_device(self, value.expand_as(self));  // stays on the device: no host sync
  return self;
}

at::Tensor& zero_mlu_(at::Tensor& self) { return fill_scalar_mlu_(self, 0); }

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/Fill.inc"
