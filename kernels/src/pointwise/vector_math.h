// Vectorised bodies for the transcendental pointwise ops, on SLEEF (the
// vector math library PyTorch's own CPU kernels use, so results track CPU
// PyTorch to the last ulp or two). Included only by a per-ISA translation unit
// (pointwise_isa.cpp), which is compiled with that ISA's flags; the SLEEF
// variant is picked from the compiler's ISA macros.
//
// A body works on one block of contiguous compute-type values (at most
// kBlock, so temporaries live on the stack). Every element, the tail
// included, goes through the same vector function: the tail is padded into a
// full vector, so results never depend on where a block or chunk ends.
#pragma once

#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <sleef.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>

#include "mlu_kernels/table_math_avx512.h"
#include "ops.h"

namespace mlu::kernels::MLU_ISA_NS {

constexpr int64_t kBlock = 256;

#if defined(__AVX512F__)
#define MLU_SLEEF_F(fn, acc) Sleef_##fn##f16_##acc##avx512f
#define MLU_SLEEF_D(fn, acc) Sleef_##fn##d8_##acc##avx512f
template <class T> struct Vec;
template <> struct Vec<float> {
  using V = __m512;
  static constexpr int W = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
};
template <> struct Vec<double> {
  using V = __m512d;
  static constexpr int W = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
};
#elif defined(__AVX2__)
#define MLU_SLEEF_F(fn, acc) Sleef_##fn##f8_##acc##avx2
#define MLU_SLEEF_D(fn, acc) Sleef_##fn##d4_##acc##avx2
template <class T> struct Vec;
template <> struct Vec<float> {
  using V = __m256;
  static constexpr int W = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
};
template <> struct Vec<double> {
  using V = __m256d;
  static constexpr int W = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
};
#else
#define MLU_SLEEF_F(fn, acc) Sleef_##fn##f4_##acc##sse2
#define MLU_SLEEF_D(fn, acc) Sleef_##fn##d2_##acc##sse2
template <class T> struct Vec;
template <> struct Vec<float> {
  using V = __m128;
  static constexpr int W = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
};
template <> struct Vec<double> {
  using V = __m128d;
  static constexpr int W = 2;
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
};
#endif

// Sleef<T>::name: the vector function of this ISA for element type T.
template <class T> struct Sleef;
#define MLU_SLEEF_FUNCS(X)                                                      \
  X(exp, u10) X(exp2, u10) X(expm1, u10) X(log, u10) X(log2, u10) X(log10, u10) \
  X(log1p, u10) X(sin, u10) X(cos, u10) X(tan, u10) X(asin, u10) X(acos, u10)   \
  X(atan, u10) X(sinh, u10) X(cosh, u10) X(tanh, u10) X(asinh, u10)             \
  X(acosh, u10) X(atanh, u10) X(erf, u10) X(erfc, u15) X(lgamma, u10)
#define MLU_SLEEF_F_MEMBER(fn, acc) static constexpr auto fn = &MLU_SLEEF_F(fn, acc);
#define MLU_SLEEF_D_MEMBER(fn, acc) static constexpr auto fn = &MLU_SLEEF_D(fn, acc);
template <> struct Sleef<float> {
  MLU_SLEEF_FUNCS(MLU_SLEEF_F_MEMBER)
  static constexpr auto pow = &MLU_SLEEF_F(pow, u10);
  static constexpr auto atan2 = &MLU_SLEEF_F(atan2, u10);
  static constexpr auto fmod = &MLU_SLEEF_F(fmod, );
  static constexpr auto tanh_u35 = &MLU_SLEEF_F(tanh, u35);
  // ATen's Vectorized<float>::sin / cos take SLEEF's 3.5-ulp variants.
  static constexpr auto sin_aten = &MLU_SLEEF_F(sin, u35);
  static constexpr auto cos_aten = &MLU_SLEEF_F(cos, u35);
};
template <> struct Sleef<double> {
  MLU_SLEEF_FUNCS(MLU_SLEEF_D_MEMBER)
  static constexpr auto pow = &MLU_SLEEF_D(pow, u10);
  static constexpr auto atan2 = &MLU_SLEEF_D(atan2, u10);
  static constexpr auto fmod = &MLU_SLEEF_D(fmod, );
  static constexpr auto tanh_u35 = &MLU_SLEEF_D(tanh, u35);
  // ATen's Vectorized<double>::sin / cos take the 1-ulp variants.
  static constexpr auto sin_aten = &MLU_SLEEF_D(sin, u10);
  static constexpr auto cos_aten = &MLU_SLEEF_D(cos, u10);
};
#undef MLU_SLEEF_F_MEMBER
#undef MLU_SLEEF_D_MEMBER

// Note [Fast float exp]
// CPU PyTorch's contiguous float exp goes through MKL, which outruns SLEEF's
// 1-ulp expf (timings: docs/bench_kernels.md). On AVX-512, float exp is
// computed here instead: k = round(x log2(e)), r = x - k ln(2) in two steps
// (Cody-Waite; exact enough for |k| <= 150), exp(r) by its degree-7 Taylor
// polynomial (truncation below 5e-9 for |r| <= ln(2)/2), and 2^k applied by
// vscalefps, which also gives the overflow to inf and the gradual underflow to
// denormals and 0 without branches. x is first clamped to [-104, 89], where
// exp is already 0 / inf, so inf - inf never reaches r; NaN passes the clamp.
// Within 2 ulp of exp (kernels test Pointwise.FastFloatExpWithinTwoUlps).
//
// Note [exp to zero]
// Below -104 (exp(x) < 2^-150: 0 once rounded; -inf from masked scores above
// all) the lanes compute exp(0) and are zeroed at the end, instead of being
// clamped to -104 and scaled by 2^-150. A result that underflows costs a
// microcode assist of ~100 cycles per instruction on Intel cores without
// flush-to-zero: masked attention rows, where most scores are -inf, spent
// 60% of their time there (BERT's 32-key rows: 2.8 ms against 1.3 ms
// unmasked). Results between -104 and -87.3 are denormals and keep the assist.
// AVX2 has its own form below; SSE and double keep SLEEF (Exp<T>::fn).
#if defined(__AVX512F__)
[[gnu::always_inline]] inline __m512 exp_avx512(__m512 x) {
  const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_LT_OQ);           // Note [exp to zero]
  x = _mm512_mask_mov_ps(_mm512_min_ps(_mm512_set1_ps(89.0f), x), zero, _mm512_setzero_ps());  // NaN: x
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(static_cast<__mmask16>(~zero), p, k);
}
#elif defined(__AVX2__)
// The same on AVX2, which has no vscalefps: 2^k is applied as two factors
// 2^(k/2) and 2^(k - k/2), each a normal float (k is in [-150, 128] after the
// clamp, so the halves are in [-75, 64]); the first product is exact, so the
// result rounds once, as vscalefps rounds it (to denormals, 0 and inf too).
[[gnu::always_inline]] inline __m256 exp_avx2(__m256 x) {
  const __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);  // Note [exp to zero]
  x = _mm256_andnot_ps(zero, _mm256_min_ps(_mm256_set1_ps(89.0f), x));        // NaN: x
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ki = _mm256_cvtps_epi32(k);  // NaN: p is NaN already
  const __m256i k1 = _mm256_srai_epi32(ki, 1);
  const auto power_of_two = [](__m256i e) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
  };
  return _mm256_andnot_ps(zero,
                          _mm256_mul_ps(_mm256_mul_ps(p, power_of_two(k1)), power_of_two(_mm256_sub_epi32(ki, k1))));
}
#endif

