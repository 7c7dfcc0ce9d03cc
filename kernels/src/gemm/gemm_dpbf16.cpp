#include "gemm_dpbf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "../common/scratch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

using detail::AlignedScratch16;

constexpr int64_t kMr = 12, kNr = 32;
// Depth per packed slice: a B panel (512 x 32) is 32 KB, in L1 while the A
// panels of a row block (kRowPanels x 12 rows: 384 KB) stream from L2.
constexpr int64_t kDepth = 512;
constexpr int64_t kRowPanels = 32;
// Columns per packed B block, a thread's unit of work.
constexpr int64_t kCols = 256;
// Problems below this many multiply-adds run on one thread.
constexpr int64_t kSerialMacs = int64_t{1} << 18;

uint32_t pair_at(const uint16_t* p, int64_t step, bool second) {
  return static_cast<uint32_t>(p[0]) | (second ? static_cast<uint32_t>(p[step]) << 16 : 0u);
}

// A rows [0, rows) x depth [0, depth) into 12-row panels of [pairs][12][2].
void pack_a(uint16_t* dst, const uint16_t* a, int64_t rs, int64_t cs, int64_t rows, int64_t depth) {
  const int64_t pairs = (depth + 1) / 2, full = depth / 2;
  for (int64_t i0 = 0; i0 < rows; i0 += kMr, dst += pairs * kMr * 2) {
    auto* d = reinterpret_cast<uint32_t*>(dst);
    const int64_t n = std::min<int64_t>(kMr, rows - i0);
    if (n < kMr) std::memset(dst, 0, static_cast<size_t>(pairs * kMr) * 4);
    if (rs == 1 && n == kMr) {  // a transposed A: a pair's two elements are in two stored rows
      const uint16_t* col = a + i0;
      for (int64_t q = 0; q < full; ++q) {
        const uint16_t* r0 = col + 2 * q * cs;
        const uint16_t* r1 = r0 + cs;
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0));
        const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1));
        const __m128i x4 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r0 + 8));
        const __m128i y4 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r1 + 8));
        auto* out = reinterpret_cast<__m128i*>(d + q * kMr);
        _mm_storeu_si128(out, _mm_unpacklo_epi16(x, y));
        _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(x, y));
        _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(x4, y4));
      }
      if (pairs > full) {
        for (int64_t r = 0; r < kMr; ++r) d[full * kMr + r] = col[2 * full * cs + r];
      }
      continue;
    }
    for (int64_t r = 0; r < n; ++r) {
      const uint16_t* row = a + (i0 + r) * rs;
      if (cs == 1) {
        for (int64_t q = 0; q < full; ++q) {
          uint32_t v;
          std::memcpy(&v, row + 2 * q, 4);
          d[q * kMr + r] = v;
        }
      } else {
        for (int64_t q = 0; q < full; ++q) d[q * kMr + r] = pair_at(row + 2 * q * cs, cs, true);
      }
      if (pairs > full) d[full * kMr + r] = pair_at(row + 2 * full * cs, cs, false);
    }
  }
}

// B depth [0, depth) x columns [0, cols) into 32-column panels of
// [pairs][32][2]; columns past `cols` zero.
void pack_b(uint16_t* dst, const uint16_t* b, int64_t rs, int64_t cs, int64_t depth, int64_t cols) {
  const int64_t pairs = (depth + 1) / 2, full = depth / 2;
  for (int64_t j0 = 0; j0 < cols; j0 += kNr, dst += pairs * kNr * 2) {
    auto* d = reinterpret_cast<uint32_t*>(dst);
    const int64_t n = std::min<int64_t>(kNr, cols - j0);
    if (n < kNr) std::memset(dst, 0, static_cast<size_t>(pairs * kNr) * 4);
    int64_t q = 0;
    if (cs == 1 && n == kNr) {  // two rows interleaved, 8 columns per 128-bit step
      for (; q < full; ++q) {
        const auto* r0 = reinterpret_cast<const __m128i*>(b + 2 * q * rs + j0);
        const auto* r1 = reinterpret_cast<const __m128i*>(b + (2 * q + 1) * rs + j0);
        auto* out = reinterpret_cast<__m128i*>(d + q * kNr);
        for (int v = 0; v < 4; ++v) {
          const __m128i x = _mm_loadu_si128(r0 + v), y = _mm_loadu_si128(r1 + v);
          _mm_storeu_si128(out + 2 * v, _mm_unpacklo_epi16(x, y));
          _mm_storeu_si128(out + 2 * v + 1, _mm_unpackhi_epi16(x, y));
        }
      }
    } else if (rs == 1) {  // a column's pair is two adjacent elements (B = W^T of a row-major W)
      for (int64_t j = 0; j < n; ++j) {
        const uint16_t* col = b + (j0 + j) * cs;
        for (int64_t p = 0; p < full; ++p) {
          uint32_t v;
          std::memcpy(&v, col + 2 * p, 4);
          d[p * kNr + j] = v;
        }
      }
      q = full;
    }
    for (; q < full; ++q) {
      for (int64_t j = 0; j < n; ++j) d[q * kNr + j] = pair_at(b + 2 * q * rs + (j0 + j) * cs, rs, true);
    }
    if (pairs > full) {
      for (int64_t j = 0; j < n; ++j) d[full * kNr + j] = pair_at(b + 2 * full * rs + (j0 + j) * cs, rs, false);
    }
  }
}

