#include "gemm_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "../common/amx_tiles.h"
#include "../common/scratch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

// Depth per packed slice (a multiple of 32): a B panel (kDepth x 32) is
// 32 KB, kept in L1 while the A panels of a row block stream from L2.
constexpr int64_t kDepth = 512;
// Columns per packed B block (a thread's unit of work), rows per A block
// swept against one B panel.
constexpr int64_t kCols = 512;
constexpr int64_t kRows = 256;

using detail::TileConfig;

// Tiles 0-3: C (16 x 16 floats); 4, 5: A (16 rows x 32 BFloat16); 6, 7: B
// (16 column-pair rows x 16 columns).
TileConfig tile_config() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.set(t, 16, 64);
  return config;
}

// A rows [0, rows) x depth [0, depth) into 32-row panels, each kDepth / 32
// chunks of [32 rows][32 depth] (a chunk's rows 0-15 and 16-31 are the two
// A tiles, 64 bytes per row); padding zero.
void pack_a(uint16_t* dst, const uint16_t* a, int64_t rs, int64_t cs, int64_t rows, int64_t depth) {
  const int64_t chunks = (depth + 31) / 32;
  for (int64_t i0 = 0; i0 < rows; i0 += 32, dst += chunks * 1024) {
    std::memset(dst, 0, static_cast<size_t>(chunks) * 2048);
    const int64_t n = std::min<int64_t>(32, rows - i0);
    for (int64_t r = 0; r < n; ++r) {
      const uint16_t* row = a + (i0 + r) * rs;
      for (int64_t p0 = 0; p0 < depth; p0 += 32) {
        uint16_t* d = dst + (p0 / 32) * 1024 + r * 32;
        const int64_t len = std::min<int64_t>(32, depth - p0);
        if (cs == 1) {
          std::memcpy(d, row + p0, static_cast<size_t>(len) * 2);
        } else {
          for (int64_t p = 0; p < len; ++p) d[p] = row[(p0 + p) * cs];
        }
      }
    }
  }
}

// B depth [0, depth) x columns [0, cols) into 32-column panels, each
// kDepth / 32 chunks of [16 depth pairs][32 columns][2] (the first and second
// 64 bytes of each 128-byte row are the two B tiles); padding zero.
void pack_b(uint16_t* dst, const uint16_t* b, int64_t rs, int64_t cs, int64_t depth, int64_t cols) {
  const int64_t chunks = (depth + 31) / 32;
  for (int64_t j0 = 0; j0 < cols; j0 += 32, dst += chunks * 1024) {
    std::memset(dst, 0, static_cast<size_t>(chunks) * 2048);
    const int64_t n = std::min<int64_t>(32, cols - j0);
    int64_t p = 0;
    if (cs == 1 && n == 32) {  // two rows of 32 interleaved, 8 columns at a time
      for (; p + 2 <= depth; p += 2) {
        const auto* r0 = reinterpret_cast<const __m128i*>(b + p * rs + j0);
        const auto* r1 = reinterpret_cast<const __m128i*>(b + (p + 1) * rs + j0);
        auto* d = reinterpret_cast<__m128i*>(dst + (p / 32) * 1024 + ((p % 32) / 2) * 64);
        for (int q = 0; q < 4; ++q) {
          const __m128i x = _mm_loadu_si128(r0 + q), y = _mm_loadu_si128(r1 + q);
          _mm_storeu_si128(d + 2 * q, _mm_unpacklo_epi16(x, y));
          _mm_storeu_si128(d + 2 * q + 1, _mm_unpackhi_epi16(x, y));
        }
      }
    }
    for (; p < depth; ++p) {
      const uint16_t* row = b + p * rs + j0 * cs;
      uint16_t* d = dst + (p / 32) * 1024 + ((p % 32) / 2) * 64 + p % 2;
      for (int64_t j = 0; j < n; ++j) d[j * 2] = row[j * cs];
    }
  }
}

// The 32 x 32 block of w at c += A panel x B panel over `chunks` 32-deep steps.
// Where a 32-row A panel's tiles are: packed (chunks 1024 elements apart,
// rows 32 apart) or read in place from a row-major A (Note [AMX tiles]).
struct APanel {
  int64_t chunk_step;  // elements from one 32-deep chunk to the next
  int64_t row_bytes;   // tile row stride
  int64_t second;      // elements from the first tile (rows 0-15) to the second
};