#if defined(__AVX512F__)
using table_math::erf_avx512;   // Note [Fast float erf]
using table_math::tanh_avx512;  // Note [Fast float tanh]
#endif

// Note [Fast float log]
// On AVX-512, float log as fdlibm's e_log.c arranges it: x = 2^k m with m in
// [0.75, 1.5) (vgetmantps; vgetexpps gives k, plus one where the mantissa was
// halved into range; both normalise denormals), f = m - 1, s = f / (2 + f),
// log(1 + f) = f - (f^2/2 - s (f^2/2 + R)) with R = z (2/3 + z (2/5 + z (2/7 +
// z 2/9))), z = s^2 (the atanh series; |s| <= 0.2, truncation below 1e-9),
// and log(x) = k ln(2) + log(1 + f), ln(2) split in two so k ln(2) stays
// exact. Zero gives -inf, negative numbers NaN (vgetmantps's sign control),
// inf inf. Within 2 ulp of log (kernels test Pointwise.FastFloatLogWithinTwoUlps),
// and cheaper than SLEEF's 1-ulp logf (timings: docs/bench_kernels.md).
#if defined(__AVX512F__)
[[gnu::always_inline]] inline __m512 log_avx512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  const __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_nan);
  __m512 k = _mm512_getexp_ps(x);
  k = _mm512_mask_add_ps(k, _mm512_cmp_ps_mask(m, one, _CMP_LT_OQ), k, one);
  const __m512 f = _mm512_sub_ps(m, one);
  const __m512 s = _mm512_div_ps(f, _mm512_add_ps(_mm512_set1_ps(2.0f), f));
  const __m512 z = _mm512_mul_ps(s, s);
  __m512 r = _mm512_set1_ps(2.0f / 9);
  r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(2.0f / 7));
  r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(2.0f / 5));
  r = _mm512_fmadd_ps(r, z, _mm512_set1_ps(2.0f / 3));
  r = _mm512_mul_ps(r, z);
  const __m512 hfsq = _mm512_mul_ps(_mm512_mul_ps(half, f), f);
  const __m512 log1pf = _mm512_sub_ps(f, _mm512_fnmadd_ps(s, _mm512_add_ps(hfsq, r), hfsq));
  const __m512 result = _mm512_fmadd_ps(k, _mm512_set1_ps(0.693145751953125f),
                                        _mm512_fmadd_ps(k, _mm512_set1_ps(1.428606765330187045e-06f), log1pf));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), result,
                              _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
}
#elif defined(__AVX2__)
// The same on AVX2, which has no vgetmantps / vgetexpps: denormals are scaled
// by 2^23 into the normal range (k less 23), m is the mantissa in [1, 2) from
// the bits, halved from 1.5 on (k plus one); zero, negative numbers, inf and
// NaN are blended in last.
[[gnu::always_inline]] inline __m256 log_avx2(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps();
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
  const __m256i bits = _mm256_castps_si256(_mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(0x1p23f)), tiny));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x3F800000)));
  __m256 k = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  k = _mm256_sub_ps(k, _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
  const __m256 upper = _mm256_cmp_ps(m, _mm256_set1_ps(1.5f), _CMP_GE_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, half), upper);
  k = _mm256_add_ps(k, _mm256_and_ps(upper, one));
  const __m256 f = _mm256_sub_ps(m, one);
  const __m256 s = _mm256_div_ps(f, _mm256_add_ps(_mm256_set1_ps(2.0f), f));
  const __m256 z = _mm256_mul_ps(s, s);
  __m256 r = _mm256_set1_ps(2.0f / 9);
  r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(2.0f / 7));
  r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(2.0f / 5));
  r = _mm256_fmadd_ps(r, z, _mm256_set1_ps(2.0f / 3));
  r = _mm256_mul_ps(r, z);
  const __m256 hfsq = _mm256_mul_ps(_mm256_mul_ps(half, f), f);
  const __m256 log1pf = _mm256_sub_ps(f, _mm256_fnmadd_ps(s, _mm256_add_ps(hfsq, r), hfsq));
  __m256 result = _mm256_fmadd_ps(k, _mm256_set1_ps(0.693145751953125f),
                                  _mm256_fmadd_ps(k, _mm256_set1_ps(1.428606765330187045e-06f), log1pf));
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  result =
      _mm256_blendv_ps(result, x, _mm256_or_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), _mm256_cmp_ps(x, inf, _CMP_EQ_OQ)));
  result = _mm256_blendv_ps(result, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()),
                            _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
  return _mm256_blendv_ps(result, _mm256_sub_ps(zero, inf), _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
}
#endif

