// BFloat16 GEMM on Intel AMX tiles (gemm_amx.cpp, an ISA file of the avx512
// variant compiled with -mamx-tile -mamx-bf16 as well: nothing in it runs
// unless amx_usable(), mlu_kernels/isa.h).
//
// Note [AMX tiles]
// TDPBF16PS multiplies a 16 x 32 BFloat16 tile of A by a 32 x 16 tile of B
// (stored as 16 rows of 16 column pairs: "VNNI" order, two depth steps per
// column) into a 16 x 16 float tile: 8192 multiply-adds per instruction,
// several times the per-core rate of AVX-512 FMA (mlu_gemm_peak measures
// both; figures in docs/bench_gemm.md). The
// kernel keeps a 32 x 32 block of C in four tiles, with two A and two B
// tiles per 32-deep step. B is packed in that order; A is packed into
// 32-row panels unless it is row-major with whole panels (rows and depth
// multiples of 32), when its tiles load in place (a tile row is 64
// contiguous bytes of a matrix row). Products are exact in float and summed in float
// (the CPU's bf16 mm does the same on AMX through oneDNN); the caller rounds
// C once.
#pragma once

#include <cstdint>

#include "../common/isa_variants.h"
#include "mlu_kernels/half.h"

namespace mlu::kernels::detail {

// Rows and columns of C are processed in blocks of this many.
constexpr int64_t kAmxBlock = 32;

}  // namespace mlu::kernels::detail

// w = A B (w += A B with `accumulate`) for m x n, depth k >= 1: A(i, p) at
// a[i * a_rs + p * a_cs], B(p, j) at b[p * b_rs + j * b_cs], both BFloat16.
// w is float, row-major with row stride ldw, and padded: rows and columns up
// to the next multiple of kAmxBlock exist (the tiles load and store whole
// blocks; what lands in the padding is meaningless). `serial`: run on the
// calling thread only. Requires amx_usable() and active_isa() >= Isa::Avx512.
// Only the avx512 variant defines it (Note [Per-ISA variants]): gemm.cpp
// takes it with MLU_KERNELS_ISA_VARIANT_avx512.
MLU_KERNELS_DECLARE_ISA_VARIANTS(void gemm_amx_bf16_accumulate(int64_t m, int64_t n, int64_t k, const BFloat16* a,
                                                               int64_t a_rs, int64_t a_cs, const BFloat16* b,
                                                               int64_t b_rs, int64_t b_cs, float* w, int64_t ldw,
                                                               bool accumulate, bool serial))
