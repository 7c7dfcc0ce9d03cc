// Arithmetic sequences into a 1-D strided output (arange, linspace), with
// the values of PyTorch's CPU range factories:
//   arange:   out[i] = start + i * step, in double for floating dtypes and
//             int64 otherwise, then converted;
//   linspace: out[i] = i < n / 2 ? start + i * step : end - (n - 1 - i) * step,
//             step = (end - start) / (n - 1) (symmetric from both ends), for
//             floating dtypes in the dtype's own arithmetic (Note [linspace
//             as the CPU rounds]).
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

void arange(void* out, ScalarType dtype, int64_t n, int64_t stride, double start, double step);
void arange_int(void* out, ScalarType dtype, int64_t n, int64_t stride, int64_t start, int64_t step);
// Floating dtypes only (Float16, BFloat16, Float32, Float64). `fused`: Float32
// and Float64 as the CPU's FMA builds compute them (one rounding of start +
// step * i); the 16-bit dtypes never fuse.
void linspace(void* out, ScalarType dtype, int64_t n, int64_t stride, double start, double end, bool fused);

// The input position each output position of a padded dim reads (int64,
// contiguous, before + n + after of them): for i = o - before,
// clamp(i, 0, n - 1) (replication) or the one-bounce reflection
// (n - 1) - |(n - 1) - |i|| (reflection; before, after < n). Negative
// before / after crop.
void padding_source_index(int64_t* out, int64_t n, int64_t before, int64_t after, bool reflect);

}  // namespace mlu::kernels