// The vector exp for T (Note [Fast float exp]).
template <class T>
struct Exp {
  static constexpr auto fn = Sleef<T>::exp;
};
#if defined(__AVX512F__)
template <>
struct Exp<float> {
  static __m512 fn(__m512 x) { return exp_avx512(x); }
};
#elif defined(__AVX2__)
template <>
struct Exp<float> {
  static __m256 fn(__m256 x) { return exp_avx2(x); }
};
#endif

// The vector log for T (Note [Fast float log]).
template <class T>
struct Log {
  static constexpr auto fn = Sleef<T>::log;
};
#if defined(__AVX512F__)
template <>
struct Log<float> {
  static __m512 fn(__m512 x) { return log_avx512(x); }
};
#elif defined(__AVX2__)
template <>
struct Log<float> {
  static __m256 fn(__m256 x) { return log_avx2(x); }
};
#endif

// The vector tanh for T (Note [Fast float tanh]); `accurate`: the SLEEF
// variant used where the fast one is not (1 ulp, or 3.5 for torch.tanh).
template <class T, auto accurate>
struct Tanh {
  static constexpr auto fn = accurate;
};
#if defined(__AVX512F__)
template <auto accurate>
struct Tanh<float, accurate> {
  static __m512 fn(__m512 x) { return tanh_avx512(x); }
};
#endif

