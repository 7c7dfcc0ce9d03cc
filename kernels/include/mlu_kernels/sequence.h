// Arithmetic sequences into a 1-D strided output (arange, linspace).
// Values are computed in double for floating dtypes and int64 otherwise,
// then converted, exactly as PyTorch's CPU range factories do:
//   arange:   out[i] = start + i * step
//   linspace: out[i] = i < n / 2 ? start + i * step : end - (n - 1 - i) * step,
//             step = (end - start) / (n - 1)  (symmetric from both ends)
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

void arange(void* out, ScalarType dtype, int64_t n, int64_t stride, double start, double step);
void arange_int(void* out, ScalarType dtype, int64_t n, int64_t stride, int64_t start, int64_t step);
void linspace(void* out, ScalarType dtype, int64_t n, int64_t stride, double start, double end);

// The input position each output position of a padded dim reads (int64,
// contiguous, before + n + after of them): for i = o - before,
// clamp(i, 0, n - 1) (replication) or the one-bounce reflection
// (n - 1) - |(n - 1) - |i|| (reflection; before, after < n). Negative
// before / after crop.
void padding_source_index(int64_t* out, int64_t n, int64_t before, int64_t after, bool reflect);

}  // namespace mlu::kernels
