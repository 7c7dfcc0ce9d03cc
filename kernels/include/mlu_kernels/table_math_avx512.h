// The table-driven AVX-512 float functions (tanh, erf) of the kernel library,
// public so that code built outside it takes the same functions: the kernels
// Inductor generates for mlu (torch_mlu/_inductor/include/torch_mlu/
// compiled_math.h) compute tanh and erf as mlu's eager kernels do.
//
// Invariants: header-only, needs nothing but <immintrin.h>; everything is
// defined only where the including translation unit is compiled for AVX-512
// (__AVX512F__), and always inlined, so no symbol crosses ISAs.
#pragma once

#if defined(__AVX512F__)
#include <immintrin.h>

#include "mlu_kernels/polynomial_tables.h"

namespace mlu::kernels::table_math {

// Note [Table-driven float functions]
// On AVX-512, float tanh and erf are polynomials picked from a table: |x|
// selects one of a few dozen intervals ([0, 1/8), then each binade from 1/8
// on in four, by the exponent and the top two mantissa bits), and the result
// is c0 + c1 t + ... + c5 t^5 in t = |x| - (the interval's start), each
// lane's coefficients fetched by vpermt2ps from two registers per power
// (polynomial_tables.h, fitted by kernels/tools/fit_tables.py). Interval 0
// computes t + t (c1 + c2 t + ...) instead, so small |x| (denormals too) come
// out exact in relative terms; NaN reaches t (interval 0) and propagates.
// About 20 vector operations. Where the core issues one 512-bit floating
// operation per cycle (as on the host this was tuned on), the count is the
// speed: tanh as 1 - 2 / (exp(2|x|) + 1) with a vdivps took about twice as
// many and fell well behind MKL (timings: docs/bench_kernels.md).
template <const auto& Table, int Last>
[[gnu::always_inline]] inline __m512 table_polynomial(__m512 a) {  // a = |x|
  const __m512i bits = _mm512_castps_si512(a);
  // Interval 1 + 4 (binade - binade(1/8)) + top mantissa bits, at most Last;
  // 0, starting at 0, below 1/8 and for NaN.
  const __mmask16 above = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.125f), _CMP_GE_OQ);
  __m512i n = _mm512_maskz_sub_epi32(above, _mm512_srli_epi32(bits, 21), _mm512_set1_epi32((0x3E000000 >> 21) - 1));
  n = _mm512_min_epi32(n, _mm512_set1_epi32(Last));
  const __m512 start = _mm512_castsi512_ps(_mm512_maskz_and_epi32(above, bits, _mm512_set1_epi32(~0x1FFFFF)));
  const __m512 t = _mm512_sub_ps(a, start);
  auto coefficient = [&](int k) {
    return _mm512_permutex2var_ps(_mm512_load_ps(Table[k]), n, _mm512_load_ps(Table[k] + 16));
  };
  __m512 r = coefficient(5);
  for (int k = 4; k >= 1; --k) r = _mm512_fmadd_ps(r, t, coefficient(k));
  return _mm512_fmadd_ps(r, t, _mm512_mask_blend_ps(above, t, coefficient(0)));
}

// Note [Fast float tanh]
// Note [Table-driven float functions] over 26 intervals up to 10; 1 above 9.5
// (tanh rounds to 1 from 9.02 on); the sign goes back last, so -0 stays -0.
// Within 2 ulp of tanh (kernels test Pointwise.FastFloatTanhWithinTwoUlps;
// 1.10 measured), against 3.5 for the SLEEF variant ATen uses; the
// composites (gelu tanh, mish) take it too.
[[gnu::always_inline]] inline __m512 tanh_avx512(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 a = _mm512_andnot_ps(sign, x);
  __m512 r = table_polynomial<detail::kTanhTable, detail::kTanhTableLast>(a);
  r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(9.5f), _CMP_GT_OQ), r, _mm512_set1_ps(1.0f));
  return _mm512_or_ps(r, _mm512_and_ps(x, sign));
}

// Note [Fast float erf]
// Note [Table-driven float functions] over 21 intervals up to 4; 1 from 4 on
// (erf rounds to 1 from 3.92 on); the sign goes back last. Within 2 ulp of
// erf (kernels test Pointwise.FastFloatErfWithinTwoUlps); it replaces, on
// AVX-512, the rational approximation in double (erf_block), which needs a
// divide and double-width lanes (timings: docs/bench_kernels.md).
[[gnu::always_inline]] inline __m512 erf_avx512(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 a = _mm512_andnot_ps(sign, x);
  __m512 r = table_polynomial<detail::kErfTable, detail::kErfTableLast>(a);
  r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(4.0f), _CMP_GE_OQ), r, _mm512_set1_ps(1.0f));
  return _mm512_or_ps(r, _mm512_and_ps(x, sign));
}

}  // namespace mlu::kernels::table_math

#endif  // __AVX512F__