// out[i] = fn(in[i]) for i < n (out may equal in).
template <class T, auto Fn>
inline void map1(int64_t n, T* out, const T* in) {
  using VT = Vec<T>;
  int64_t i = 0;
  for (; i + VT::W <= n; i += VT::W) VT::store(out + i, Fn(VT::load(in + i)));
  if (i < n) {
    T pad[VT::W] = {};
    std::memcpy(pad, in + i, static_cast<size_t>(n - i) * sizeof(T));
    VT::store(pad, Fn(VT::load(pad)));
    std::memcpy(out + i, pad, static_cast<size_t>(n - i) * sizeof(T));
  }
}

template <class T, auto Fn>
inline void map2(int64_t n, T* out, const T* a, const T* b) {
  using VT = Vec<T>;
  int64_t i = 0;
  for (; i + VT::W <= n; i += VT::W) VT::store(out + i, Fn(VT::load(a + i), VT::load(b + i)));
  if (i < n) {
    T pa[VT::W] = {}, pb[VT::W] = {};
    std::memcpy(pa, a + i, static_cast<size_t>(n - i) * sizeof(T));
    std::memcpy(pb, b + i, static_cast<size_t>(n - i) * sizeof(T));
    VT::store(pa, Fn(VT::load(pa), VT::load(pb)));
    std::memcpy(out + i, pa, static_cast<size_t>(n - i) * sizeof(T));
  }
}

// erf. float on AVX-512: Note [Fast float erf]. Other float: a rational
// minimax approximation in odd/even powers on x
// clamped to [-4, 4] (beyond, erf rounds to +-1 in float; the coefficients
// are the ones Eigen's fast float erf uses), evaluated in double: at most 1.6
// ulp from the exact erf over [-5, 5] (2M points, measured against
// math.erf), and a vectorisable loop of multiplies, adds and one divide,
// much cheaper than SLEEF's 1-ulp erf (timings: docs/bench_kernels.md).
// double: SLEEF.
// Only torch.erf uses it: gelu and its backward compute erf as the CPU's
// gelu does (ops.h Note [ATen's float erf in gelu]).
template <class T>
inline void erf_block(int64_t n, T* out, const T* in) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    map1<float, erf_avx512>(n, out, in);
#else
    for (int64_t i = 0; i < n; ++i) {
      const double v = in[i];
      const double x = v < -4.0 ? -4.0 : (v > 4.0 ? 4.0 : v);  // NaN stays NaN
      const double x2 = x * x;
      double p = -2.72614225801306e-10;
      p = p * x2 + 2.77068142495902e-08;
      p = p * x2 + -2.10102402082508e-06;
      p = p * x2 + -5.69250639462346e-05;
      p = p * x2 + -7.34990630326855e-04;
      p = p * x2 + -2.95459980854025e-03;
      p = p * x2 + -1.60960333262415e-02;
      double q = -1.45660718464996e-05;
      q = q * x2 + -2.13374055278905e-04;
      q = q * x2 + -1.68282697438203e-03;
      q = q * x2 + -7.37332916720468e-03;
      q = q * x2 + -1.42647390514189e-02;
      out[i] = static_cast<float>(p * x / q);
    }
