// max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and their
// backward ops on mlu (mlu_kernels/pool.h):
// PyTorch's meta functions check the arguments and size the results (ceil
// mode included, and the memory format: channels_last stays channels_last);
// the kernels work on contiguous planes, results are copied into other
// layouts. max_pool1d lowers to these.
#include <ATen/ops/empty.h>
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <mlu_kernels/pool.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using A = at::IntArrayRef;

bool has_pool_kernel(const at::Tensor& self) {
  return at::isFloatingType(self.scalar_type()) && kernel_dtype(self.scalar_type()).has_value();
}

int64_t pick(A v, int i, int64_t fallback) { return v.empty() ? fallback : v[v.size() == 1 ? 0 : i]; }

k::Pool2dShape pool_shape(const at::Tensor& input, const at::Tensor& output, A kernel, A stride, A padding, A dilation) {
  k::Pool2dShape s;
  const int64_t d = input.dim();
  s.planes = input.numel() == 0 ? 0 : input.numel() / (input.size(d - 2) * input.size(d - 1));
  s.in_h = input.size(d - 2);
  s.in_w = input.size(d - 1);
  s.out_h = output.size(d - 2);
  s.out_w = output.size(d - 1);
  s.kernel_h = pick(kernel, 0, 1);
  s.kernel_w = pick(kernel, 1, 1);
  s.stride_h = pick(stride, 0, s.kernel_h);
  s.stride_w = pick(stride, 1, s.kernel_w);
  s.pad_h = pick(padding, 0, 0);
  s.pad_w = pick(padding, 1, 0);
  s.dilation_h = pick(dilation, 0, 1);
  s.dilation_w = pick(dilation, 1, 1);
  return s;
}

// Runs the forward kernel into `output` / `indices` of any layout.
void launch_max_pool(T self, A kernel, A stride, A padding, A dilation, T output, T indices) {
  if (output.numel() == 0) return;
  const at::Tensor input = self.contiguous();
  const bool direct = output.is_contiguous() && indices.is_contiguous();
  const at::Tensor out = direct ? output : at::empty(output.sizes(), output.options());
  const at::Tensor idx = direct ? indices : at::empty(indices.sizes(), indices.options());
  const k::Pool2dShape s = pool_shape(input, out, kernel, stride, padding, dilation);
  const k::ScalarType type = require_kernel_dtype(input.scalar_type(), "max_pool2d");
  void *x = kernel_data(input), *y = kernel_data(out);
  auto* i = static_cast<int64_t*>(kernel_data(idx));
  launch_kernel(self.device().index(), "max_pool2d", [=] { k::max_pool2d(s, type, x, y, i); });
  if (!direct) {
    output.copy_(out);
    indices.copy_(idx);
  }
}

void launch_max_pool_backward(T grad_output, T self, A kernel, A stride, A padding, A dilation, T indices,
                              T grad_input) {
  if (grad_input.numel() == 0) return;
  const at::Tensor go = grad_output.contiguous(), idx = indices.contiguous();
  const bool direct = grad_input.is_contiguous();
  const at::Tensor gi = direct ? grad_input : at::empty(grad_input.sizes(), grad_input.options());
  const k::Pool2dShape s = pool_shape(self, go, kernel, stride, padding, dilation);
  const k::ScalarType type = require_kernel_dtype(self.scalar_type(), "max_pool2d_backward");
  void *g = kernel_data(go), *out = kernel_data(gi);
  const auto* i = static_cast<const int64_t*>(kernel_data(idx));
  launch_kernel(self.device().index(), "max_pool2d_backward", [=] { k::max_pool2d_backward(s, type, g, i, out); });
  if (!direct) grad_input.copy_(gi);
}

// ---- average pooling ----

// The planes of `big` (input side) and the output size of `small`.
k::Pool2dShape plane_shape(const at::Tensor& big, const at::Tensor& small) {
  k::Pool2dShape s;
  const int64_t d = big.dim();
  s.in_h = big.size(d - 2);
  s.in_w = big.size(d - 1);
  s.planes = s.in_h * s.in_w == 0 ? 0 : big.numel() / (s.in_h * s.in_w);
  s.out_h = small.size(d - 2);
  s.out_w = small.size(d - 1);
  return s;
}

// Runs `kernel(shape, type, in, out)` from a contiguous copy of `in` into
// `out` of any layout.
template <class Kernel>
void launch_planes(const char* name, T in_, T out, const k::Pool2dShape& shape, Kernel kernel) {
  if (out.numel() == 0 || in_.numel() == 0) {
    if (out.numel() > 0) out.zero_();
    return;
  }
  const at::Tensor in = in_.contiguous();
  const bool direct = out.is_contiguous();
  const at::Tensor result = direct ? out : at::empty(out.sizes(), out.options());
  const k::ScalarType type = require_kernel_dtype(in.scalar_type(), name);
  void *x = kernel_data(in), *y = kernel_data(result);
  launch_kernel(in.device().index(), name, [=] { kernel(shape, type, x, y); });
  if (!direct) out.copy_(result);
}

