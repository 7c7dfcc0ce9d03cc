// Pooling on mlu (mlu_kernels/pool.h): max_pool2d/3d_with_indices,
// avg_pool2d/3d, adaptive avg/max pooling 2-D/3-D, fractional max pooling
// 2-D/3-D and their backward ops
// (1-D pooling lowers to the 2-D ops). PyTorch's meta functions check the
// arguments and size the results of the structured ops (ceil mode included,
// and the memory format: channels_last stays channels_last); the others
// (max_pool3d_with_indices, _adaptive_avg_pool3d) check with PyTorch's own
// helpers and texts (ATen/native/Pool.h). The kernels work on contiguous
// planes, results are copied into other layouts.
#include <ATen/native/FractionalMaxPooling.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/empty.h>
#include <mlu_kernels/pool.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using A = at::IntArrayRef;
using OptInt = std::optional<int64_t>;

bool has_pool_kernel(const at::Tensor& self) {
  return at::isFloatingType(self.scalar_type()) && kernel_dtype(self.scalar_type()).has_value();
}

// Entry i of a per-dim argument given for `dims` dims (or one value for all).
int64_t pick(A v, int i, int64_t fallback) { return v.empty() ? fallback : v[v.size() == 1 ? 0 : i]; }

// The planes of `big` (input side) and the output sizes of `small`, over
// their last `dims` (2 or 3) dims.
k::PoolShape plane_shape(const at::Tensor& big, const at::Tensor& small, int dims) {
  k::PoolShape s;
  const int64_t nd = big.dim();
  int64_t plane = 1;
  for (int i = 0; i < dims; ++i) {
    s.in[3 - dims + i] = big.size(nd - dims + i);
    s.out[3 - dims + i] = small.size(nd - dims + i);
    plane *= big.size(nd - dims + i);
  }
  s.planes = plane == 0 ? 0 : big.numel() / plane;
  return s;
}

k::PoolShape window_shape(const at::Tensor& big, const at::Tensor& small, int dims, A kernel, A stride, A padding,
                          A dilation) {
  k::PoolShape s = plane_shape(big, small, dims);
  for (int i = 0; i < dims; ++i) {
    const int d = 3 - dims + i;
    s.kernel[d] = pick(kernel, i, 1);
    s.stride[d] = pick(stride, i, s.kernel[d]);
    s.pad[d] = pick(padding, i, 0);
    s.dilation[d] = pick(dilation, i, 1);
  }
  return s;
}

// Runs `kernel(shape, type, in, out)` from a contiguous copy of `in` into
// `out` of any layout (an empty input gives zeros).
template <class Kernel>
void launch_planes(const char* name, T in_, T out, const k::PoolShape& shape, Kernel kernel) {
  if (out.numel() == 0 || in_.numel() == 0) {
    if (out.numel() > 0) out.zero_();
    return;
  }
  const at::Tensor in = in_.contiguous();
  const bool direct = out.is_contiguous();
  const at::Tensor result = direct ? out : at::empty(out.sizes(), out.options());
  const k::ScalarType type = require_kernel_dtype(in.scalar_type(), name);
  const void* x = device_ptr<const void>(in);
  void* y = device_ptr(result);
  launch_kernel(in.device().index(), name, [=] { kernel(shape, type, x, y); });
  if (!direct) out.copy_(result);
}

// The same for kernels that also write int64 indices.
template <class Kernel>
void launch_with_indices(const char* name, T in_, T out, T indices, const k::PoolShape& shape, Kernel kernel) {
  if (out.numel() == 0) return;
  const at::Tensor in = in_.contiguous();
  const bool direct = out.is_contiguous() && indices.is_contiguous();
  const at::Tensor result = direct ? out : at::empty(out.sizes(), out.options());
  const at::Tensor idx = direct ? indices : at::empty(indices.sizes(), indices.options());
  const k::ScalarType type = require_kernel_dtype(in.scalar_type(), name);
  const void* x = device_ptr<const void>(in);
  void* y = device_ptr(result);
  int64_t* i = device_ptr<int64_t>(idx);
  launch_kernel(in.device().index(), name, [=] { kernel(shape, type, x, y, i); });
  if (!direct) {
    out.copy_(result);
    indices.copy_(idx);
  }
}

