// Conversions between float and the two 16-bit float types (Half, BFloat16)
// for one ISA, included only by the per-ISA pointwise engine
// (pointwise_isa.cpp). Two shapes:
//  - Lanes<H>: one float vector's worth of elements (W), for the register path
//    of Note [Register-converted 16-bit floats] (AVX2 and AVX-512 only);
//  - block conversions of n elements on Lanes (the block pipeline's converting
//    loads and stores); each returns false, doing nothing, where this ISA has
//    no Lanes, and the caller takes its scalar loop.
// Every conversion equals the scalar one of half.h (to_float, half_from_float,
// bfloat16_from_float: exact widening, round to nearest even, NaN quieted
// as half.h says) bit for bit.
#pragma once

#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "mlu_kernels/half.h"

namespace mlu::kernels::MLU_ISA_NS {

// Lanes<H>::widen(dst, src) / narrow(dst, src): W elements of H <-> float,
// defined where the ISA has vector conversions (kHasLanes).
template <class H>
struct Lanes;
#if defined(__AVX2__)
constexpr bool kHasLanes = true;
#else
constexpr bool kHasLanes = false;
#endif

#if defined(__AVX512F__)
template <>
struct Lanes<BFloat16> {
  static constexpr int W = 16;
  static void widen(float* dst, const BFloat16* src) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    _mm512_storeu_si512(dst, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
#if defined(__AVX512BF16__)
  // Note [AVX512-BF16 narrowing]
  // vcvtneps2bf16 rounds to nearest even like bfloat16_from_float, but treats
  // denormal inputs as zero and keeps a NaN's sign and payload (the scalar
  // conversion returns 0x7FC0). One vfpclassps finds both kinds of lane
  // (rare); they are redone with bfloat16_from_float. The integer rounding
  // below was the bottleneck of bfloat16 element-wise ops, which one
  // instruction per 16 lanes removes (timings: docs/bench_kernels.md).
  static void narrow(BFloat16* dst, const float* src) {
    const __m512 v = _mm512_loadu_ps(src);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
    constexpr int kQuietNan = 0x01, kDenormal = 0x20, kSignallingNan = 0x80;
    const __mmask16 redo = _mm512_fpclass_ps_mask(v, kQuietNan | kDenormal | kSignallingNan);
    if (redo != 0) [[unlikely]] redo_lanes(dst, v, redo);
  }
  // Out of line, taking the vector by value: the hot loop keeps its floats
  // in registers instead of storing them for this rare path.
  [[gnu::noinline, gnu::cold]] static void redo_lanes(BFloat16* dst, __m512 v, __mmask16 redo) {
    alignas(64) float lanes[W];
    _mm512_store_ps(lanes, v);
    for (int k = 0; k < W; ++k) {
      if ((redo >> k) & 1) dst[k] = bfloat16_from_float(lanes[k]);
    }
  }
#else
  // bfloat16_from_float on 16 lanes: add the rounding bias, keep the top half,
  // NaN -> 0x7FC0.
  static void narrow(BFloat16* dst, const float* src) {
    const __m512 v = _mm512_loadu_ps(src);
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))), 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0x7FC0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtepi32_epi16(r));
  }
#endif
};
template <>
struct Lanes<Half> {
  static constexpr int W = 16;
  static void widen(float* dst, const Half* src) {
    _mm512_storeu_ps(dst, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))));
  }
  static void narrow(Half* dst, const float* src) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), h);
  }
};
#elif defined(__AVX2__)
template <>
struct Lanes<BFloat16> {
  static constexpr int W = 8;
  static void widen(float* dst, const BFloat16* src) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  // As the AVX-512 one; AVX2 has no 32 -> 16 bit truncation, so the 8 results
  // (each <= 0xFFFF) are packed per 128-bit half and the halves joined.
  static void narrow(BFloat16* dst, const float* src) {
    const __m256 v = _mm256_loadu_ps(src);
    const __m256i u = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0b1000);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(packed));
  }
};
template <>
struct Lanes<Half> {
  static constexpr int W = 8;
  static void widen(float* dst, const Half* src) {
    _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
  }
  static void narrow(Half* dst, const float* src) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), h);
  }
};
#endif

// Block conversions on Lanes, W at a time, the tail scalar; false, doing
// nothing, where this ISA has no Lanes.
template <class H>
bool widen_block(float* dst, const H* src, int64_t n) {
  if constexpr (kHasLanes) {
    int64_t i = 0;
    for (; i + Lanes<H>::W <= n; i += Lanes<H>::W) Lanes<H>::widen(dst + i, src + i);
    for (; i < n; ++i) dst[i] = to_float(src[i]);
    return true;
  } else {
    return false;
  }
}

template <class H>
bool narrow_block(H* dst, const float* src, int64_t n) {
  if constexpr (kHasLanes) {
    int64_t i = 0;
    for (; i + Lanes<H>::W <= n; i += Lanes<H>::W) Lanes<H>::narrow(dst + i, src + i);
    for (; i < n; ++i) {
      if constexpr (std::is_same_v<H, Half>) {
        dst[i] = half_from_float(src[i]);
      } else {
        dst[i] = bfloat16_from_float(src[i]);
      }
    }
    return true;
  } else {
    return false;
  }
}

}  // namespace mlu::kernels::MLU_ISA_NS