k::Pool2dShape avg_shape(T big, T small, A kernel, A stride, A padding) {
  k::Pool2dShape s = plane_shape(big, small);
  s.kernel_h = pick(kernel, 0, 1);
  s.kernel_w = pick(kernel, 1, 1);
  s.stride_h = pick(stride, 0, s.kernel_h);
  s.stride_w = pick(stride, 1, s.kernel_w);
  s.pad_h = pick(padding, 0, 0);
  s.pad_w = pick(padding, 1, 0);
  return s;
}

void launch_avg_pool(T self, A kernel, A stride, A padding, bool count_include_pad, std::optional<int64_t> divisor,
                     T output) {
  const int64_t d = divisor.value_or(0);
  launch_planes("avg_pool2d", self, output, avg_shape(self, output, kernel, stride, padding),
                [=](const k::Pool2dShape& s, k::ScalarType type, void* x, void* y) {
                  k::avg_pool2d(s, type, x, y, count_include_pad, d);
                });
}

void launch_avg_pool_backward(T grad_output, T self, A kernel, A stride, A padding, bool count_include_pad,
                              std::optional<int64_t> divisor, T grad_input) {
  const int64_t d = divisor.value_or(0);
  launch_planes("avg_pool2d_backward", grad_output, grad_input, avg_shape(self, grad_output, kernel, stride, padding),
                [=](const k::Pool2dShape& s, k::ScalarType type, void* g, void* gi) {
                  k::avg_pool2d_backward(s, type, g, gi, count_include_pad, d);
                });
}

using OptInt = std::optional<int64_t>;

at::Tensor adaptive_avg_pool(T self, A output_size) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0, "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes ", self.sizes(), " with dimension ", i, " being empty");
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes[sizes.size() - 2] = output_size[0];
  sizes[sizes.size() - 1] = output_size[1];
  at::Tensor output = at::empty(sizes, self.options());
  launch_planes("adaptive_avg_pool2d", self, output, plane_shape(self, output),
                [](const k::Pool2dShape& s, k::ScalarType type, void* x, void* y) {
                  k::adaptive_avg_pool2d(s, type, x, y);
                });
  const at::MemoryFormat format = self.suggest_memory_format();
  return format == at::MemoryFormat::Contiguous ? output : output.contiguous(format);
}

