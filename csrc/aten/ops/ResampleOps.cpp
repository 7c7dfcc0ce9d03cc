// F.interpolate on mlu: the upsample_* ops (nearest, nearest-exact, linear,
// bilinear, bicubic, trilinear; align_corners both ways; explicit scale
// factors) and their backward ops, on the resampling kernel
// (mlu_kernels/resample.h). PyTorch's meta functions check the arguments and
// size the results (channels_last kept); the kernel works on contiguous
// planes and results are copied into other layouts. Integer inputs take the
// kernel for nearest modes (a copy) and the CPU fallback otherwise.
#include <ATen/Parallel.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_ops.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_ops.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_ops.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_ops.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_ops.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_backward_ops.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bicubic2d_ops.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_backward_ops.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_bilinear2d_ops.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_backward_ops.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_linear1d_ops.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_ops.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest1d_ops.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_ops.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest2d_ops.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_ops.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_nearest3d_ops.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_ops.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_ops.h>
#include <mlu_kernels/resample.h>

#include <array>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using A = at::IntArrayRef;
using S = std::optional<double>;

// One upsample op's parameters; scales are given for its `dims` dims.
struct Resample {
  k::ResampleMode mode;
  int dims;
  bool align_corners;
  std::array<S, 3> scales;
};

// The planes of `big` (input side) resampled to the spatial sizes of `small`.
k::ResampleShape resample_shape(const Resample& r, T big, T small) {
  k::ResampleShape s;
  const int64_t nd = big.dim();
  int64_t plane = 1;
  for (int i = 0; i < r.dims; ++i) {
    const int d = 3 - r.dims + i;
    s.in[d] = big.size(nd - r.dims + i);
    s.out[d] = small.size(nd - r.dims + i);
    s.scale_factor[d] = r.scales[static_cast<size_t>(i)].value_or(0.0);
    s.mode[d] = r.mode;
    plane *= s.in[d];
  }
  s.planes = plane == 0 ? 0 : big.numel() / plane;
  s.align_corners = r.align_corners;
  return s;
}

bool has_kernel(const Resample& r, T self) {
  const auto type = kernel_dtype(self.scalar_type());
  return type.has_value() && !self.is_complex() && k::resample_supports(resample_shape(r, self, self), *type);
}

// Whether the CPU's forward keeps the interpolation weights in the input's
// dtype (Note [Interpolation weights in 16 bits] in the kernels'
// resample.cpp): its generic kernel does (bicubic, linear, trilinear,
// bilinear); the channels-last kernel keeps them in float. UpSampleKernel.cpp
// takes that one for trilinear on a channels-last-3d input of more than 3
// channels, and for bilinear on a channels-last input of more than 3
// channels, for outputs with height + width <= 128, or with one intra-op
// thread and 3 channels (_use_channels_last_kernel_2d / _3d).
bool cpu_weights_in_element_type(const Resample& r, T input, T output) {
  if (r.mode == k::ResampleMode::Cubic) return true;
  if (r.mode != k::ResampleMode::Linear) return false;
  const bool many_channels = input.dim() == r.dims + 2 && input.size(1) > 3;
  if (r.dims == 3) return !(many_channels && input.is_contiguous(at::MemoryFormat::ChannelsLast3d));
  if (r.dims == 2) {
    const bool channels_last = many_channels && input.is_contiguous(at::MemoryFormat::ChannelsLast);
    const bool small_output = output.size(-2) + output.size(-1) <= 128;
    const bool one_thread_image = at::get_num_threads() == 1 && input.dim() == 4 && input.size(1) == 3;
    return !(channels_last || small_output || one_thread_image);
  }
  return true;
}

// Runs the forward (or backward) kernel from a contiguous copy of `from` into `to` of any layout.
void launch(const Resample& r, T from_, T to, bool backward) {
  if (to.numel() == 0) return;
  if (from_.numel() == 0) {
    to.zero_();
    return;
  }
  const at::Tensor from = from_.contiguous();
  const bool direct = to.is_contiguous();
  const at::Tensor result = direct ? to : at::empty(to.sizes(), to.options());
  k::ResampleShape shape = backward ? resample_shape(r, result, from) : resample_shape(r, from, result);
  shape.weights_in_element_type = !backward && cpu_weights_in_element_type(r, from_, to);
  const k::ScalarType type = require_kernel_dtype(from.scalar_type(), backward ? "upsample backward" : "upsample");
  const void* x = kernel_data(from);
  void* y = kernel_data(result);
  launch_kernel(from.device().index(), backward ? "upsample_backward" : "upsample", [=] {
    if (backward) {
      k::resample_backward(shape, type, x, y);
    } else {
      k::resample(shape, type, x, y);
    }
  });
  if (!direct) to.copy_(result);
}

