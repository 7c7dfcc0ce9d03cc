// The weight-only products on BFloat16 rows of A through AMX tiles: an ISA
// file of the avx512 variant compiled with -mamx-tile -mamx-bf16 as well
// (as ../gemm/gemm_amx.cpp), entered only where amx_usable().
//
// Note [Weight-only products on AMX]
// With a few rows of A the float bodies (Note [Decode-size weight-only
// products]) spend m multiply-adds per weight on the FMA units; TDPBF16PS
// takes 16 x 32 x 16 of them per instruction (Note [AMX tiles] in
// ../gemm/gemm_amx.h), so on AMX the cost is widening the weights to
// BFloat16 (exact: int8, and int4's q - 8) and the product is nearly free
// for any m up to 16. Products of BFloat16 are exact in float and summed in
// float, as in the float bodies (the same sums in another order).
// - int4: W's block is the B tile. A B tile row holds 16 columns' pairs of
//   consecutive p; the bytes of rows p and p + 1 of a block, zero-extended
//   to 32 bits and the second shifted up 16, hold both rows' nibbles of a
//   column in one lane, and VPERMW over a table of the BFloat16 values
//   (i & 15) - 8 (it reads a word's low 5 bits) makes that row from the low
//   nibbles, and from the high ones, shifted down 4, the row of the columns
//   block_n / 2 further. A's rows are the A tile, read in place. Per group
//   the tiles' sums go to C with the scales, and the zeros times the
//   group's sums of A, as in the float body.
// - int8: C^T = W A^T: 16 rows of W, widened to BFloat16, are an A tile
//   (a tile row is 32 consecutive p of one row of W, as W lies), and A^T is
//   one B tile per 32 p, packed once per call by the caller.
#include "../common/intrinsics.h"

#include <algorithm>
#include <cstring>

#include "../common/amx_tiles.h"
#include "quantized_gemm_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

using detail::TileConfig;

// The BFloat16 values (i & 15) - 8 for i < 32, VPERMW's table.
__m512i nibble_table() {
  alignas(64) uint16_t table[32];
  for (int i = 0; i < 32; ++i) {
    const float v = static_cast<float>((i & 15) - 8);
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    table[i] = static_cast<uint16_t>(bits >> 16);  // exact: small integers
  }
  return _mm512_load_si512(table);
}

// ---- int4 ----

// Tiles: 0..3 C (m rows x 16 floats, one per 16 columns of the block), 4 A
// (m rows x 32 BFloat16), 5 and 6 B (16 pair rows x 16 columns).
template <int B>
void int4_block(const uint16_t* a, int64_t lda, int64_t m, const uint8_t* block, int64_t k, int64_t group_size,
                const float* sz, int64_t sz_ld, const float* a_sum, float* c, int64_t ldc) {
  constexpr int H = B / 32;  // 16-byte column groups per row of the block
  constexpr int V = B / 16;  // C tiles
  constexpr int64_t row_bytes = B / 2;
  TileConfig config;
  for (int t = 0; t < V; ++t) config.set(t, static_cast<int>(m), 64);
  config.set(4, static_cast<int>(m), 64);
  config.set(5, 16, 64);
  config.set(6, 16, 64);
  _tile_loadconfig(&config);
  // Two sets of B rows, alternate chunks: a chunk's rows are written while
  // the tiles still read the last chunk's.
  alignas(64) uint16_t b_sets[2][H][2][16 * 32];
  int set = 0;
  alignas(64) float sums[16 * B];
  // The block's C, written to c at the end: C's rows are far apart (n floats;
  // at n = 4096 all rows of a column fall in one L1 set).
  alignas(64) float out_rows[16 * B] = {};
  const __m512i table = nibble_table();
  const __m512i idx_even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i idx_odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t groups = k / group_size;
  for (int64_t g = 0; g < groups; ++g) {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (V == 4) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (int64_t p0 = g * group_size; p0 < (g + 1) * group_size; p0 += 32, set ^= 1) {
      auto& b_rows = b_sets[set];
      const uint8_t* bytes = block + p0 * row_bytes;
      for (int pair = 0; pair < 16; ++pair, bytes += 2 * row_bytes) {
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
          const __m512i first = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * h)));
          const __m512i second =
              _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + row_bytes + 16 * h)));
          const __m512i both = _mm512_or_si512(first, _mm512_slli_epi32(second, 16));
          _mm512_store_si512(b_rows[h][0] + pair * 32, _mm512_permutexvar_epi16(both, table));
          _mm512_store_si512(b_rows[h][1] + pair * 32, _mm512_permutexvar_epi16(_mm512_srli_epi16(both, 4), table));
        }
      }
      _tile_loadd(4, a + p0, lda * 2);
      _tile_loadd(5, b_rows[0][0], 64);
      _tile_loadd(6, b_rows[0][1], 64);
      _tile_dpbf16ps(0, 4, 5);
      if constexpr (H == 2) {
        _tile_dpbf16ps(2, 4, 6);
      } else {
        _tile_dpbf16ps(1, 4, 6);
      }
      if constexpr (H == 2) {
        _tile_loadd(5, b_rows[1][0], 64);
        _tile_loadd(6, b_rows[1][1], 64);
        _tile_dpbf16ps(1, 4, 5);
        _tile_dpbf16ps(3, 4, 6);
      }
    }
    _tile_stored(0, sums, B * 4);
    _tile_stored(1, sums + 16, B * 4);
    if constexpr (V == 4) {
      _tile_stored(2, sums + 32, B * 4);
      _tile_stored(3, sums + 48, B * 4);
    }
    for (int v = 0; v < V; ++v) {
      const float* pairs = sz + g * sz_ld + v * 32;
      const __m512 lo = _mm512_loadu_ps(pairs), hi = _mm512_loadu_ps(pairs + 16);
      const __m512 scale = _mm512_permutex2var_ps(lo, idx_even, hi);
      const __m512 zero = _mm512_permutex2var_ps(lo, idx_odd, hi);
      for (int64_t r = 0; r < m; ++r) {
        float* out = out_rows + r * B + v * 16;
        const __m512 sum = _mm512_set1_ps(a_sum[r * groups + g]);
        const __m512 s = _mm512_load_ps(sums + r * B + v * 16);
        _mm512_store_ps(out, _mm512_fmadd_ps(zero, sum, _mm512_fmadd_ps(scale, s, _mm512_load_ps(out))));
      }
    }
  }
  _tile_release();
  for (int64_t r = 0; r < m; ++r) std::memcpy(c + r * ldc, out_rows + r * B, B * sizeof(float));
}

