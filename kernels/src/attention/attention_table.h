// The per-ISA row routines of the fused attention (attention_isa.cpp), on
// float score rows. attention.cpp does the tiling, the GEMMs and the
// threading; these are the element-wise steps between the GEMMs.
#pragma once

#include "../common/isa_variants.h"
#include <cstdint>

namespace mlu::kernels::detail {

struct AttentionRowFns {
  // The largest of x[0..n) (NaN if any is NaN; -inf for n == 0).
  float (*max)(const float* x, int64_t n);
  // x[j] = exp(x[j] - shift) in place; returns the sum of the results.
  float (*exp_sum)(float* x, int64_t n, float shift);
  // dp[j] = p[j] * (dp[j] - d) in place (the softmax backward of one row).
  void (*softmax_grad)(float* dp, const float* p, int64_t n, float d);
  // The dot product of a[0..n) and b[0..n).
  float (*dot)(const float* a, const float* b, int64_t n);
  // max and exp_sum over `rows` rows of n scores each, row r at x + r * ld:
  // out[r] = the max of row r; and row r = exp(row r - shift[r]) in place,
  // sum[r] = its sum. Several rows at a time (Note [Score rows together]).
  void (*max_rows)(const float* x, int64_t ld, int64_t rows, int64_t n, float* out);
  void (*exp_sum_rows)(float* x, int64_t ld, int64_t rows, int64_t n, const float* shift, float* sum);
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::AttentionRowFns& attention_rows())