// grad_input of max pooling (plain or adaptive) from the forward's indices.
void launch_max_backward(const char* name, T grad_output, T indices, T grad_input, const k::PoolShape& shape) {
  if (grad_input.numel() == 0) return;
  const at::Tensor go = grad_output.contiguous(), idx = indices.contiguous();
  const bool direct = grad_input.is_contiguous();
  const at::Tensor gi = direct ? grad_input : at::empty(grad_input.sizes(), grad_input.options());
  const k::ScalarType type = require_kernel_dtype(grad_input.scalar_type(), name);
  const void* g = device_ptr<const void>(go);
  void* out = device_ptr(gi);
  const int64_t* i = device_ptr<const int64_t>(idx);
  launch_kernel(grad_input.device().index(), name, [=] { k::max_pool_backward(shape, type, g, i, out); });
  if (!direct) grad_input.copy_(gi);
}

// ---- max pooling ----

void launch_max_pool(int dims, T self, A kernel, A stride, A padding, A dilation, T output, T indices) {
  launch_with_indices(dims == 2 ? "max_pool2d" : "max_pool3d", self, output, indices,
                      window_shape(self, output, dims, kernel, stride, padding, dilation), k::max_pool);
}

void launch_max_pool_backward(int dims, T grad_output, T self, A kernel, A stride, A padding, A dilation, T indices,
                              T grad_input) {
  launch_max_backward(dims == 2 ? "max_pool2d_backward" : "max_pool3d_backward", grad_output, indices, grad_input,
                      window_shape(self, grad_output, dims, kernel, stride, padding, dilation));
}