void int4_weight_block(const uint16_t* a, int64_t lda, int64_t m, const uint8_t* block, int64_t block_n, int64_t k,
                       int64_t group_size, const float* sz, int64_t sz_ld, const float* a_sum, float* c, int64_t ldc) {
  if (block_n == 64) {
    int4_block<64>(a, lda, m, block, k, group_size, sz, sz_ld, a_sum, c, ldc);
  } else {
    int4_block<32>(a, lda, m, block, k, group_size, sz, sz_ld, a_sum, c, ldc);
  }
}

// ---- int8 ----

// 32 int8 weights as BFloat16, in order.
[[gnu::always_inline]] inline __m512i int8_to_bf16(const int8_t* p) {
  const __m512 low = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  const __m512 high =
      _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16))));
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low));
}

// Tiles: 0..3 C^T (16 rows of W x m floats), 4 and 6 W (16 rows x 32
// BFloat16, alternating), 5 A^T (16 pair rows x m).
void int8_weight(const uint16_t* a_pairs, int64_t m, const int8_t* w, int64_t n, int64_t k, const float* scales,
                 float* c, int64_t ldc) {
  TileConfig config;
  for (int t = 0; t < 4; ++t) config.set(t, 16, static_cast<int>(m * 4));
  config.set(4, 16, 64);
  config.set(6, 16, 64);
  config.set(5, 16, static_cast<int>(m * 4));
  _tile_loadconfig(&config);
  alignas(64) uint16_t w_rows[2][16 * 32];
  alignas(64) float sums[16 * 16];
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const int tiles = static_cast<int>(std::min<int64_t>(4, (n - j0) / 16));
    for (int t = 0; t < tiles; ++t) {
      switch (t) {
        case 0:
          _tile_zero(0);
          break;
        case 1:
          _tile_zero(1);
          break;
        case 2:
          _tile_zero(2);
          break;
        default:
          _tile_zero(3);
          break;
      }
    }
    for (int64_t p0 = 0; p0 < k; p0 += 32) {
      _tile_loadd(5, a_pairs + (p0 / 32) * 32 * m, m * 4);
      for (int t = 0; t < tiles; ++t) {
        uint16_t* rows = w_rows[t & 1];
        const int8_t* src = w + (j0 + 16 * t) * k + p0;
        for (int r = 0; r < 16; ++r) _mm512_store_si512(rows + r * 32, int8_to_bf16(src + r * k));
        // Tile numbers are immediates: one arm per C tile and W buffer.
        switch (t) {
          case 0:
            _tile_loadd(4, rows, 64);
            _tile_dpbf16ps(0, 4, 5);
            break;
          case 1:
            _tile_loadd(6, rows, 64);
            _tile_dpbf16ps(1, 6, 5);
            break;
          case 2:
            _tile_loadd(4, rows, 64);
            _tile_dpbf16ps(2, 4, 5);
            break;
          default:
            _tile_loadd(6, rows, 64);
            _tile_dpbf16ps(3, 6, 5);
            break;
        }
      }
    }
    for (int t = 0; t < tiles; ++t) {
      switch (t) {
        case 0:
          _tile_stored(0, sums, 64);
          break;
        case 1:
          _tile_stored(1, sums, 64);
          break;
        case 2:
          _tile_stored(2, sums, 64);
          break;
        default:
          _tile_stored(3, sums, 64);
          break;
      }
      for (int r = 0; r < 16; ++r) {
        const int64_t j = j0 + 16 * t + r;
        for (int64_t i = 0; i < m; ++i) c[i * ldc + j] = sums[r * 16 + i] * scales[j];
      }
    }
  }
  _tile_release();
}

}  // namespace

const detail::QuantizedGemmAmxFns& quantized_gemm_amx_fns() {
  static const detail::QuantizedGemmAmxFns fns{int8_weight, int4_weight_block};
  return fns;
}

}  // namespace mlu::kernels::MLU_ISA_NS
