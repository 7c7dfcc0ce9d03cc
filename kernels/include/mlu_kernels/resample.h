// Resampling (F.interpolate's upsample_* ops) and its backward op, as
// PyTorch's CPU computes them (UpSample.h, UpSampleKernel.cpp), on planes of
// contiguous [depth, height, width] elements (1-D and 2-D: leading dims of
// size 1).
//
// Each output index o of a dim of size in -> out reads taps of the input
// along that dim: nearest one (floor(o * scale), or floor((o + 0.5) * scale)
// for nearest-exact), linear two (the source index's floor and the next,
// weights 1 - t and t), cubic four (Keys' kernel with A = -0.75, indices
// clamped to the dim). scale is (in - 1) / (out - 1) with align_corners, else
// 1 / scale_factor when the caller gave one, else in / out; the source index
// is scale * o (align_corners) or scale * (o + 0.5) - 0.5 (clamped at 0
// except for cubic). An output is the sum over tap combinations, outermost
// dim first, in the compute type (float for Float16/BFloat16; index math in
// float for nearest, like the CPU). The backward op adds each output gradient
// into the same taps with the same weights.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

enum class ResampleMode { Nearest, NearestExact, Linear, Cubic };

struct ResampleShape {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  // Per dim: the user's scale factor, or 0 when not given.
  double scale_factor[3] = {0, 0, 0};
  // Per dim (a dim added to reach three dims is Nearest, 1 -> 1).
  ResampleMode mode[3] = {ResampleMode::Nearest, ResampleMode::Nearest, ResampleMode::Nearest};
  bool align_corners = false;
  // Forward only: store the linear / cubic weights in the element type
  // before use, as the CPU's generic kernel does (Note [Interpolation weights
  // in 16 bits] in resample.cpp); only Float16 / BFloat16 are affected.
  bool weights_in_element_type = false;
};

// Floating dtypes; Nearest / NearestExact in every dim also take any dtype (a copy).
bool resample_supports(const ResampleShape& shape, ScalarType type);

void resample(const ResampleShape& shape, ScalarType type, const void* input, void* output);
// Scalar reference (resample_ref.cpp): each output's taps from the formulas above, summed in double.
void resample_ref(const ResampleShape& shape, ScalarType type, const void* input, void* output);
// grad_input is overwritten.
void resample_backward(const ResampleShape& shape, ScalarType type, const void* grad_output, void* grad_input);
// Scalar reference: each input element sums, in double, every output's weight on it.
void resample_backward_ref(const ResampleShape& shape, ScalarType type, const void* grad_output, void* grad_input);

}  // namespace mlu::kernels