// max_pool3d_with_indices' checks and output size (DilatedMaxPool3d.cpp).
std::vector<int64_t> max_pool3d_output_size(T input, A kernel, A stride, A padding, A dilation, bool ceil_mode,
                                            const char* name) {
  TORCH_CHECK(kernel.size() == 1 || kernel.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  TORCH_CHECK(input.dim() == 4 || input.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  const int64_t nd = input.dim();
  int64_t k3[3], s3[3], p3[3], d3[3], in3[3], out3[3];
  for (int i = 0; i < 3; ++i) {
    k3[i] = pick(kernel, i, 1);
    s3[i] = pick(stride, i, k3[i]);
    p3[i] = pick(padding, i, 0);
    d3[i] = pick(dilation, i, 1);
    in3[i] = input.size(nd - 3 + i);
    out3[i] = at::native::pooling_output_shape<int64_t>(in3[i], k3[i], p3[i], s3[i], d3[i], ceil_mode);
  }
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  at::native::pool3d_shape_check(input, input.size(nd - 4), i32(k3[0]), i32(k3[1]), i32(k3[2]), i32(s3[0]), i32(s3[1]),
                                 i32(s3[2]), i32(p3[0]), i32(p3[1]), i32(p3[2]), i32(d3[0]), i32(d3[1]), i32(d3[2]),
                                 in3[0], in3[1], in3[2], out3[0], out3[1], out3[2], name);
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 3);
  sizes.insert(sizes.end(), out3, out3 + 3);
  return sizes;
}

std::tuple<at::Tensor, at::Tensor> max_pool3d_mlu(T self, A kernel, A stride, A padding, A dilation, bool ceil_mode) {
  const auto sizes =
      max_pool3d_output_size(self, kernel, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices()");
  const auto format = self.suggest_memory_format();
  at::Tensor out = at::empty(sizes, self.options().memory_format(format));
  at::Tensor indices = at::empty(sizes, self.options().dtype(at::kLong).memory_format(format));
  launch_max_pool(3, self, kernel, stride, padding, dilation, out, indices);
  return {out, indices};
}

at::Tensor max_pool3d_backward_mlu(T grad_output, T self, A kernel, A stride, A padding, A dilation, bool ceil_mode,
                                   T indices) {
  const auto sizes =
      max_pool3d_output_size(self, kernel, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices_backward()");
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(sizes) && indices.sizes() == at::IntArrayRef(sizes),
              "max_pool3d_with_indices_backward(): expected grad_output and indices of size ", at::IntArrayRef(sizes),
              ", got ", grad_output.sizes(), " and ", indices.sizes());
  at::Tensor grad_input = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  launch_max_pool_backward(3, grad_output, self, kernel, stride, padding, dilation, indices, grad_input);
  return grad_input;
}

// ---- fractional max pooling ----

void launch_fractional_max_pool(int dims, T self, A kernel, T samples, T output, T indices) {
  if (dims == 2) {
    at::native::fractional_max_pool_check_shape</*ndim=*/2>(self, samples);
  } else {
    at::native::fractional_max_pool_check_shape</*ndim=*/3>(self, samples);
  }
  const at::Tensor u = samples.contiguous();
  const void* sample_data = device_ptr<const void>(u);
  launch_with_indices(dims == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d", self, output, indices,
                      window_shape(self, output, dims, kernel, {}, {}, {}),
                      [=](const k::PoolShape& s, k::ScalarType type, const void* x, void* y, int64_t* i) {
                        k::fractional_max_pool(s, dims, type, x, sample_data, y, i);
                      });
}

at::Tensor fractional_max_pool3d_backward_mlu(T grad_output, T self, A kernel, A output_size, T indices) {
  TORCH_CHECK(output_size.size() == 3, "fractional_max_pool3d_backward(): output_size must have 3 elements");
  for (int i = 0; i < 3; ++i) {
    TORCH_CHECK(grad_output.size(grad_output.dim() - 3 + i) == output_size[static_cast<size_t>(i)],
                "fractional_max_pool3d_backward_out(): gradOutput ",
                i == 0   ? "time"
                : i == 1 ? "height"
                         : "width",
                " unexpected");
  }
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  launch_max_backward("fractional_max_pool3d_backward", grad_output, indices, grad_input,
                      window_shape(self, grad_output, 3, kernel, {}, {}, {}));
  return grad_input;
}

// ---- average pooling ----

void launch_avg_pool(int dims, T self, A kernel, A stride, A padding, bool count_include_pad, OptInt divisor,
                     T output) {
  const int64_t d = divisor.value_or(0);
  launch_planes(dims == 2 ? "avg_pool2d" : "avg_pool3d", self, output,
                window_shape(self, output, dims, kernel, stride, padding, {}),
                [=](const k::PoolShape& s, k::ScalarType type, const void* x, void* y) {
                  k::avg_pool(s, type, x, y, count_include_pad, d);
                });
}

void launch_avg_pool_backward(int dims, T grad_output, T self, A kernel, A stride, A padding, bool count_include_pad,
                              OptInt divisor, T grad_input) {
  const int64_t d = divisor.value_or(0);
  launch_planes(dims == 2 ? "avg_pool2d_backward" : "avg_pool3d_backward", grad_output, grad_input,
                window_shape(self, grad_output, dims, kernel, stride, padding, {}),
                [=](const k::PoolShape& s, k::ScalarType type, const void* g, void* gi) {
                  k::avg_pool_backward(s, type, g, gi, count_include_pad, d);
                });
}

// ---- adaptive pooling ----

// The CPU's 2-D kernels keep channels-last; its 3-D ones (forward and
// backward) always write contiguous results.
at::MemoryFormat adaptive_avg_pool_format(int dims, T self) {
  return dims == 2 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

at::Tensor adaptive_avg_pool(int dims, T self, A output_size) {
  const char* name = dims == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
  TORCH_CHECK(static_cast<int>(output_size.size()) == dims, name, ": output_size must be ", dims);
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, name, "(): Expected ", dims + 1, "D or ", dims + 2,
              "D tensor, but got ", self.sizes());
  for (int64_t i = self.dim() - dims - 1; i < self.dim(); ++i) {
    if (i == 0 && self.dim() == dims + 2) continue;
    TORCH_CHECK(self.size(i) > 0, name,
                "(): Expected input to have non-zero size for non-batch dimensions, but "
                "input has sizes ",
                self.sizes(), " with dimension ", i, " being empty");
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  std::copy(output_size.begin(), output_size.end(), sizes.end() - dims);
  at::Tensor output = at::empty(sizes, self.options());
  launch_planes(name, self, output, plane_shape(self, output, dims),
                dims == 2 ? k::adaptive_avg_pool : k::adaptive_avg_pool3d);
  return output.contiguous(adaptive_avg_pool_format(dims, self));
}

at::Tensor adaptive_avg_pool_backward(int dims, T grad_output, T self) {
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  launch_planes(dims == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward", grad_output, grad_input,
                plane_shape(self, grad_output, dims),
                dims == 2 ? k::adaptive_avg_pool_backward : k::adaptive_avg_pool3d_backward);
  return grad_input.contiguous(adaptive_avg_pool_format(dims, self));
}

void launch_adaptive_max_pool(int dims, T self, T output, T indices) {
  launch_with_indices(dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d", self, output, indices,
                      plane_shape(self, output, dims), k::adaptive_max_pool);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/PoolingOps.inc"
