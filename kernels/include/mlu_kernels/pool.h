// 2-D pooling and backward ops, as PyTorch's CPU computes them. Max pooling
// with indices (MaxPoolKernel.cpp): planes of [height, width] contiguous
// elements (all of a batch's channels one after another); a window starts at
// (o * stride - padding), steps by dilation and is clipped to the plane; the
// maximum is the first largest element, or the last NaN (NaN propagates);
// indices are flat positions within the plane, int64. Float16/BFloat16
// compare in float.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

struct Pool2dShape {
  int64_t planes = 1, in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};

void max_pool2d(const Pool2dShape& shape, ScalarType type, const void* input, void* output, int64_t* indices);

// grad_input (overwritten): zero, plus grad_output at each output's index
// (summed where windows overlap on one maximum).
void max_pool2d_backward(const Pool2dShape& shape, ScalarType type, const void* grad_output, const int64_t* indices,
                         void* grad_input);

// 2-D average pooling (AvgPoolKernel.cpp): a window of kernel_h x kernel_w
// from (o * stride - padding), clipped to the padded plane for the
// count_include_pad divisor and to the plane for the sum; the divisor is
// divisor_override unless it is 0 (PyTorch rejects 0; negative is allowed), else the padded window's size
// (count_include_pad) or the clipped one's; an empty window gives 0.
// Dilation is ignored (avg_pool2d has none). Float16/BFloat16 sum in float.
void avg_pool2d(const Pool2dShape& shape, ScalarType type, const void* input, void* output, bool count_include_pad,
                int64_t divisor_override);
void avg_pool2d_backward(const Pool2dShape& shape, ScalarType type, const void* grad_output, void* grad_input,
                         bool count_include_pad, int64_t divisor_override);

// Adaptive average pooling to out_h x out_w: output (i, j) averages rows
// [floor(i * in_h / out_h), ceil((i + 1) * in_h / out_h)) and likewise the
// columns (kernel, stride, padding of `shape` unused).
void adaptive_avg_pool2d(const Pool2dShape& shape, ScalarType type, const void* input, void* output);
void adaptive_avg_pool2d_backward(const Pool2dShape& shape, ScalarType type, const void* grad_output,
                                  void* grad_input);

}  // namespace mlu::kernels