// c (rows x cols of a 12 x 32 tile, row stride ldc) = (c +) A panel x B panel.
void micro(int64_t pairs, const uint16_t* ap, const uint16_t* bp, float* c, int64_t ldc, int64_t rows,
           int64_t cols, bool load) {
  __m512 acc[kMr][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  const auto* a32 = reinterpret_cast<const int*>(ap);
  for (int64_t q = 0; q < pairs; ++q, a32 += kMr, bp += kNr * 2) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(bp);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(bp + 32);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(a32[i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
  }
  const __mmask16 m0 = cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xffff : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
  for (int64_t i = 0; i < rows; ++i) {
    float* p = c + i * ldc;
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    if (load) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, p));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, p + 16));
    }
    _mm512_mask_storeu_ps(p, m0, v0);
    _mm512_mask_storeu_ps(p + 16, m1, v1);
  }
}

}  // namespace

void gemm_dpbf16_accumulate(int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t a_rs, int64_t a_cs,
                            const BFloat16* b, int64_t b_rs, int64_t b_cs, float* w, int64_t ldw, bool accumulate,
                            bool serial) {
  const auto* a16 = reinterpret_cast<const uint16_t*>(a);
  const auto* b16 = reinterpret_cast<const uint16_t*>(b);
  const int threads = serial || in_parallel_region() || m * n * k < kSerialMacs ? 1 : num_threads();
  const int64_t a_panels = (m + kMr - 1) / kMr, b_panels = (n + kNr - 1) / kNr;
  // Column blocks of at most kCols, as many as a multiple of the threads;
  // when there are fewer than threads, the row panels are split as well.
  const int64_t wanted = (n + kCols - 1) / kCols;
  const int64_t even = std::min<int64_t>((wanted + threads - 1) / threads * threads, b_panels);
  const int64_t block_panels = (b_panels + even - 1) / even;
  const int64_t n_blocks = (b_panels + block_panels - 1) / block_panels;
  const int64_t m_parts = std::clamp<int64_t>(threads / n_blocks, 1, a_panels);
  thread_local AlignedScratch16 a_scratch;
  for (int64_t pc = 0; pc < k; pc += kDepth) {
    const int64_t depth = std::min(kDepth, k - pc), pairs = (depth + 1) / 2;
    const int64_t a_panel_size = pairs * kMr * 2, b_panel_size = pairs * kNr * 2;
    uint16_t* ap = a_scratch.get(static_cast<size_t>(a_panels * a_panel_size));
    parallel_for(0, a_panels, threads == 1 ? a_panels : std::max<int64_t>(1, a_panels / (4 * threads)),
                 [&](int64_t lo, int64_t hi) {
                   pack_a(ap + lo * a_panel_size, a16 + lo * kMr * a_rs + pc * a_cs, a_rs, a_cs,
                          std::min(m, hi * kMr) - lo * kMr, depth);
                 });
    const bool load = accumulate || pc > 0;
    const int64_t tasks = n_blocks * m_parts;
    parallel_for(0, tasks, threads == 1 ? tasks : 1, [&](int64_t lo, int64_t hi) {
      thread_local AlignedScratch16 b_scratch;
      uint16_t* bp = b_scratch.get(static_cast<size_t>(block_panels * b_panel_size));
      int64_t packed = -1;
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t jb = t / m_parts, part = t % m_parts;
        const int64_t first = jb * block_panels, count = std::min(block_panels, b_panels - first);
        if (packed != jb) {
          pack_b(bp, b16 + pc * b_rs + first * kNr * b_cs, b_rs, b_cs, depth,
                 std::min(n, (first + count) * kNr) - first * kNr);
          packed = jb;
        }
        const int64_t pa_begin = part * a_panels / m_parts, pa_end = (part + 1) * a_panels / m_parts;
        for (int64_t r0 = pa_begin; r0 < pa_end; r0 += kRowPanels) {
          const int64_t r1 = std::min(pa_end, r0 + kRowPanels);
          for (int64_t q = 0; q < count; ++q) {
            const int64_t j = (first + q) * kNr;
            for (int64_t pa = r0; pa < r1; ++pa) {
              micro(pairs, ap + pa * a_panel_size, bp + q * b_panel_size, w + pa * kMr * ldw + j, ldw,
                    std::min(kMr, m - pa * kMr), std::min(kNr, n - j), load);
            }
          }
        }
      }
    });
  }
}

}  // namespace mlu::kernels::MLU_ISA_NS
