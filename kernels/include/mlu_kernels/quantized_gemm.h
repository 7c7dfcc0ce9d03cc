// Products with quantized operands, the matrix products of LLM inference:
// weight-only int8 and int4 (an activation A of m x k in Float32, Float16 or
// BFloat16 times a quantized weight W of n x k, giving C = A W^T of m x n in
// A's dtype), and int8 x int8 -> int32.
//
// Weight-only products compute in float: the weight's dequantised values
// times A's elements, summed in float, C rounded once to its dtype. The
// dequantisation is PyTorch's (the CPU kernels of _weight_int8pack_mm and
// _weight_int4pack_mm_for_cpu): int8 W(j, p) * scale[j], the scale applied to
// the finished sum; int4 (q - 8) * scale + zero with q the 4-bit value in
// 0..15 and (scale, zero) those of q's group of group_size consecutive p.
// The sum's order differs from the CPU's, so results agree within float
// rounding, not bit for bit (Note [Weight-only sums] in
// src/quantized_gemm/quantized_gemm.cpp).
//
// int4 weights are packed two to a byte, n x k/2 bytes, in one of the
// layouts PyTorch's CPU kernels use (its _convert_weight_to_int4pack_for_cpu
// packs for the CPU's vector width; the plugin picks the host CPU's, so a
// packed tensor moves between the CPU and mlu unchanged). Columns j of W
// come in blocks of `block_n` (the last one shorter); block b holds, for
// each p in order, its columns' nibbles of row p in `block_width / 2`
// bytes. In Int4Layout::Pairs byte d holds column 2d (low nibble) and
// 2d + 1 (high); in Halves32 and Halves64, a full block's byte d holds
// column d (low) and d + block_n / 2 (high), and a shorter last block is in
// Pairs.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

enum class Int4Layout : uint8_t {
  Pairs,     // PyTorch's CPU without vector ISA: blocks of 32 columns, pairs
  Halves32,  // its AVX2 kernels: blocks of 32, halves
  Halves64,  // its AVX-512 kernels: blocks of 64, halves
};

// Columns per block of `layout` (32 or 64).
int64_t int4_block_n(Int4Layout layout);

// int8 weight-only: C(i, j) = (sum_p A(i, p) W(j, p)) * scales[j].
struct Int8WeightGemmArgs {
  ScalarType dtype;  // of A, scales and C: Float32, Float16 or BFloat16
  int64_t m, n, k;
  const void* a;
  int64_t lda;         // A(i, p) at a[i * lda + p]
  const int8_t* w;     // W(j, p) at w[j * k + p]
  const void* scales;  // n of `dtype`
  void* c;
  int64_t ldc;  // C(i, j) at c[i * ldc + j]
};
void int8_weight_gemm(const Int8WeightGemmArgs& args);
void int8_weight_gemm_ref(const Int8WeightGemmArgs& args);

// int4 weight-only: C(i, j) = sum_p A(i, p) ((q(j, p) - 8) s(g, j) + z(g, j))
// with g = p / group_size, (s, z) at scale_zeros[(g * n + j) * 2 + {0, 1}]
// in `dtype`. group_size divides k; k is even.
struct Int4WeightGemmArgs {
  ScalarType dtype;  // of A, scale_zeros and C: Float32, Float16 or BFloat16
  int64_t m, n, k;
  const void* a;
  int64_t lda;
  const uint8_t* w;  // packed in `layout`, n * k / 2 bytes
  Int4Layout layout;
  int64_t group_size;
  const void* scale_zeros;
  void* c;
  int64_t ldc;
};
void int4_weight_gemm(const Int4WeightGemmArgs& args);
void int4_weight_gemm_ref(const Int4WeightGemmArgs& args);

// Packs n x k values 0..15 (int32, row-major; only the low 4 bits are
// read) into `layout`: n * k / 2 bytes. k is even.
void int4_pack(const int32_t* values, int64_t n, int64_t k, Int4Layout layout, uint8_t* packed);
// The inverse: the n x k values of a packed weight.
void int4_unpack(const uint8_t* packed, int64_t n, int64_t k, Int4Layout layout, int32_t* values);

// The tinygemm layout of CUDA's _convert_weight_to_int4pack (int4mm.cu's
// matrix_to_m16n8k16_Bint4_layout): from n x k/2 bytes holding even p in
// the high nibble to int32 [n/8][k/(inner_k_tiles*16)][32][inner_k_tiles/2],
// the B fragments of the tensor cores' m16n8k16 product (Note [The tinygemm
// layout] in src/quantized_gemm/tinygemm_layout.cpp). n is a multiple of 8,
// k of inner_k_tiles * 16, inner_k_tiles 2, 4 or 8.
void int4_pack_tinygemm(const uint8_t* bytes, int64_t n, int64_t k, int64_t inner_k_tiles, int32_t* packed);
// The n x k values 0..15 of a tinygemm-packed weight.
void int4_unpack_tinygemm(const int32_t* packed, int64_t n, int64_t k, int64_t inner_k_tiles, int32_t* values);

// C(i, j) = sum_p A(i, p) B(p, j) in int32 (wrapping), A Int8 or UInt8, B
// Int8, with element strides as in gemm.h's MatrixView.
struct Int8GemmArgs {
  ScalarType a_dtype;  // Int8 or UInt8
  int64_t m, n, k;
  const void* a;
  int64_t a_rs, a_cs;
  const int8_t* b;
  int64_t b_rs, b_cs;
  int32_t* c;
  int64_t ldc;
};
void int8_gemm(const Int8GemmArgs& args);
void int8_gemm_ref(const Int8GemmArgs& args);

// PyTorch's _dyn_quant_matmul_4bit without KleidiAI (its reference kernels,
// which this reproduces bit for bit): each row of A (Float32 or BFloat16, m
// x k contiguous) quantised to int8 with its own scale and zero point, times
// W's 4-bit values (n x k/2 bytes, row j's byte p/2 holding p's nibble, the
// low one for even p; the value is nibble - 8), summed in int32 per block of
// block_size, scaled by scales[j * (k / block_size) + block], plus bias[j]
// where bias is not null (Float32 values). C is m x n contiguous in A's dtype.
// BFloat16 takes block_size == k only.
struct DynQuantInt4GemmArgs {
  ScalarType dtype;  // Float32 or BFloat16
  int64_t m, n, k, block_size;
  const void* a;
  const uint8_t* w;
  const float* scales;
  const float* bias;
  void* c;
};
void dyn_quant_int4_gemm(const DynQuantInt4GemmArgs& args);

}  // namespace mlu::kernels
