// F.interpolate on mlu: the upsample_* ops (nearest, nearest-exact, linear,
// bilinear, bicubic, trilinear; align_corners both ways; explicit scale
// factors) and their backward ops, on the resampling kernel
// (mlu_kernels/resample.h). PyTorch's meta functions check the arguments and
// size the results (channels_last kept); the kernel works on contiguous
// planes and results are copied into other layouts. Integer inputs take the
// kernel for nearest modes (a copy) and the CPU fallback otherwise.
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <mlu_kernels/resample.h>

#include <array>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;
using A = at::IntArrayRef;
using S = std::optional<double>;

// The modes by the names csrc/aten/mlu_functions.yaml uses, which registers
// every op of this file: the forward ops launch(..., kForward), the backward
// ops launch(..., kBackward), each on the CPU fallback where has_kernel /
// has_backward_kernel say no.
constexpr auto Nearest = k::ResampleMode::Nearest;
constexpr auto NearestExact = k::ResampleMode::NearestExact;
constexpr auto Linear = k::ResampleMode::Linear;
constexpr auto Cubic = k::ResampleMode::Cubic;
constexpr bool kForward = false;
constexpr bool kBackward = true;

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
  const void* x = device_ptr<const void>(from);
  void* y = device_ptr(result);
  launch_kernel(from.device().index(), backward ? "upsample_backward" : "upsample", [=] {
    if (backward) {
      k::resample_backward(shape, type, x, y);
    } else {
      k::resample(shape, type, x, y);
    }
  });
  if (!direct) to.copy_(result);
}

// The backward ops run the kernel for floating types only (the others are not differentiable).
bool has_backward_kernel(T grad_output) {
  return at::isFloatingType(grad_output.scalar_type()) && kernel_dtype(grad_output.scalar_type()).has_value();
}

}  // namespace

}  // namespace torch_mlu

#include "generated/ops/ResampleOps.inc"