template <class Meta, class Fallback, class... Args>
at::Tensor forward(const Resample& r, T self, Fallback fallback, const Args&... args) {
  if (!has_kernel(r, self)) return fallback();
  c10::OptionalDeviceGuard guard(self.device());
  return run_functional<Meta, 1>([&](T out) { launch(r, self, out, false); }, args...);
}

template <class Meta, class Fallback, class... Args>
at::Tensor& forward_out(at::Tensor& out, const Resample& r, T self, Fallback fallback, const Args&... args) {
  if (!has_kernel(r, self)) return fallback();
  c10::OptionalDeviceGuard guard(self.device());
  run_out<Meta, 1>([&](T o) { launch(r, self, o, false); }, std::forward_as_tuple(out), args...);
  return out;
}

// The backward ops run the kernel for floating types only (the others are not differentiable).
bool has_backward_kernel(T grad_output) {
  return at::isFloatingType(grad_output.scalar_type()) && kernel_dtype(grad_output.scalar_type()).has_value();
}

template <class Meta, class Fallback, class... Args>
at::Tensor backward(const Resample& r, T grad_output, Fallback fallback, const Args&... args) {
  if (!has_backward_kernel(grad_output)) return fallback();
  c10::OptionalDeviceGuard guard(grad_output.device());
  return run_functional<Meta, 1>([&](T gi) { launch(r, grad_output, gi, true); }, args...);
}

template <class Meta, class Fallback, class... Args>
at::Tensor& backward_out(at::Tensor& grad_input, const Resample& r, T grad_output, Fallback fallback,
                         const Args&... args) {
  if (!has_backward_kernel(grad_output)) return fallback();
  c10::OptionalDeviceGuard guard(grad_output.device());
  run_out<Meta, 1>([&](T gi) { launch(r, grad_output, gi, true); }, std::forward_as_tuple(grad_input), args...);
  return grad_input;
}

}  // namespace

