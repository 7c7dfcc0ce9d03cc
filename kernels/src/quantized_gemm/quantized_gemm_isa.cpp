// The weight-only products' bodies at decode sizes, compiled once per ISA
// (Note [Per-ISA variants]).
//
// Note [Decode-size weight-only products]
// With a few rows of A the product is a stream over W: every weight is read
// once and used for m multiply-adds, so the bodies turn weights into floats
// in registers, never through a buffer, and keep A's rows in cache.
// - int8: kRows rows of A against kCols rows of W in kRows x kCols vector
//   accumulators, lane l of one holding the sum over p = l (mod L); each
//   weight vector loaded and widened once serves kRows rows, each A vector
//   kCols. Past kRows rows of A, k is cut into chunks of kChunk so that all
//   rows' chunk stays in L1 while W's rows pass over it, kCols at a time.
// - int4: one block of W's columns (Int4Layout::Halves*) at a time, lanes
//   being columns: per p, L bytes give L columns from their low nibbles and
//   the L columns block_n / 2 further from their high ones, as q - 8 in
//   float, and each row of A adds A(i, p) times them. Per group the sums
//   wait in registers; at the group's end they go to C as s * sum, and the
//   zero as z * (the group's sum of A), so scale and zero cost nothing per p.
#include "../common/intrinsics.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "../common/native_lanes.h"
#include "quantized_gemm_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

using VF = Native<float>::V;
constexpr int L = Native<float>::kWidth;
using VI = VectorOf<int32_t, sizeof(VF)>::V;

// Accumulators a body may keep in registers (of 32 on AVX-512, 16 below).
constexpr int kAccumulators = L == 16 ? 16 : 12;

[[gnu::always_inline]] inline VF load(const float* p) {
  VF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store(float* p, VF v) { std::memcpy(p, &v, sizeof v); }
// x in every lane: a broadcast, where VF{} + x became an add and a broadcast.
template <size_t... I>
[[gnu::always_inline]] inline VF splat_lanes(float x, std::index_sequence<I...>) {
  return VF{(static_cast<void>(I), x)...};
}
[[gnu::always_inline]] inline VF splat(float x) { return splat_lanes(x, std::make_index_sequence<L>{}); }

// L int8 weights as floats. GCC lowers __builtin_convertvector from a
// 16-byte vector of int8 lane by lane through general registers (perf: the
// int8 body at 4 GB/s, its time in shifts and vpinsrd), hence the
// sign-extending loads.
[[gnu::always_inline]] inline VF widen_int8(const int8_t* p) {
#if defined(__AVX512F__)
  return reinterpret_cast<VF>(
      _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
#elif defined(__AVX2__)
  return reinterpret_cast<VF>(
      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))));
#else
  VF v;
  for (int l = 0; l < L; ++l) v[l] = static_cast<float>(p[l]);
  return v;
#endif
}

