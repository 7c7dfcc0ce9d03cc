// Layer and batch normalisation. Layer: over the last `cols` elements of
// `rows` contiguous rows, and its backward op, in the order of operations of PyTorch's CPU kernel
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
// Scalar reference (norm_ref.cpp): the formulas above, sums in double.
void layer_norm_ref(ScalarType type, int64_t rows, int64_t cols, const void* x, const void* weight,
                    const void* bias, double eps, void* y, void* mean, void* rstd);

// Any of grad_input, grad_weight, grad_bias may be nullptr (not wanted);
// weight may be nullptr (all ones).
void layer_norm_backward(ScalarType type, int64_t rows, int64_t cols, const void* grad_y, const void* x,
                         const void* mean, const void* rstd, const void* weight, void* grad_input, void* grad_weight,
                         void* grad_bias);
// Scalar reference: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight; sums in double.
void layer_norm_backward_ref(ScalarType type, int64_t rows, int64_t cols, const void* grad_y, const void* x,
                             const void* mean, const void* rstd, const void* weight, void* grad_input,
                             void* grad_weight, void* grad_bias);

// Batch normalisation of x [n, channels, spatial] (contiguous), per channel
// over the n * spatial elements, in the same accumulation type A.
// Training statistics in one call, as the CPU's batch_norm_cpu_update_stats:
// mean, the biased variance var (two passes), invstd = 1 / sqrt(var + eps)
// (in double, stored in A) and, unless
// null, the running statistics (A, `channels` long) updated in place:
// running = momentum * stat + (1 - momentum) * running, with the unbiased
// variance (sum of squares / (count - 1): NaN for a single value, as on
// the CPU).
// cpu_lanes_16bit: 0 keeps all of this in A. For a Float16 / BFloat16 input
// whose parameters share its type, the CPU's float vector width (16 with
// AVX-512, else 8): the sums then run in the CPU's order and the statistics
// are rounded where the CPU keeps them in the 16-bit type (Note [16-bit
// batch statistics as the CPU keeps them] in norm_isa.cpp); mean and invstd
// are then 16-bit values held in A, for batch_norm_apply to use as they are.
void batch_norm_training_statistics(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x,
                                    double eps, double momentum, void* mean, void* invstd, void* running_mean,
                                    void* running_var, int cpu_lanes_16bit = 0);
// Scalar reference: mean and the biased variance, the two passes in double.
void batch_norm_statistics_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x,
                               void* mean, void* var);

// y = (x - mean[c]) * invstd[c] * weight[c] + bias[c] (weight / bias optional),
// computed as the CPU's batch_norm_cpu_contiguous_impl (compiled with FMA
// contraction) computes it: y = fma(x, scale, shift), scale = invstd * weight,
// shift = fma(-mean, scale, bias). rounded_shift: shift = bias - r(mean *
// scale) instead, as the CPU's kernel for Float16 with Float16 parameters.
void batch_norm_apply(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x, const void* mean,
                      const void* invstd, const void* weight, const void* bias, void* y, bool rounded_shift = false);
// Scalar reference: (x - mean) * invstd * weight + bias in double, one element at a time.
void batch_norm_apply_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* x,
                          const void* mean, const void* invstd, const void* weight, const void* bias, void* y);

// With m = n * spatial, xhat = (x - mean) * invstd, per channel:
//   grad_bias = sum(dy), grad_weight = sum(dy * xhat),
//   grad_input = (dy - sum(dy) / m - xhat * sum(dy * xhat) / m) * invstd * weight   (training: batch statistics)
//   grad_input = dy * invstd * weight                                                (eval: running statistics)
// Any output may be nullptr; weight may be nullptr (ones).
void batch_norm_backward(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* grad_y,
                         const void* x, const void* mean, const void* invstd, const void* weight, bool training,
                         void* grad_input, void* grad_weight, void* grad_bias);
// Scalar reference: the formulas above, sums in double.
void batch_norm_backward_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, const void* grad_y,
                             const void* x, const void* mean, const void* invstd, const void* weight, bool training,
                             void* grad_input, void* grad_weight, void* grad_bias);

// Group normalisation of x [n, channels, spatial] (contiguous) in `groups`
// groups of D = channels / groups consecutive channels, as the CPU's
// GroupNormKernel: per (sample, group) row of D * spatial elements, mean and
// rstd = 1 / sqrt(var + eps) (biased variance, two passes; mean / rstd
// [n, groups] in A), y = x * scale + shift with scale = rstd * weight[c],
// shift = bias[c] - mean * scale (weight / bias optional, A).
void group_norm(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups, const void* x,
                const void* weight, const void* bias, double eps, void* y, void* mean, void* rstd);
void group_norm_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups, const void* x,
                    const void* weight, const void* bias, double eps, void* y, void* mean, void* rstd);

// Its backward op, with ds = sum_hw dy x and db = sum_hw dy per (sample,
// channel), gamma = weight (ones if null), per (sample, group):
//   dx = rstd gamma dy + c2 x + c3,
//   c2 = (sum_c db gamma * mean - sum_c ds gamma) rstd^3 / (D spatial),
//   c3 = -c2 mean - sum_c db gamma * rstd / (D spatial),
// grad_weight[c] = sum_n (ds - db mean) rstd, grad_bias[c] = sum_n db (A).
// Any output may be nullptr.
void group_norm_backward(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups,
                         const void* grad_y, const void* x, const void* mean, const void* rstd, const void* weight,
                         void* grad_input, void* grad_weight, void* grad_bias);
void group_norm_backward_ref(ScalarType type, int64_t n, int64_t channels, int64_t spatial, int64_t groups,
                             const void* grad_y, const void* x, const void* mean, const void* rstd,
                             const void* weight, void* grad_input, void* grad_weight, void* grad_bias);

}  // namespace mlu::kernels