#endif
  } else {
    map1<T, Sleef<T>::erf>(n, out, in);
  }
}

// VectorBody<Op, T>::run(n, out, in, params), where one exists.
template <class Op, class T>
struct VectorBody {
  static constexpr bool kHas = false;
};

#define MLU_VECTOR_BODY(Op)                                                    \
  template <class T>                                                           \
    requires std::is_floating_point_v<T>                                       \
  struct VectorBody<ops::Op, T> {                                              \
    static constexpr bool kHas = true;                                         \
    static void run(int64_t n, T* __restrict o, const T* const* in,            \
                    [[maybe_unused]] const OpParams& p);                       \
  };                                                                           \
  template <class T>                                                           \
    requires std::is_floating_point_v<T>                                       \
  void VectorBody<ops::Op, T>::run(int64_t n, T* __restrict o, const T* const* in, \
                                   [[maybe_unused]] const OpParams& p)

#define MLU_SLEEF_UNARY(Op, fn) \
  MLU_VECTOR_BODY(Op) { map1<T, Sleef<T>::fn>(n, o, in[0]); }

MLU_VECTOR_BODY(Exp) { map1<T, Exp<T>::fn>(n, o, in[0]); }
MLU_SLEEF_UNARY(Exp2, exp2)
MLU_SLEEF_UNARY(Expm1, expm1)
MLU_VECTOR_BODY(Log) { map1<T, Log<T>::fn>(n, o, in[0]); }
MLU_SLEEF_UNARY(Log2, log2)
MLU_SLEEF_UNARY(Log10, log10)
MLU_SLEEF_UNARY(Log1p, log1p)
// torch.sin / torch.cos: the SLEEF variants ATen's own vectorised kernels
// use (float: 3.5 ulp, cheaper than the 1-ulp ones; double: 1 ulp).
MLU_SLEEF_UNARY(Sin, sin_aten)
MLU_SLEEF_UNARY(Cos, cos_aten)
MLU_SLEEF_UNARY(Tan, tan)
MLU_SLEEF_UNARY(Asin, asin)
MLU_SLEEF_UNARY(Acos, acos)
MLU_SLEEF_UNARY(Atan, atan)
MLU_SLEEF_UNARY(Sinh, sinh)
MLU_SLEEF_UNARY(Cosh, cosh)
// float tanh on AVX-512: Note [Fast float tanh] (<= 2 ulp). Elsewhere
// torch.tanh itself takes SLEEF's 3.5-ulp tanh, as ATen does (SLEEF's 1-ulp
// one costs several times as much; timings: docs/bench_kernels.md), and the
// composites (gelu tanh, mish) the 1-ulp one: 1 + tanh(x) near -1 would turn
// 3.5 ulp into a large relative error.
MLU_VECTOR_BODY(Tanh) { map1<T, Tanh<T, Sleef<T>::tanh_u35>::fn>(n, o, in[0]); }
// asinh and acosh stay on libm: SLEEF's overflow for |x| > ~1.8e19 (x * x),
// where the CPU (libm) still returns ~44.
MLU_SLEEF_UNARY(Atanh, atanh)
MLU_VECTOR_BODY(Erf) { erf_block(n, o, in[0]); }
MLU_SLEEF_UNARY(Erfc, erfc)
MLU_SLEEF_UNARY(Lgamma, lgamma)
#undef MLU_SLEEF_UNARY