// L bytes, zero-extended to int32 lanes.
[[gnu::always_inline]] inline VI widen_uint8(const uint8_t* p) {
#if defined(__AVX512F__)
  return reinterpret_cast<VI>(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif defined(__AVX2__)
  return reinterpret_cast<VI>(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#else
  VI v;
  for (int l = 0; l < L; ++l) v[l] = p[l];
  return v;
#endif
}

// The weights q - 8 of the low (lo) and high nibbles of L bytes' lanes.
[[gnu::always_inline]] inline void nibbles(VI v, VF* lo, VF* hi) {
#if defined(__AVX512F__)
  // vpermps reads the index's low 4 bits: a table of q - 8 takes the low
  // nibble as it is and the high one after a shift, one instruction each.
  const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i bytes = reinterpret_cast<__m512i>(v);
  *lo = reinterpret_cast<VF>(_mm512_permutexvar_ps(bytes, table));
  *hi = reinterpret_cast<VF>(_mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table));
#else
  *lo = __builtin_convertvector((v & 15) - 8, VF);
  *hi = __builtin_convertvector((v >> 4) - 8, VF);
#endif
}

// ---- int8 ----

constexpr int kRows = 4;
constexpr int kCols = L == 16 ? 4 : 2;
constexpr int64_t kChunk = 512;

// c(r, q) += sum_{p < k} a(r, p) w(q, p) for r < R, q < C.
template <int R, int C>
void int8_tile(const float* a, int64_t lda, const int8_t* w, int64_t ldw, int64_t k, float* c, int64_t ldc) {
  VF acc[R][C] = {};
  int64_t p = 0;
  for (; p + L <= k; p += L) {
    VF wv[C];
#pragma GCC unroll 4
    for (int q = 0; q < C; ++q) wv[q] = widen_int8(w + q * ldw + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const VF av = load(a + r * lda + p);
#pragma GCC unroll 4
      for (int q = 0; q < C; ++q) acc[r][q] += av * wv[q];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < C; ++q) {
      float sum = fold_halves<float, sizeof(VF)>(acc[r][q], AddLanes{});
      for (int64_t t = p; t < k; ++t) sum += a[r * lda + t] * static_cast<float>(w[q * ldw + t]);
      c[r * ldc + q] += sum;
    }
  }
}

// Rows [0, m) of A, RT at a time, against W's rows [0, C) over p < k.
template <int C, int RT>
void int8_col_tile(const float* a, int64_t lda, int64_t m, const int8_t* w, int64_t ldw, int64_t k, float* c,
                   int64_t ldc) {
  for (int64_t i = 0; i < m; i += RT) {
    const float* ai = a + i * lda;
    float* ci = c + i * ldc;
    switch (std::min<int64_t>(RT, m - i)) {
      case 4:
        int8_tile<4, C>(ai, lda, w, ldw, k, ci, ldc);
        break;
      case 3:
        int8_tile<3, C>(ai, lda, w, ldw, k, ci, ldc);
        break;
      case 2:
        int8_tile<2, C>(ai, lda, w, ldw, k, ci, ldc);
        break;
      default:
        int8_tile<1, C>(ai, lda, w, ldw, k, ci, ldc);
        break;
    }
  }
}

// Columns [0, n) with C rows of W and RT rows of A per pass.
template <int C, int RT>
void int8_columns(const float* a, int64_t lda, int64_t m, const int8_t* w, int64_t n, int64_t k, float* c,
                  int64_t ldc) {
  const int64_t chunk = m <= RT ? std::max<int64_t>(k, 1) : kChunk;
  for (int64_t p0 = 0; p0 < k; p0 += chunk) {
    const int64_t kc = std::min(chunk, k - p0);
    int64_t j = 0;
    for (; j + C <= n; j += C) int8_col_tile<C, RT>(a + p0, lda, m, w + j * k + p0, k, kc, c + j, ldc);
    for (; j < n; ++j) int8_col_tile<1, RT>(a + p0, lda, m, w + j * k + p0, k, kc, c + j, ldc);
  }
}

void int8_weight(const float* a, int64_t lda, int64_t m, const int8_t* w, int64_t n, int64_t k, const float* scales,
                 float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
  if (L < 16 && m <= 2) {
    // Below AVX-512, kRows x kCols fill the 16 registers; one or two rows of
    // A leave room for four rows of W (AVX2, one row: 0.85x the CPU's time
    // with two).
    int8_columns<4, 2>(a, lda, m, w, n, k, c, ldc);
  } else {
    int8_columns<kCols, kRows>(a, lda, m, w, n, k, c, ldc);
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= scales[j];
  }
}

// ---- int4 ----

// Rows of a block ahead that int4_tile prefetches.
constexpr int64_t kPrefetchRows = 256;

// Rows of A per pass over a block of B columns: as many as the accumulators allow.
template <int B>
constexpr int kInt4Rows = std::clamp(kAccumulators / (B / L), 1, 4);

// Scales and zeros of L columns from their interleaved pairs (s0 z0 s1 z1 ...).
template <size_t... I>
[[gnu::always_inline]] inline void split_pairs(const float* pairs, VF* s, VF* z, std::index_sequence<I...>) {
  const VF first = load(pairs), second = load(pairs + L);
  *s = __builtin_shuffle(first, second, VI{static_cast<int32_t>(2 * I)...});
  *z = __builtin_shuffle(first, second, VI{static_cast<int32_t>(2 * I + 1)...});
}

// Groups [0, groups) of a tile of R rows: c(r, :) += s * S + z * a_sum, the
// group's scales and zeros interleaved at sz + g * sz_ld.
template <int R, int B>
void int4_tile(const float* a, int64_t lda, const uint8_t* block, int64_t groups, int64_t group_size, const float* sz,
               int64_t sz_ld, const float* a_sum, int64_t sum_ld, float* c, int64_t ldc) {
  constexpr int V = B / L;  // vectors per row
  static_assert(V % 2 == 0);
  for (int64_t g = 0; g < groups; ++g) {
    VF acc[R][V] = {};
    const uint8_t* bytes = block + g * group_size * (B / 2);
    const float* ag = a + g * group_size;
    for (int64_t p = 0; p < group_size; ++p, bytes += B / 2) {
      // A block streams from memory when the weights exceed the caches: ask
      // for the rows kPrefetchRows ahead (cold 4096 x 4096, m = 1: 0.68 -> 0.44 ms).
      __builtin_prefetch(bytes + kPrefetchRows * (B / 2));
      VF wv[V];
#pragma GCC unroll 8
      for (int h = 0; h < V / 2; ++h) nibbles(widen_uint8(bytes + h * L), &wv[h], &wv[h + V / 2]);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const VF av = splat(ag[r * lda + p]);
#pragma GCC unroll 16
        for (int v = 0; v < V; ++v) acc[r][v] += av * wv[v];
      }
    }
    for (int v = 0; v < V; ++v) {
      VF scale, zero;
      split_pairs(sz + g * sz_ld + v * 2 * L, &scale, &zero, std::make_index_sequence<L>{});
      for (int r = 0; r < R; ++r) {
        float* out = c + r * ldc + v * L;
        store(out, load(out) + scale * acc[r][v] + zero * splat(a_sum[r * sum_ld + g]));
      }
    }
  }
}

