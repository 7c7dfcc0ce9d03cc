// BFloat16 GEMM on AVX512-BF16 dot products (gemm_dpbf16.cpp, compiled with
// -mavx512bf16: nothing in it runs unless active_isa() >= Isa::Avx512Bf16).
//
// Note [BFloat16 dot products]
// VDPBF16PS multiplies 16 pairs of BFloat16 by 16 pairs and adds both
// products into each of 16 float lanes: twice the multiply-adds of a float
// FMA per instruction, the rate the CPU's bfloat16 mm (oneDNN) gets on hosts
// with AVX512-BF16 but no AMX. Like it, the instruction treats denormal
// inputs and results as zero; products of BFloat16 are exact in float and
// the sums are float, C rounded once by the caller.
// Layout: depth goes in pairs (an odd depth's last pair padded with zero). B
// is packed into 32-column panels of [pairs][32 columns][2], A into 12-row
// panels of [pairs][12 rows][2]. The 12 x 32 micro-kernel takes per pair two
// B vectors and twelve 32-bit broadcasts of A pairs into 24 VDPBF16PS. The
// loop nest is gemm_amx.cpp's: per depth slice the A panels are packed once
// by all threads, threads take blocks of B columns (packed into their own
// L2), each A panel (in L1) sweeps the block's B panels.
#pragma once

#include <cstdint>

#include "../common/isa_variants.h"
#include "mlu_kernels/half.h"

// w = A B (w += A B with `accumulate`) for m x n, depth k >= 1: A(i, p) at
// a[i * a_rs + p * a_cs], B(p, j) at b[p * b_rs + j * b_cs], both BFloat16;
// w float, row-major with row stride ldw. `serial`: on the calling thread
// only. Requires active_isa() >= Isa::Avx512Bf16. Only the avx512bf16
// variant defines it (Note [Per-ISA variants]): gemm.cpp takes it with
// MLU_KERNELS_ISA_VARIANT_avx512bf16.
MLU_KERNELS_DECLARE_ISA_VARIANTS(void gemm_dpbf16_accumulate(int64_t m, int64_t n, int64_t k, const BFloat16* a,
                                                             int64_t a_rs, int64_t a_cs, const BFloat16* b,
                                                             int64_t b_rs, int64_t b_cs, float* w, int64_t ldw,
                                                             bool accumulate, bool serial))