MLU_VECTOR_BODY(Pow) { map2<T, Sleef<T>::pow>(n, o, in[0], in[1]); }
MLU_VECTOR_BODY(Atan2) { map2<T, Sleef<T>::atan2>(n, o, in[0], in[1]); }
// SLEEF's fmod is exact where it answers, but gives NaN when x / y is huge
// (e.g. 65504 / 6e-8), where libm still returns the exact remainder: those
// lanes (a NaN from finite x and nonzero y, rare) are redone with libm.
template <class T>
inline void fmod_block(int64_t n, T* out, const T* a, const T* b) {
  map2<T, Sleef<T>::fmod>(n, out, a, b);
  int nan = 0;  // an int OR-reduction: GCC vectorises it; the lane test below it does not
  for (int64_t i = 0; i < n; ++i) nan |= out[i] != out[i];
  if (!nan) return;
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] != out[i] && std::isfinite(a[i]) && b[i] == b[i] && b[i] != T(0)) out[i] = std::fmod(a[i], b[i]);
  }
}
// remainder moves fmod's result to the divisor's sign (ops.h Remainder).
MLU_VECTOR_BODY(Fmod) {
  T t[kBlock];  // `o` may alias an input
  fmod_block(n, t, in[0], in[1]);
  std::copy_n(t, n, o);
}
MLU_VECTOR_BODY(Remainder) {
  T t[kBlock];
  fmod_block(n, t, in[0], in[1]);
  for (int64_t i = 0; i < n; ++i) {
    const T mod = t[i], b = in[1][i];
    o[i] = mod != T(0) && ((b < T(0)) != (mod < T(0))) ? mod + b : mod;
  }
}
// The exponent is fixed for the block: branch once, outside the loops.
MLU_VECTOR_BODY(PowScalar) {
  const T e = ops::param<T>(p, 0);
  const T* a = in[0];
  // A 16-bit result's square is rounded to it, as the CPU rounds it; the
  // rounding is picked once here, so every loop stays branch-free and
  // vectorises (a test per element kept a ** 3 scalar: 0.22x the CPU).
  const auto with_rounding = [&](auto&& body) {
    if constexpr (std::is_same_v<T, float>) {
      if (p.i[0] == kStorageBFloat16) return body([](T v) { return to_float(bfloat16_from_float(v)); });
      if (p.i[0] == kStorageHalf) return body([](T v) { return to_float(half_from_float(v)); });
    }
    body([](T v) { return v; });
  };
  if (e == T(2)) {
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] * a[i];
  } else if (e == T(3)) {
    with_rounding([&](auto r) {
      for (int64_t i = 0; i < n; ++i) o[i] = r(a[i] * a[i]) * a[i];
    });
  } else if (e == T(0.5)) {
    for (int64_t i = 0; i < n; ++i) o[i] = std::sqrt(a[i]);
  } else if (e == T(-0.5)) {
    for (int64_t i = 0; i < n; ++i) o[i] = T(1) / std::sqrt(a[i]);
  } else if (e == T(-1)) {
    for (int64_t i = 0; i < n; ++i) o[i] = T(1) / a[i];
  } else if (e == T(-2)) {
    with_rounding([&](auto r) {
      for (int64_t i = 0; i < n; ++i) o[i] = T(1) / r(a[i] * a[i]);
    });
  } else {
    T exps[kBlock];
    std::fill_n(exps, n, e);
    map2<T, Sleef<T>::pow>(n, o, a, exps);
  }
}