at::Tensor adaptive_avg_pool_backward(T grad_output, T self) {
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  k::Pool2dShape shape = plane_shape(self, grad_output);
  launch_planes("adaptive_avg_pool2d_backward", grad_output, grad_input, shape,
                [](const k::Pool2dShape& s, k::ScalarType type, void* g, void* gi) {
                  k::adaptive_avg_pool2d_backward(s, type, g, gi);
                });
  const at::MemoryFormat format = self.suggest_memory_format();
  return format == at::MemoryFormat::Contiguous ? grad_input : grad_input.contiguous(format);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("avg_pool2d", [](T self, A kernel, A stride, A padding, bool ceil_mode, bool count_include_pad,
                          OptInt divisor) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor(T, A, A, A, bool, bool, OptInt)>("aten::avg_pool2d", self, kernel, stride,
                                                                      padding, ceil_mode, count_include_pad, divisor);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUFunctional<at::meta::structured_avg_pool2d> meta;
    meta.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
    launch_avg_pool(self, kernel, stride, padding, count_include_pad, divisor, meta.output());
    return std::move(meta.output());
  });
  m.impl("avg_pool2d.out", [](T self, A kernel, A stride, A padding, bool ceil_mode, bool count_include_pad,
                              OptInt divisor, at::Tensor& out) -> at::Tensor& {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor&(T, A, A, A, bool, bool, OptInt, at::Tensor&)>(
          "aten::avg_pool2d.out", self, kernel, stride, padding, ceil_mode, count_include_pad, divisor, out);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUOut<at::meta::structured_avg_pool2d> meta(out);
    meta.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
    launch_avg_pool(self, kernel, stride, padding, count_include_pad, divisor, meta.maybe_get_output(0));
    meta.finish();
    return out;
  });
  m.impl("avg_pool2d_backward", [](T grad_output, T self, A kernel, A stride, A padding, bool ceil_mode,
                                   bool count_include_pad, OptInt divisor) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor(T, T, A, A, A, bool, bool, OptInt)>(
          "aten::avg_pool2d_backward", grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad,
          divisor);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUFunctional<at::meta::structured_avg_pool2d_backward> meta;
    meta.meta(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
    launch_avg_pool_backward(grad_output, self, kernel, stride, padding, count_include_pad, divisor, meta.output());
    return std::move(meta.output());
  });
  m.impl("avg_pool2d_backward.grad_input", [](T grad_output, T self, A kernel, A stride, A padding, bool ceil_mode,
                                              bool count_include_pad, OptInt divisor,
                                              at::Tensor& grad_input) -> at::Tensor& {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor&(T, T, A, A, A, bool, bool, OptInt, at::Tensor&)>(
          "aten::avg_pool2d_backward.grad_input", grad_output, self, kernel, stride, padding, ceil_mode,
          count_include_pad, divisor, grad_input);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUOut<at::meta::structured_avg_pool2d_backward> meta(grad_input);
    meta.meta(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
    launch_avg_pool_backward(grad_output, self, kernel, stride, padding, count_include_pad, divisor,
                             meta.maybe_get_output(0));
    meta.finish();
    return grad_input;
  });
  m.impl("_adaptive_avg_pool2d", [](T self, A output_size) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor(T, A)>("aten::_adaptive_avg_pool2d", self, output_size);
    }
    c10::OptionalDeviceGuard guard(self.device());
    return adaptive_avg_pool(self, output_size);
  });
  m.impl("_adaptive_avg_pool2d_backward", [](T grad_output, T self) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor(T, T)>("aten::_adaptive_avg_pool2d_backward", grad_output, self);
    }
    c10::OptionalDeviceGuard guard(self.device());
    return adaptive_avg_pool_backward(grad_output, self);
  });
  m.impl("max_pool2d_with_indices", [](T self, A kernel, A stride, A padding, A dilation, bool ceil_mode) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<std::tuple<at::Tensor, at::Tensor>(T, A, A, A, A, bool)>(
          "aten::max_pool2d_with_indices", self, kernel, stride, padding, dilation, ceil_mode);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUFunctional<at::meta::structured_max_pool2d_with_indices, 2> meta;
    meta.meta(self, kernel, stride, padding, dilation, ceil_mode);
    launch_max_pool(self, kernel, stride, padding, dilation, meta.output(0), meta.output(1));
    return std::make_tuple(std::move(meta.output(0)), std::move(meta.output(1)));
  });
  m.impl("max_pool2d_with_indices.out", [](T self, A kernel, A stride, A padding, A dilation, bool ceil_mode,
                                           at::Tensor& out, at::Tensor& indices) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<std::tuple<at::Tensor&, at::Tensor&>(T, A, A, A, A, bool, at::Tensor&, at::Tensor&)>(
          "aten::max_pool2d_with_indices.out", self, kernel, stride, padding, dilation, ceil_mode, out, indices);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUOut<at::meta::structured_max_pool2d_with_indices, 2> meta(out, indices);
    meta.meta(self, kernel, stride, padding, dilation, ceil_mode);
    launch_max_pool(self, kernel, stride, padding, dilation, meta.maybe_get_output(0), meta.maybe_get_output(1));
    meta.finish();
    return std::tuple<at::Tensor&, at::Tensor&>(out, indices);
  });
  m.impl("max_pool2d_with_indices_backward", [](T grad_output, T self, A kernel, A stride, A padding, A dilation,
                                                bool ceil_mode, T indices) {
    if (!has_pool_kernel(self)) {
      return cpu_fallback<at::Tensor(T, T, A, A, A, A, bool, T)>("aten::max_pool2d_with_indices_backward",
                                                                grad_output, self, kernel, stride, padding,
                                                                dilation, ceil_mode, indices);
    }
    c10::OptionalDeviceGuard guard(self.device());
    MLUFunctional<at::meta::structured_max_pool2d_with_indices_backward> meta;
    meta.meta(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices);
    launch_max_pool_backward(grad_output, self, kernel, stride, padding, dilation, indices, meta.output());
    return std::move(meta.output());
  });
  m.impl("max_pool2d_with_indices_backward.grad_input",
         [](T grad_output, T self, A kernel, A stride, A padding, A dilation, bool ceil_mode, T indices,
            at::Tensor& grad_input) -> at::Tensor& {
           if (!has_pool_kernel(self)) {
             return cpu_fallback<at::Tensor&(T, T, A, A, A, A, bool, T, at::Tensor&)>(
                 "aten::max_pool2d_with_indices_backward.grad_input", grad_output, self, kernel, stride, padding,
                 dilation, ceil_mode, indices, grad_input);
           }
           c10::OptionalDeviceGuard guard(self.device());
           MLUOut<at::meta::structured_max_pool2d_with_indices_backward> meta(grad_input);
           meta.meta(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices);
           launch_max_pool_backward(grad_output, self, kernel, stride, padding, dilation, indices,
                                    meta.maybe_get_output(0));
           meta.finish();
           return grad_input;
         });
}

}  // namespace torch_mlu
