// The per-ISA bodies of the weight-only products at decode sizes
// (quantized_gemm_isa.cpp): A and C in float, a few rows of A against a
// slice of W. quantized_gemm.cpp converts A and C, prepares the scales and
// splits W's columns over the compute threads.
#pragma once

#include "../common/isa_variants.h"
#include <cstdint>

namespace mlu::kernels::detail {

struct QuantizedGemmFns {
  // C(i, j) = (sum_p A(i, p) W(j, p)) * scales[j] for i < m, j < n: A float
  // (rows lda apart), W int8 rows of k, C float (rows ldc apart).
  void (*int8_weight)(const float* a, int64_t lda, int64_t m, const int8_t* w, int64_t n, int64_t k,
                      const float* scales, float* c, int64_t ldc);
  // One full block of block_n (32 or 64) columns of a Halves layout
  // (quantized_gemm.h): C(i, j) = sum_g s(g, j) S(i, g, j) + z(g, j) a_sum[i][g]
  // with S(i, g, j) = sum of A(i, p) (q(j, p) - 8) over group g's p; (s, z)
  // of group g and the block's column j at sz[g * sz_ld + 2 j + {0, 1}] as
  // floats, a_sum [m][groups], groups = k / group_size.
  void (*int4_weight_block)(const float* a, int64_t lda, int64_t m, const uint8_t* block, int64_t block_n, int64_t k,
                            int64_t group_size, const float* sz, int64_t sz_ld, const float* a_sum, float* c,
                            int64_t ldc);
};

// The same products on BFloat16 rows of A through AMX tiles
// (quantized_gemm_amx.cpp, Note [Weight-only products on AMX]), m <= 16, C
// float, k a multiple of 32.
struct QuantizedGemmAmxFns {
  // Columns [0, n) of the int8 product, n a multiple of 16; A^T packed as
  // [k / 32][16 pairs of p][m][2] BFloat16 (the B tiles).
  void (*int8_weight)(const uint16_t* a_pairs, int64_t m, const int8_t* w, int64_t n, int64_t k, const float* scales,
                      float* c, int64_t ldc);
  // As QuantizedGemmFns::int4_weight_block, A's raw BFloat16 rows lda apart.
  void (*int4_weight_block)(const uint16_t* a, int64_t lda, int64_t m, const uint8_t* block, int64_t block_n, int64_t k,
                            int64_t group_size, const float* sz, int64_t sz_ld, const float* a_sum, float* c,
                            int64_t ldc);
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::QuantizedGemmFns& quantized_gemm_fns())
// Only the avx512 variant defines it (Note [Per-ISA variants]); called where
// active_isa() >= Isa::Avx512 and amx_usable().
MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::QuantizedGemmAmxFns& quantized_gemm_amx_fns())