// Note: the composite bodies below compute into a stack temporary first, so
// `o` may alias an input (in-place ops) without changing results.
MLU_VECTOR_BODY(Sigmoid) {
  T t[kBlock];
  for (int64_t i = 0; i < n; ++i) t[i] = -in[0][i];
  map1<T, Exp<T>::fn>(n, t, t);
  for (int64_t i = 0; i < n; ++i) o[i] = T(1) / (T(1) + t[i]);
}
MLU_VECTOR_BODY(Silu) {
  T t[kBlock];
  for (int64_t i = 0; i < n; ++i) t[i] = -in[0][i];
  map1<T, Exp<T>::fn>(n, t, t);
  for (int64_t i = 0; i < n; ++i) o[i] = in[0][i] / (T(1) + t[i]);
}
// exp(-(x * x)) for the erf of gelu: the argument is never positive, and
// the formula's own error (1.5e-7 absolute) dwarfs an ulp, so an inline
// Cody-Waite reduction and a degree-6 polynomial (<= 2.7 ulp on [-87, 0],
// measured against double exp; 0 below, where erf is +-1 in float anyway)
// replace SLEEF's 1-ulp exp, which cost as much as all the rest of gelu.
// NaN propagates through t in aten_float_erf, not through this.
inline float exp_of_minus_square(float x) {
  const float v0 = -(x * x);
  const float v = v0 >= -87.0f ? v0 : -87.0f;
  const float k = std::nearbyint(v * 1.44269504088896341f);
  float r = std::fma(k, -0.693145751953125f, v);
  r = std::fma(k, -1.428606765330187045e-06f, r);
  float p = 1.0f / 720;
  p = std::fma(p, r, 1.0f / 120);
  p = std::fma(p, r, 1.0f / 24);
  p = std::fma(p, r, 1.0f / 6);
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  const float scale = std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
  return v0 >= -87.0f ? p * scale : 0.0f;
}

// erf as gelu needs it (ops.h Note [ATen's float erf in gelu]): t = x on
// entry, erf(x) on exit.
template <class T>
inline void gelu_erf_block(int64_t n, T* t) {
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t i = 0; i < n; ++i) t[i] = ops::aten_float_erf(t[i], exp_of_minus_square(t[i]));
  } else {
    map1<T, Sleef<T>::erf>(n, t, t);
  }
}
// Gelu's forward on AVX-512 takes the table erf (Note [Fast float erf]): 1
// ulp instead of ATen's 1.5e-7, and no divide, so it is also faster
// (timings: docs/bench_kernels.md). It differs from the CPU by the CPU's
// approximation error; gelu_backward keeps ATen's formula.
// On AVX-512, float gelu is one pass in registers: the same operations in
// the same order as the three passes below, so the same bits, without
// storing and reloading the intermediate blocks (timings likewise).
#if defined(__AVX512F__)
[[gnu::always_inline]] inline __m512 gelu_avx512(__m512 x) {
  const __m512 t = erf_avx512(_mm512_mul_ps(x, _mm512_set1_ps(static_cast<float>(std::numbers::sqrt2 / 2))));
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), _mm512_add_ps(_mm512_set1_ps(1.0f), t));
}
#endif
MLU_VECTOR_BODY(Gelu) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    map1<float, gelu_avx512>(n, o, in[0]);
    return;
  }