TORCH_MLU_ATEN_IMPL(m) {
  namespace meta = at::meta;
  m.impl("upsample_nearest1d", [](T self, A output_size, S scales) {
    return forward<meta::structured_upsample_nearest1d>(
        Resample{k::ResampleMode::Nearest, 1, false, {scales}}, self,
        [&] { return cpu_fallback<ATEN_OP(upsample_nearest1d)>(self, output_size, scales); }, self,
        output_size, scales);
  });
  m.impl("upsample_nearest1d.out", [](T self, A output_size, S scales, at::Tensor& out) -> at::Tensor& {
    return forward_out<meta::structured_upsample_nearest1d>(
        out, Resample{k::ResampleMode::Nearest, 1, false, {scales}}, self,
        [&]() -> at::Tensor& {
          return cpu_fallback<ATEN_OP2(upsample_nearest1d, out)>(self, output_size,
                                                                 scales, out);
        },
        self, output_size, scales);
  });
  m.impl("upsample_nearest1d_backward", [](T grad_output, A output_size, A input_size, S scales) {
    return backward<meta::structured_upsample_nearest1d_backward>(
        Resample{k::ResampleMode::Nearest, 1, false, {scales}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_nearest1d_backward)>(grad_output, output_size,
                                                      input_size, scales);
        },
        grad_output, output_size, input_size, scales);
  });
  m.impl("upsample_nearest1d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, S scales, at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_nearest1d_backward>(
               grad_input, Resample{k::ResampleMode::Nearest, 1, false, {scales}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_nearest1d_backward, grad_input)>(grad_output, output_size, input_size, scales,
                     grad_input);
               },
               grad_output, output_size, input_size, scales);
         });
  m.impl("upsample_nearest2d", [](T self, A output_size, S scales_h, S scales_w) {
    return forward<meta::structured_upsample_nearest2d>(
        Resample{k::ResampleMode::Nearest, 2, false, {scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_nearest2d)>(self, output_size, scales_h,
                                                      scales_w);
        },
        self, output_size, scales_h, scales_w);
  });
  m.impl("upsample_nearest2d.out", [](T self, A output_size, S scales_h, S scales_w, at::Tensor& out) -> at::Tensor& {
    return forward_out<meta::structured_upsample_nearest2d>(
        out, Resample{k::ResampleMode::Nearest, 2, false, {scales_h, scales_w}}, self,
        [&]() -> at::Tensor& {
          return cpu_fallback<ATEN_OP2(upsample_nearest2d, out)>(self, output_size,
                                                                    scales_h, scales_w, out);
        },
        self, output_size, scales_h, scales_w);
  });
  m.impl("upsample_nearest2d_backward", [](T grad_output, A output_size, A input_size, S scales_h, S scales_w) {
    return backward<meta::structured_upsample_nearest2d_backward>(
        Resample{k::ResampleMode::Nearest, 2, false, {scales_h, scales_w}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_nearest2d_backward)>(grad_output, output_size,
                                                         input_size, scales_h, scales_w);
        },
        grad_output, output_size, input_size, scales_h, scales_w);
  });
  m.impl("upsample_nearest2d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, S scales_h, S scales_w, at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_nearest2d_backward>(
               grad_input, Resample{k::ResampleMode::Nearest, 2, false, {scales_h, scales_w}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_nearest2d_backward, grad_input)>(grad_output, output_size, input_size, scales_h,
                     scales_w, grad_input);
               },
               grad_output, output_size, input_size, scales_h, scales_w);
         });
  m.impl("upsample_nearest3d", [](T self, A output_size, S scales_d, S scales_h, S scales_w) {
    return forward<meta::structured_upsample_nearest3d>(
        Resample{k::ResampleMode::Nearest, 3, false, {scales_d, scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_nearest3d)>(self, output_size, scales_d,
                                                         scales_h, scales_w);
        },
        self, output_size, scales_d, scales_h, scales_w);
  });
  m.impl("upsample_nearest3d.out",
         [](T self, A output_size, S scales_d, S scales_h, S scales_w, at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured_upsample_nearest3d>(
               out, Resample{k::ResampleMode::Nearest, 3, false, {scales_d, scales_h, scales_w}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_nearest3d, out)>(self, output_size, scales_d, scales_h, scales_w, out);
               },
               self, output_size, scales_d, scales_h, scales_w);
         });
  m.impl("upsample_nearest3d_backward", [](T grad_output, A output_size, A input_size, S scales_d, S scales_h,
                                           S scales_w) {
    return backward<meta::structured_upsample_nearest3d_backward>(
        Resample{k::ResampleMode::Nearest, 3, false, {scales_d, scales_h, scales_w}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_nearest3d_backward)>(grad_output,
                                                            output_size, input_size, scales_d, scales_h, scales_w);
        },
        grad_output, output_size, input_size, scales_d, scales_h, scales_w);
  });
  m.impl("upsample_nearest3d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, S scales_d, S scales_h, S scales_w,
            at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_nearest3d_backward>(
               grad_input, Resample{k::ResampleMode::Nearest, 3, false, {scales_d, scales_h, scales_w}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_nearest3d_backward, grad_input)>(grad_output, output_size, input_size, scales_d,
                     scales_h, scales_w, grad_input);
               },
               grad_output, output_size, input_size, scales_d, scales_h, scales_w);
         });
  m.impl("_upsample_nearest_exact1d", [](T self, A output_size, S scales) {
    return forward<meta::structured__upsample_nearest_exact1d>(
        Resample{k::ResampleMode::NearestExact, 1, false, {scales}}, self,
        [&] { return cpu_fallback<ATEN_OP(_upsample_nearest_exact1d)>(self, output_size, scales); },
        self, output_size, scales);
  });
  m.impl("_upsample_nearest_exact1d.out", [](T self, A output_size, S scales, at::Tensor& out) -> at::Tensor& {
    return forward_out<meta::structured__upsample_nearest_exact1d>(
        out, Resample{k::ResampleMode::NearestExact, 1, false, {scales}}, self,
        [&]() -> at::Tensor& {
          return cpu_fallback<ATEN_OP2(_upsample_nearest_exact1d, out)>(self,
                                                                 output_size, scales, out);
        },
        self, output_size, scales);
  });
  m.impl("_upsample_nearest_exact1d_backward", [](T grad_output, A output_size, A input_size, S scales) {
    return backward<meta::structured__upsample_nearest_exact1d_backward>(
        Resample{k::ResampleMode::NearestExact, 1, false, {scales}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(_upsample_nearest_exact1d_backward)>(grad_output,
                                                      output_size, input_size, scales);
        },
        grad_output, output_size, input_size, scales);
  });
  m.impl("_upsample_nearest_exact1d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, S scales, at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured__upsample_nearest_exact1d_backward>(
               grad_input, Resample{k::ResampleMode::NearestExact, 1, false, {scales}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(_upsample_nearest_exact1d_backward, grad_input)>(grad_output, output_size, input_size,
                     scales, grad_input);
               },
               grad_output, output_size, input_size, scales);
         });
  m.impl("_upsample_nearest_exact2d", [](T self, A output_size, S scales_h, S scales_w) {
    return forward<meta::structured__upsample_nearest_exact2d>(
        Resample{k::ResampleMode::NearestExact, 2, false, {scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(_upsample_nearest_exact2d)>(self, output_size, scales_h,
                                                      scales_w);
        },
        self, output_size, scales_h, scales_w);
  });
  m.impl("_upsample_nearest_exact2d.out",
         [](T self, A output_size, S scales_h, S scales_w, at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured__upsample_nearest_exact2d>(
               out, Resample{k::ResampleMode::NearestExact, 2, false, {scales_h, scales_w}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(_upsample_nearest_exact2d, out)>(self,
                                                                           output_size, scales_h, scales_w, out);
               },
               self, output_size, scales_h, scales_w);
         });
  m.impl("_upsample_nearest_exact2d_backward", [](T grad_output, A output_size, A input_size, S scales_h, S scales_w) {
    return backward<meta::structured__upsample_nearest_exact2d_backward>(
        Resample{k::ResampleMode::NearestExact, 2, false, {scales_h, scales_w}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(_upsample_nearest_exact2d_backward)>(grad_output,
                                                         output_size, input_size, scales_h, scales_w);
        },
        grad_output, output_size, input_size, scales_h, scales_w);
  });
  m.impl("_upsample_nearest_exact2d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, S scales_h, S scales_w, at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured__upsample_nearest_exact2d_backward>(
               grad_input, Resample{k::ResampleMode::NearestExact, 2, false, {scales_h, scales_w}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(_upsample_nearest_exact2d_backward, grad_input)>(grad_output, output_size, input_size,
                     scales_h, scales_w, grad_input);
               },
               grad_output, output_size, input_size, scales_h, scales_w);
         });
  m.impl("_upsample_nearest_exact3d", [](T self, A output_size, S scales_d, S scales_h, S scales_w) {
    return forward<meta::structured__upsample_nearest_exact3d>(
        Resample{k::ResampleMode::NearestExact, 3, false, {scales_d, scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(_upsample_nearest_exact3d)>(self, output_size, scales_d,
                                                         scales_h, scales_w);
        },
        self, output_size, scales_d, scales_h, scales_w);
  });
  m.impl("_upsample_nearest_exact3d.out",
         [](T self, A output_size, S scales_d, S scales_h, S scales_w, at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured__upsample_nearest_exact3d>(
               out, Resample{k::ResampleMode::NearestExact, 3, false, {scales_d, scales_h, scales_w}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(_upsample_nearest_exact3d, out)>(self, output_size, scales_d, scales_h, scales_w, out);
               },
               self, output_size, scales_d, scales_h, scales_w);
         });
  m.impl("_upsample_nearest_exact3d_backward", [](T grad_output, A output_size, A input_size, S scales_d, S scales_h,
                                                  S scales_w) {
    return backward<meta::structured__upsample_nearest_exact3d_backward>(
        Resample{k::ResampleMode::NearestExact, 3, false, {scales_d, scales_h, scales_w}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(_upsample_nearest_exact3d_backward)>(grad_output,
                                                            output_size, input_size, scales_d, scales_h, scales_w);
        },
        grad_output, output_size, input_size, scales_d, scales_h, scales_w);
  });
  m.impl("_upsample_nearest_exact3d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, S scales_d, S scales_h, S scales_w,
            at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured__upsample_nearest_exact3d_backward>(
               grad_input, Resample{k::ResampleMode::NearestExact, 3, false, {scales_d, scales_h, scales_w}},
               grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(_upsample_nearest_exact3d_backward, grad_input)>(grad_output, output_size, input_size,
                     scales_d, scales_h, scales_w, grad_input);
               },
               grad_output, output_size, input_size, scales_d, scales_h, scales_w);
         });
  m.impl("upsample_linear1d", [](T self, A output_size, bool align_corners, S scales) {
    return forward<meta::structured_upsample_linear1d>(
        Resample{k::ResampleMode::Linear, 1, align_corners, {scales}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_linear1d)>(self, output_size, align_corners,
                                                         scales);
        },
        self, output_size, align_corners, scales);
  });
  m.impl("upsample_linear1d.out",
         [](T self, A output_size, bool align_corners, S scales, at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured_upsample_linear1d>(
               out, Resample{k::ResampleMode::Linear, 1, align_corners, {scales}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_linear1d, out)>(self,
                                                                              output_size, align_corners, scales, out);
               },
               self, output_size, align_corners, scales);
         });
  m.impl("upsample_linear1d_backward", [](T grad_output, A output_size, A input_size, bool align_corners, S scales) {
    return backward<meta::structured_upsample_linear1d_backward>(
        Resample{k::ResampleMode::Linear, 1, align_corners, {scales}}, grad_output,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_linear1d_backward)>(grad_output,
                                                            output_size, input_size, align_corners, scales);
        },
        grad_output, output_size, input_size, align_corners, scales);
  });
  m.impl("upsample_linear1d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales,
            at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_linear1d_backward>(
               grad_input, Resample{k::ResampleMode::Linear, 1, align_corners, {scales}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_linear1d_backward, grad_input)>(grad_output, output_size, input_size, align_corners,
                     scales, grad_input);
               },
               grad_output, output_size, input_size, align_corners, scales);
         });
  m.impl("upsample_bilinear2d", [](T self, A output_size, bool align_corners, S scales_h, S scales_w) {
    return forward<meta::structured_upsample_bilinear2d>(
        Resample{k::ResampleMode::Linear, 2, align_corners, {scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_bilinear2d)>(self, output_size,
                                                            align_corners, scales_h, scales_w);
        },
        self, output_size, align_corners, scales_h, scales_w);
  });
  m.impl("upsample_bilinear2d.out",
         [](T self, A output_size, bool align_corners, S scales_h, S scales_w, at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured_upsample_bilinear2d>(
               out, Resample{k::ResampleMode::Linear, 2, align_corners, {scales_h, scales_w}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_bilinear2d, out)>(self, output_size, align_corners, scales_h, scales_w, out);
               },
               self, output_size, align_corners, scales_h, scales_w);
         });
  m.impl("upsample_bilinear2d_backward",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales_h, S scales_w) {
           return backward<meta::structured_upsample_bilinear2d_backward>(
               Resample{k::ResampleMode::Linear, 2, align_corners, {scales_h, scales_w}}, grad_output,
               [&] {
                 return cpu_fallback<ATEN_OP(upsample_bilinear2d_backward)>(grad_output,
                                                                      output_size, input_size, align_corners, scales_h,
                                                                      scales_w);
               },
               grad_output, output_size, input_size, align_corners, scales_h, scales_w);
         });
  m.impl("upsample_bilinear2d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales_h, S scales_w,
            at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_bilinear2d_backward>(
               grad_input, Resample{k::ResampleMode::Linear, 2, align_corners, {scales_h, scales_w}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_bilinear2d_backward, grad_input)>(grad_output, output_size, input_size,
                     align_corners, scales_h, scales_w, grad_input);
               },
               grad_output, output_size, input_size, align_corners, scales_h, scales_w);
         });
  m.impl("upsample_bicubic2d", [](T self, A output_size, bool align_corners, S scales_h, S scales_w) {
    return forward<meta::structured_upsample_bicubic2d>(
        Resample{k::ResampleMode::Cubic, 2, align_corners, {scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_bicubic2d)>(self, output_size,
                                                            align_corners, scales_h, scales_w);
        },
        self, output_size, align_corners, scales_h, scales_w);
  });
  m.impl("upsample_bicubic2d.out",
         [](T self, A output_size, bool align_corners, S scales_h, S scales_w, at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured_upsample_bicubic2d>(
               out, Resample{k::ResampleMode::Cubic, 2, align_corners, {scales_h, scales_w}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_bicubic2d, out)>(self, output_size, align_corners, scales_h, scales_w, out);
               },
               self, output_size, align_corners, scales_h, scales_w);
         });
  m.impl("upsample_bicubic2d_backward",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales_h, S scales_w) {
           return backward<meta::structured_upsample_bicubic2d_backward>(
               Resample{k::ResampleMode::Cubic, 2, align_corners, {scales_h, scales_w}}, grad_output,
               [&] {
                 return cpu_fallback<ATEN_OP(upsample_bicubic2d_backward)>(grad_output,
                                                                      output_size, input_size, align_corners, scales_h,
                                                                      scales_w);
               },
               grad_output, output_size, input_size, align_corners, scales_h, scales_w);
         });
  m.impl("upsample_bicubic2d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales_h, S scales_w,
            at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_bicubic2d_backward>(
               grad_input, Resample{k::ResampleMode::Cubic, 2, align_corners, {scales_h, scales_w}}, grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_bicubic2d_backward, grad_input)>(grad_output, output_size, input_size,
                     align_corners, scales_h, scales_w, grad_input);
               },
               grad_output, output_size, input_size, align_corners, scales_h, scales_w);
         });
  m.impl("upsample_trilinear3d", [](T self, A output_size, bool align_corners, S scales_d, S scales_h, S scales_w) {
    return forward<meta::structured_upsample_trilinear3d>(
        Resample{k::ResampleMode::Linear, 3, align_corners, {scales_d, scales_h, scales_w}}, self,
        [&] {
          return cpu_fallback<ATEN_OP(upsample_trilinear3d)>(self, output_size,
                                                               align_corners, scales_d, scales_h, scales_w);
        },
        self, output_size, align_corners, scales_d, scales_h, scales_w);
  });
  m.impl("upsample_trilinear3d.out",
         [](T self, A output_size, bool align_corners, S scales_d, S scales_h, S scales_w,
            at::Tensor& out) -> at::Tensor& {
           return forward_out<meta::structured_upsample_trilinear3d>(
               out, Resample{k::ResampleMode::Linear, 3, align_corners, {scales_d, scales_h, scales_w}}, self,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_trilinear3d, out)>(self, output_size, align_corners,
                                                                                    scales_d, scales_h, scales_w, out);
               },
               self, output_size, align_corners, scales_d, scales_h, scales_w);
         });
  m.impl("upsample_trilinear3d_backward",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales_d, S scales_h, S scales_w) {
           return backward<meta::structured_upsample_trilinear3d_backward>(
               Resample{k::ResampleMode::Linear, 3, align_corners, {scales_d, scales_h, scales_w}}, grad_output,
               [&] {
                 return cpu_fallback<ATEN_OP(upsample_trilinear3d_backward)>(grad_output, output_size, input_size,
                                                                         align_corners, scales_d, scales_h, scales_w);
               },
               grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w);
         });
  m.impl("upsample_trilinear3d_backward.grad_input",
         [](T grad_output, A output_size, A input_size, bool align_corners, S scales_d, S scales_h, S scales_w,
            at::Tensor& grad_input) -> at::Tensor& {
           return backward_out<meta::structured_upsample_trilinear3d_backward>(
               grad_input, Resample{k::ResampleMode::Linear, 3, align_corners, {scales_d, scales_h, scales_w}},
               grad_output,
               [&]() -> at::Tensor& {
                 return cpu_fallback<ATEN_OP2(upsample_trilinear3d_backward, grad_input)>(grad_output, output_size, input_size,
                     align_corners, scales_d, scales_h, scales_w, grad_input);
               },
               grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w);
         });
}

}  // namespace torch_mlu
