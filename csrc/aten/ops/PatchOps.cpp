// F.unfold / F.fold on mlu: im2col and col2im (each the other's backward op
// in derivatives.yaml) on the convolution kernels' patch walk
// (mlu_kernels/conv.h unfold / fold). Arguments are checked by PyTorch's own
// im2col_shape_check / col2im_shape_check, with its texts; 3-D inputs are
// one unbatched sample.
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/col2im_ops.h>
#include <ATen/ops/complex.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/real.h>
#include <ATen/ops/empty.h>
#include <mlu_kernels/conv.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/Fallback.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using A = at::IntArrayRef;

// The 2-D patch geometry of image [N, C, H, W] with output positions [out_h, out_w].
k::ConvShape patch_shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_h, int64_t out_w, A kernel, A dilation,
                         A padding, A stride) {
  k::ConvShape s;
  s.dims = 2;
  s.batch = n;
  s.in_channels = c;
  s.in_size[0] = h;
  s.in_size[1] = w;
  s.out_size[0] = out_h;
  s.out_size[1] = out_w;
  for (int d = 0; d < 2; ++d) {
    s.kernel[d] = kernel[d];
    s.dilation[d] = dilation[d];
    s.padding[d] = padding[d];
    s.stride[d] = stride[d];
  }
  return s;
}

void check_pairs(A kernel, A dilation, A padding, A stride, const char* op) {
  TORCH_CHECK(kernel.size() == 2, "It is expected kernel_size equals to 2, but got size ", kernel.size());
  TORCH_CHECK(dilation.size() == 2, "It is expected dilation equals to 2, but got size ", dilation.size());
  TORCH_CHECK(padding.size() == 2, "It is expected padding equals to 2, but got size ", padding.size());
  TORCH_CHECK(stride.size() == 2, "It is expected stride equals to 2, but got size ", stride.size(), " (", op, ")");
}

at::Tensor im2col_mlu(T self, A kernel, A dilation, A padding, A stride) {
  check_pairs(kernel, dilation, padding, stride, "im2col");
  at::native::im2col_shape_check(self, at::Tensor(), kernel[0], kernel[1], dilation[0], dilation[1], padding[0],
                                 padding[1], stride[0], stride[1]);
  const bool batched = self.dim() == 4;
  const at::Tensor input = (batched ? self : self.unsqueeze(0)).contiguous();
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const int64_t out_h = (h + 2 * padding[0] - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
  const int64_t out_w = (w + 2 * padding[1] - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
  at::Tensor columns = at::empty({n, c * kernel[0] * kernel[1], out_h * out_w}, input.options());
  if (columns.numel() > 0) {
    const k::ConvShape s = patch_shape(n, c, h, w, out_h, out_w, kernel, dilation, padding, stride);
    const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "im2col");
    const void* x = device_ptr<const void>(input);
    void* y = device_ptr(columns);
    c10::DeviceGuard guard(self.device());
    launch_kernel(self.device().index(), "im2col", [=] { k::unfold(s, type, x, y); });
  }
  return batched ? columns : columns.squeeze(0);
}

at::Tensor col2im_mlu(T self, A output_size, A kernel, A dilation, A padding, A stride) {
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  check_pairs(kernel, dilation, padding, stride, "col2im");
  at::native::col2im_shape_check(self, at::Tensor(), output_size[0], output_size[1], kernel[0], kernel[1], dilation[0],
                                 dilation[1], padding[0], padding[1], stride[0], stride[1]);
  if (self.is_complex() && has_move_kernel(self)) {  // the sums of overlapping patches, plane by plane
    return at::complex(col2im_mlu(at::real(self), output_size, kernel, dilation, padding, stride),
                       col2im_mlu(at::imag(self), output_size, kernel, dilation, padding, stride));
  }
  if (self.is_complex()) return cpu_fallback<ATEN_OP(col2im)>(self, output_size, kernel, dilation, padding, stride);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) && kernel_dtype(self.scalar_type()).has_value(),
              "col2im on mlu supports float32, float64, float16 and bfloat16, got ", self.scalar_type());
  const bool batched = self.dim() == 3;
  const at::Tensor columns = (batched ? self : self.unsqueeze(0)).contiguous();
  const int64_t n = columns.size(0), taps = kernel[0] * kernel[1], c = columns.size(1) / taps;
  const int64_t h = output_size[0], w = output_size[1];
  const int64_t out_h = (h + 2 * padding[0] - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
  const int64_t out_w = (w + 2 * padding[1] - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
  at::Tensor image = at::empty({n, c, h, w}, columns.options());
  if (image.numel() > 0) {
    const k::ConvShape s = patch_shape(n, c, h, w, out_h, out_w, kernel, dilation, padding, stride);
    const k::ScalarType type = *kernel_dtype(columns.scalar_type());
    const void* x = device_ptr<const void>(columns);
    void* y = device_ptr(image);
    c10::DeviceGuard guard(self.device());
    launch_kernel(self.device().index(), "col2im", [=] { k::fold(s, type, x, y); });
  }
  return batched ? image : image.squeeze(0);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/PatchOps.inc"
