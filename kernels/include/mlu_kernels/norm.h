// Layer normalisation over the last `cols` elements of `rows` contiguous rows,
// and its backward op, in the order of operations of PyTorch's CPU kernel
// (LayerNormKernel.cpp). x, y and the gradients of x / y have dtype `type`;
// everything else is in the accumulation type A (double for Float64, float
// otherwise): weight / bias (optional, `cols` long), mean / rstd (`rows`
// long), grad_weight / grad_bias. Float16/BFloat16 compute in float.
//   y = (x - mean) * rstd * weight + bias,  rstd = 1 / sqrt(var + eps),
// var the biased variance of the row (two passes: mean, then squares).
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

void layer_norm(ScalarType type, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                double eps, void* y, void* mean, void* rstd);

// Any of grad_input, grad_weight, grad_bias may be nullptr (not wanted);
// weight may be nullptr (all ones).
void layer_norm_backward(ScalarType type, int64_t rows, int64_t cols, const void* grad_y, const void* x,
                         const void* mean, const void* rstd, const void* weight, void* grad_input, void* grad_weight,
                         void* grad_bias);

}  // namespace mlu::kernels