#endif
  T t[kBlock];
  const T alpha = static_cast<T>(std::numbers::sqrt2 / 2);
  for (int64_t i = 0; i < n; ++i) t[i] = in[0][i] * alpha;
  gelu_erf_block(n, t);
  for (int64_t i = 0; i < n; ++i) o[i] = in[0][i] * T(0.5) * (T(1) + t[i]);
}
MLU_VECTOR_BODY(GeluTanh) {
  T t[kBlock];
  const T beta = static_cast<T>(std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5);
  for (int64_t i = 0; i < n; ++i) {
    const T x = in[0][i];
    t[i] = beta * (x + T(0.044715) * x * x * x);
  }
  map1<T, Tanh<T, Sleef<T>::tanh>::fn>(n, t, t);
  for (int64_t i = 0; i < n; ++i) o[i] = T(0.5) * in[0][i] * (T(1) + t[i]);
}
MLU_VECTOR_BODY(Mish) {
  T t[kBlock];
  map1<T, Exp<T>::fn>(n, t, in[0]);
  map1<T, Sleef<T>::log1p>(n, t, t);
  map1<T, Tanh<T, Sleef<T>::tanh>::fn>(n, t, t);
  for (int64_t i = 0; i < n; ++i) o[i] = in[0][i] * t[i];
}
MLU_VECTOR_BODY(Softplus) {
  T t[kBlock];
  const T beta = ops::param<T>(p, 0), threshold = ops::param<T>(p, 1);
  for (int64_t i = 0; i < n; ++i) t[i] = in[0][i] * beta;
  map1<T, Exp<T>::fn>(n, t, t);
  map1<T, Sleef<T>::log1p>(n, t, t);
  for (int64_t i = 0; i < n; ++i) {
    const T x = in[0][i];
    o[i] = x * beta > threshold ? x : t[i] / beta;
  }
}
MLU_VECTOR_BODY(Elu) {
  T t[kBlock];
  const T alpha = ops::param<T>(p, 0), scale = ops::param<T>(p, 1), input_scale = ops::param<T>(p, 2);
  for (int64_t i = 0; i < n; ++i) t[i] = std::min(in[0][i], T(0)) * input_scale;
  map1<T, Sleef<T>::expm1>(n, t, t);
  for (int64_t i = 0; i < n; ++i) {
    const T x = in[0][i];
    o[i] = x <= T(0) ? t[i] * alpha * scale : x * scale;
  }
}
MLU_VECTOR_BODY(SiluBackward) {
  T t[kBlock];
  for (int64_t i = 0; i < n; ++i) t[i] = -in[1][i];
  map1<T, Exp<T>::fn>(n, t, t);
  for (int64_t i = 0; i < n; ++i) {
    const T s = T(1) / (T(1) + t[i]);
    o[i] = in[0][i] * s * (T(1) + in[1][i] * (T(1) - s));
  }
}
MLU_VECTOR_BODY(GeluBackward) {
  T cdf[kBlock], pdf[kBlock];
  const T alpha = static_cast<T>(std::numbers::sqrt2 / 2);
  const T beta = static_cast<T>((2 / std::sqrt(std::numbers::pi)) * (std::numbers::sqrt2 / 2) * 0.5);
  for (int64_t i = 0; i < n; ++i) {
    const T x = in[1][i];
    cdf[i] = x * alpha;
    pdf[i] = x * x * T(-0.5);
  }
  gelu_erf_block(n, cdf);
  map1<T, Exp<T>::fn>(n, pdf, pdf);
  for (int64_t i = 0; i < n; ++i) {
    // The scalar functor's order of operations (ops.h GeluBackward).
    const T x = in[1][i];
    o[i] = in[0][i] * (T(0.5) * (T(1) + cdf[i]) + x * (beta * pdf[i]));
  }
}

// 1 + tanh(u) cancels for u below about -4: there an ulp of SLEEF against
// libm is a large relative error of the gradient, so those (rare) lanes take
// libm's tanh, as the scalar functor does.
MLU_VECTOR_BODY(GeluTanhBackward) {
  T t[kBlock], inner[kBlock];
  const T beta = static_cast<T>(std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5);
  const T kappa = T(0.044715);
  bool cancels = false;
  for (int64_t i = 0; i < n; ++i) {
    const T x = in[1][i];
    inner[i] = beta * (x + kappa * (x * x) * x);
    cancels |= inner[i] < T(-4);
  }
  map1<T, Tanh<T, Sleef<T>::tanh>::fn>(n, t, inner);
  if (cancels) {
    for (int64_t i = 0; i < n; ++i) {
      if (inner[i] < T(-4)) t[i] = std::tanh(inner[i]);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    // The scalar functor's order of operations (ops.h GeluTanhBackward).
    const T x = in[1][i], x_sq = x * x, tanh_inner = t[i];
    const T left = T(0.5) * x, right = T(1) + tanh_inner;
    const T right_derivative = left * (T(1) - tanh_inner * tanh_inner) * beta * (T(1) + T(3) * kappa * x_sq);
    o[i] = in[0][i] * (T(0.5) * right + right_derivative);
  }
}

#undef MLU_VECTOR_BODY

}  // namespace mlu::kernels::MLU_ISA_NS
