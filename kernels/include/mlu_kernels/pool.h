// 2-D and 3-D pooling and backward ops, as PyTorch's CPU computes them, on
// planes of contiguous [depth, height, width] elements (all of a batch's
// channels one after another; 2-D pooling is depth 1).
//
// Max pooling with indices (MaxPoolKernel.cpp, DilatedMaxPool3d.cpp): a
// window starts at (o * stride - padding), steps by dilation and is clipped
// to the plane; the maximum is the first largest element, or the last NaN
// (NaN propagates); indices are flat positions within the plane, int64.
// Float16/BFloat16 compare in float.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

// Per spatial dim [depth, height, width]: sizes, window, stride, padding, dilation.
struct PoolShape {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
};

void max_pool(const PoolShape& shape, ScalarType type, const void* input, void* output, int64_t* indices);
// Scalar reference (pool_ref.cpp): each output's taps in a loop nest, skipping those outside the plane.
void max_pool_ref(const PoolShape& shape, ScalarType type, const void* input, void* output, int64_t* indices);

// grad_input (overwritten): zero, plus grad_output at each output's index
// (summed where windows overlap on one maximum). The backward op of max_pool
// and of adaptive_max_pool.
void max_pool_backward(const PoolShape& shape, ScalarType type, const void* grad_output, const int64_t* indices,
                       void* grad_input);
// Scalar reference: each input element sums, in double, the outputs whose index is it.
void max_pool_backward_ref(const PoolShape& shape, ScalarType type, const void* grad_output, const int64_t* indices,
                           void* grad_input);

// Average pooling (AvgPoolKernel.cpp, AveragePool3d.cpp): a window of
// `kernel` from (o * stride - padding), clipped to the padded plane for the
// count_include_pad divisor and to the plane for the sum; the divisor is
// divisor_override unless it is 0 (PyTorch rejects 0; negative is allowed),
// else the padded window's size (count_include_pad) or the clipped one's; an
// empty window gives 0. Dilation is ignored (average pooling has none).
// Float16/BFloat16 sum in float.
void avg_pool(const PoolShape& shape, ScalarType type, const void* input, void* output, bool count_include_pad,
              int64_t divisor_override);
// Scalar reference: each output's taps summed in double.
void avg_pool_ref(const PoolShape& shape, ScalarType type, const void* input, void* output, bool count_include_pad,
                  int64_t divisor_override);
void avg_pool_backward(const PoolShape& shape, ScalarType type, const void* grad_output, void* grad_input,
                       bool count_include_pad, int64_t divisor_override);
// Scalar reference: each input element sums, in double, grad_output / divisor of the windows holding it.
void avg_pool_backward_ref(const PoolShape& shape, ScalarType type, const void* grad_output, void* grad_input,
                           bool count_include_pad, int64_t divisor_override);

// Adaptive pooling to `out`: output i of a dim of size in -> out covers
// [floor(i * in / out), ceil((i + 1) * in / out)) (kernel, stride, padding
// unused). Average, or maximum with indices as max_pool.
void adaptive_avg_pool(const PoolShape& shape, ScalarType type, const void* input, void* output);
// Scalar reference: each output's window summed in double.
void adaptive_avg_pool_ref(const PoolShape& shape, ScalarType type, const void* input, void* output);
void adaptive_avg_pool_backward(const PoolShape& shape, ScalarType type, const void* grad_output, void* grad_input);
// Scalar reference: each input element sums, in double, the windows holding it.
void adaptive_avg_pool_backward_ref(const PoolShape& shape, ScalarType type, const void* grad_output,
                                    void* grad_input);
// The CPU's 3-D forms (Note [The CPU's 3-D adaptive average] in pool.cpp):
// the same windows, summed in the element type's own arithmetic.
void adaptive_avg_pool3d(const PoolShape& shape, ScalarType type, const void* input, void* output);
void adaptive_avg_pool3d_backward(const PoolShape& shape, ScalarType type, const void* grad_output,
                                  void* grad_input);
void adaptive_max_pool(const PoolShape& shape, ScalarType type, const void* input, void* output, int64_t* indices);
// Scalar reference: as max_pool_ref over the adaptive windows.
void adaptive_max_pool_ref(const PoolShape& shape, ScalarType type, const void* input, void* output,
                           int64_t* indices);

// Fractional max pooling (FractionalMaxPool2d.cpp / 3d.cpp): the windows of
// `kernel` start at per-plane pseudo-random positions. For a dim of size in
// -> out with sample u in [0, 1) (samples [planes, dims] in PyTorch's order:
// 2-D width, height; 3-D time, height, width), window i starts at
// floor((i + u) * a) - floor(u * a), a = (in - kernel) / (out - 1), computed
// in the input's dtype like the CPU, and the last at in - kernel. Maximum and
// indices as max_pool; the backward op is max_pool_backward.
void fractional_max_pool(const PoolShape& shape, int dims, ScalarType type, const void* input, const void* samples,
                         void* output, int64_t* indices);
// Scalar reference: each window's start from generate_intervals' formula for its index, then as max_pool_ref.
void fractional_max_pool_ref(const PoolShape& shape, int dims, ScalarType type, const void* input,
                             const void* samples, void* output, int64_t* indices);

}  // namespace mlu::kernels
