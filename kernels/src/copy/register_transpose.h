// Square transposes in vector registers, for the blocked transposing copy
// (Note [Blocked transposing copies], copy.cpp). Included by copy_isa.cpp
// only (Note [Per-ISA variants]): the AVX-512 ones exist in its avx512
// variant, the AVX2 ones in its avx2 variant, and the copy reaches them
// through the tables copy_isa.cpp fills (copy_table.h). The AVX-512 table
// keeps the avx2 variant's 16 x 16 two-byte transpose (measured faster there
// than the same intrinsics compiled for AVX-512).
//
// Each function reads the B rows s, s + ld_s, ..., s + (B-1) * ld_s of B
// elements and writes their transpose as the rows d, d + ld_d, ...: d[i *
// ld_d + j] = s[j * ld_s + i] for i, j < B. Rows are loaded and stored as
// whole unaligned vectors, so a block touches each of its cache lines once;
// the rows must not overlap between source and destination. Elements are
// moved as bits (no conversion, NaN payloads kept). The copy's tile loop
// (baseline code, copy.cpp) calls one per block of B * B elements.
#pragma once

#ifndef MLU_ISA_NS
#error "register_transpose.h is for the per-ISA copy file (copy_isa.cpp)"
#endif

#include "../common/intrinsics.h"

#include <cstdint>

namespace mlu::kernels::MLU_ISA_NS {

#if defined(__AVX512F__)

// 16 x 16 four-byte elements: 64 shuffles (unpack pairs of rows, then pairs
// of pairs, then 128-bit lanes twice).
inline void transpose_16x16_b32_avx512(uint32_t* d, int64_t ld_d, const uint32_t* s, int64_t ld_s) {
  __m512 r[16], t[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(s + k * ld_s);
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 16; k += 4) {
    r[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);
    r[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xEE);
    r[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44);
    r[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0x88);
    t[k + 4] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0xDD);
    t[k + 8] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0x88);
    t[k + 12] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0xDD);
  }
  for (int k = 0; k < 8; ++k) {
    _mm512_storeu_ps(d + k * ld_d, _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88));
    _mm512_storeu_ps(d + (k + 8) * ld_d, _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD));
  }
}

// 8 x 8 eight-byte elements: unpack pairs of rows, then 128-bit lanes twice.
inline void transpose_8x8_b64_avx512(uint64_t* d, int64_t ld_d, const uint64_t* s, int64_t ld_s) {
  __m512d r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm512_loadu_pd(s + k * ld_s);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm512_unpacklo_pd(r[k], r[k + 1]);  // even columns of rows k, k + 1
    t[k + 1] = _mm512_unpackhi_pd(r[k], r[k + 1]);
  }
  for (int odd = 0; odd < 2; ++odd) {
    const __m512d lo_02 = _mm512_shuffle_f64x2(t[odd], t[odd + 2], 0x88);
    const __m512d lo_46 = _mm512_shuffle_f64x2(t[odd + 4], t[odd + 6], 0x88);
    const __m512d hi_02 = _mm512_shuffle_f64x2(t[odd], t[odd + 2], 0xDD);
    const __m512d hi_46 = _mm512_shuffle_f64x2(t[odd + 4], t[odd + 6], 0xDD);
    _mm512_storeu_pd(d + (0 + odd) * ld_d, _mm512_shuffle_f64x2(lo_02, lo_46, 0x88));
    _mm512_storeu_pd(d + (4 + odd) * ld_d, _mm512_shuffle_f64x2(lo_02, lo_46, 0xDD));
    _mm512_storeu_pd(d + (2 + odd) * ld_d, _mm512_shuffle_f64x2(hi_02, hi_46, 0x88));
    _mm512_storeu_pd(d + (6 + odd) * ld_d, _mm512_shuffle_f64x2(hi_02, hi_46, 0xDD));
  }
}

#elif defined(__AVX2__)

// 8 x 8 four-byte elements.
inline void transpose_8x8_b32_avx2(uint32_t* d, int64_t ld_d, const uint32_t* s, int64_t ld_s) {
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + k * ld_s));
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(reinterpret_cast<float*>(d + k * ld_d), _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(d + (k + 4) * ld_d), _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

// 4 x 4 eight-byte elements.
inline void transpose_4x4_b64_avx2(uint64_t* d, int64_t ld_d, const uint64_t* s, int64_t ld_s) {
  __m256d r[4];
  for (int k = 0; k < 4; ++k) r[k] = _mm256_loadu_pd(reinterpret_cast<const double*>(s + k * ld_s));
  const __m256d even_01 = _mm256_unpacklo_pd(r[0], r[1]), odd_01 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d even_23 = _mm256_unpacklo_pd(r[2], r[3]), odd_23 = _mm256_unpackhi_pd(r[2], r[3]);
  auto* out = reinterpret_cast<double*>(d);
  _mm256_storeu_pd(out, _mm256_permute2f128_pd(even_01, even_23, 0x20));
  _mm256_storeu_pd(out + ld_d, _mm256_permute2f128_pd(odd_01, odd_23, 0x20));
  _mm256_storeu_pd(out + 2 * ld_d, _mm256_permute2f128_pd(even_01, even_23, 0x31));
  _mm256_storeu_pd(out + 3 * ld_d, _mm256_permute2f128_pd(odd_01, odd_23, 0x31));
}

// 16 x 16 two-byte elements: unpacks of 16, 32 and 64 bits, then 128-bit
// lanes. Within each half of eight, vector k then holds column bitrev3(k).
inline void transpose_16x16_b16_avx2(uint16_t* d, int64_t ld_d, const uint16_t* s, int64_t ld_s) {
  __m256i r[16], t[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + k * ld_s));
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm256_unpacklo_epi16(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_epi16(r[k], r[k + 1]);
  }
  for (int k = 0; k < 16; k += 4) {
    for (int j = 0; j < 2; ++j) {
      r[k + j] = _mm256_unpacklo_epi32(t[k + j], t[k + j + 2]);
      r[k + j + 2] = _mm256_unpackhi_epi32(t[k + j], t[k + j + 2]);
    }
  }
  for (int k = 0; k < 16; k += 8) {
    for (int j = 0; j < 4; ++j) {
      t[k + j] = _mm256_unpacklo_epi64(r[k + j], r[k + j + 4]);
      t[k + j + 4] = _mm256_unpackhi_epi64(r[k + j], r[k + j + 4]);
    }
  }
  constexpr int kBitReversed3[8] = {0, 4, 2, 6, 1, 5, 3, 7};
  for (int k = 0; k < 8; ++k) {
    const int column = kBitReversed3[k];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + column * ld_d), _mm256_permute2x128_si256(t[k], t[k + 8], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + (column + 8) * ld_d),
                        _mm256_permute2x128_si256(t[k], t[k + 8], 0x31));
  }
}

#endif  // __AVX512F__, __AVX2__

}  // namespace mlu::kernels::MLU_ISA_NS