// With `load` false the block starts from zero (w is not read).
void block(const uint16_t* a, const APanel& layout, const uint16_t* b, int64_t chunks, float* c, int64_t ldw,
           bool load) {
  const int64_t stride = ldw * 4;
  if (load) {
    _tile_loadd(0, c, stride);
    _tile_loadd(1, c + 16, stride);
    _tile_loadd(2, c + 16 * ldw, stride);
    _tile_loadd(3, c + 16 * ldw + 16, stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t q = 0; q < chunks; ++q, a += layout.chunk_step, b += 1024) {
    _tile_loadd(4, a, layout.row_bytes);
    _tile_loadd(5, a + layout.second, layout.row_bytes);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 32, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  _tile_stored(2, c + 16 * ldw, stride);
  _tile_stored(3, c + 16 * ldw + 16, stride);
}

}  // namespace

void gemm_amx_bf16_accumulate(int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t a_rs, int64_t a_cs,
                              const BFloat16* b, int64_t b_rs, int64_t b_cs, float* w, int64_t ldw, bool accumulate,
                              bool serial) {
  const auto* a16 = reinterpret_cast<const uint16_t*>(a);
  const auto* b16 = reinterpret_cast<const uint16_t*>(b);
  const int threads = serial ? 1 : num_threads();
  const int64_t a_panels = (m + 31) / 32, b_panels = (n + 31) / 32;
  // Column blocks of at most kCols, as many as a multiple of the threads;
  // when there are fewer than threads, the row panels are split as well.
  const int64_t wanted = (n + kCols - 1) / kCols;
  const int64_t even = std::min<int64_t>((wanted + threads - 1) / threads * threads, b_panels);
  const int64_t block_panels = (b_panels + even - 1) / even;
  const int64_t n_blocks = (b_panels + block_panels - 1) / block_panels;
  const int64_t m_parts = std::clamp<int64_t>(threads / n_blocks, 1, a_panels);
  // A row-major A whose panels are whole (rows and depth multiples of 32)
  // is tile-loaded in place instead of packed.
  const bool in_place = a_cs == 1 && m % 32 == 0 && k % 32 == 0;
  thread_local detail::AlignedScratch16 a_scratch;
  for (int64_t pc = 0; pc < k; pc += kDepth) {
    const int64_t depth = std::min(kDepth, k - pc), chunks = (depth + 31) / 32;
    const uint16_t* ap = a16 + pc;
    APanel layout{32, a_rs * 2, 16 * a_rs};
    int64_t panel_step = 32 * a_rs;
    if (!in_place) {
      uint16_t* packed = a_scratch.get(static_cast<size_t>(a_panels * chunks * 1024));
      parallel_for(0, a_panels, threads == 1 ? a_panels : 1, [&](int64_t lo, int64_t hi) {
        pack_a(packed + lo * chunks * 1024, a16 + lo * 32 * a_rs + pc * a_cs, a_rs, a_cs,
               std::min(m, hi * 32) - lo * 32, depth);
      });
      ap = packed;
      layout = APanel{1024, 64, 512};
      panel_step = chunks * 1024;
    }
    const int64_t tasks = n_blocks * m_parts;
    parallel_for(0, tasks, threads == 1 ? tasks : 1, [&](int64_t lo, int64_t hi) {
      thread_local detail::AlignedScratch16 b_scratch;
      static const TileConfig config = tile_config();
      _tile_loadconfig(&config);
      uint16_t* bp = b_scratch.get(static_cast<size_t>(block_panels * chunks * 1024));
      int64_t packed = -1;
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t jb = t / m_parts, part = t % m_parts;
        const int64_t first = jb * block_panels, count = std::min(block_panels, b_panels - first);
        if (packed != jb) {
          pack_b(bp, b16 + pc * b_rs + first * 32 * b_cs, b_rs, b_cs, depth,
                 std::min(n, (first + count) * 32) - first * 32);
          packed = jb;
        }
        const int64_t pa_begin = part * a_panels / m_parts, pa_end = (part + 1) * a_panels / m_parts;
        for (int64_t r0 = pa_begin; r0 < pa_end; r0 += kRows / 32) {
          const int64_t r1 = std::min(pa_end, r0 + kRows / 32);
          for (int64_t q = 0; q < count; ++q) {
            for (int64_t pa = r0; pa < r1; ++pa) {
              block(ap + pa * panel_step, layout, bp + q * chunks * 1024, chunks, w + pa * 32 * ldw + (first + q) * 32,
                    ldw, accumulate || pc > 0);
            }
          }
        }
      }
      _tile_release();
    });
  }
}

}  // namespace mlu::kernels::MLU_ISA_NS