template <int B>
void int4_block(const float* a, int64_t lda, int64_t m, const uint8_t* block, int64_t k, int64_t group_size,
                const float* sz, int64_t sz_ld, const float* a_sum, float* c, int64_t ldc) {
  constexpr int R = kInt4Rows<B>;
  const int64_t groups = k / group_size;
  // Groups per pass: A's rows of one pass stay in L1 while the row tiles go over them.
  const int64_t chunk = m <= R ? groups : std::max<int64_t>(1, kChunk / group_size);
  for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, B, 0.0f);
  for (int64_t g0 = 0; g0 < groups; g0 += chunk) {
    const int64_t gc = std::min(chunk, groups - g0);
    const uint8_t* bytes = block + g0 * group_size * (B / 2);
    const float* szg = sz + g0 * sz_ld;
    for (int64_t i = 0; i < m; i += R) {
      const float* ai = a + i * lda + g0 * group_size;
      const float* si = a_sum + i * groups + g0;
      float* ci = c + i * ldc;
      const int64_t rows = std::min<int64_t>(R, m - i);
      if (rows == R) {
        int4_tile<R, B>(ai, lda, bytes, gc, group_size, szg, sz_ld, si, groups, ci, ldc);
      } else {
        for (int64_t r = 0; r < rows; ++r) {
          int4_tile<1, B>(ai + r * lda, lda, bytes, gc, group_size, szg, sz_ld, si + r * groups, groups, ci + r * ldc,
                          ldc);
        }
      }
    }
  }
}

void int4_weight_block(const float* a, int64_t lda, int64_t m, const uint8_t* block, int64_t block_n, int64_t k,
                       int64_t group_size, const float* sz, int64_t sz_ld, const float* a_sum, float* c, int64_t ldc) {
  if (block_n == 64) {
    int4_block<64>(a, lda, m, block, k, group_size, sz, sz_ld, a_sum, c, ldc);
  } else {
    int4_block<32>(a, lda, m, block, k, group_size, sz, sz_ld, a_sum, c, ldc);
  }
}

}  // namespace

const detail::QuantizedGemmFns& quantized_gemm_fns() {
  static const detail::QuantizedGemmFns fns{int8_weight, int4_weight_block};
  return fns;
}

}  // namespace mlu::kernels::MLU_ISA_NS
