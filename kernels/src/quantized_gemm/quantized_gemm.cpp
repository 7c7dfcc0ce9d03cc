// The quantized products' entry points (mlu_kernels/quantized_gemm.h): each
// converts A to float, splits W's columns over the compute threads, and
// runs the decode-size bodies of quantized_gemm_isa.cpp, or, past
// kDecodeRows rows of A, dequantises W a panel at a time into float and
// hands each panel to the float GEMM.
//
// Note [Weight-only sums]
// PyTorch's CPU kernels dequantise each weight ((q - 8) * s + z for int4)
// and add A(i, p) times it into one float sum per element of C, p in order.
// The decode bodies sum per group s * sum(A (q - 8)) + z * sum(A) instead
// (Note [Decode-size weight-only products]), and the panels go through the
// GEMM's blocked sums; the int8 scale multiplies the finished sum in both. So
// the result agrees with the CPU's within float rounding of sums over k
// terms (the tests' tolerance: PyTorch's for the dtype), not bit for bit.
#include "mlu_kernels/quantized_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/scratch.h"
#include "../common/verbose_call.h"
#include "mlu_kernels/copy.h"
#include "mlu_kernels/gemm.h"
#include "mlu_kernels/half.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "int8_gemm_dnnl.h"
#include "quantized_gemm_table.h"

namespace mlu::kernels {
namespace {

const detail::QuantizedGemmFns& fns() { return MLU_KERNELS_ACTIVE_ISA_VARIANT(quantized_gemm_fns)(); }

// Rows of A per pass of the AMX bodies.
constexpr int64_t kAmxRows = 16;

// The AMX bodies (Note [Weight-only products on AMX]) for a product on
// BFloat16 rows, where the build has the avx512 variant and the CPU runs it.
const detail::QuantizedGemmAmxFns* amx_fns(ScalarType dtype) {
#if MLU_KERNELS_TOP_ISA >= 2
  if (dtype == ScalarType::BFloat16 && active_isa() >= Isa::Avx512 && amx_usable()) {
    return &isa_avx512::quantized_gemm_amx_fns();
  }
#endif
  return nullptr;
}

// A^T of rows [i0, i0 + m) as AMX B tiles: [k / 32][16 pairs][m][2].
std::vector<uint16_t> pack_pairs(const uint16_t* a, int64_t lda, int64_t i0, int64_t m, int64_t k) {
  std::vector<uint16_t> out(static_cast<size_t>(k * m));
  for (int64_t p = 0; p < k; ++p) {
    uint16_t* tile = out.data() + (p / 32) * 32 * m + ((p % 32) / 2) * 2 * m + (p % 2);
    for (int64_t i = 0; i < m; ++i) tile[i * 2] = a[(i0 + i) * lda + p];
  }
  return out;
}

// Rows of A up to which the decode bodies run; past it the panels and the GEMM.
constexpr int64_t kDecodeRows = 32;
// Columns of W per dequantised panel (a multiple of every block_n).
constexpr int64_t kPanel = 256;

Shape shape2(int64_t rows, int64_t cols) {
  Shape s;
  s.ndim = 2;
  s.sizes[0] = rows;
  s.sizes[1] = cols;
  return s;
}

// A (m x k, rows lda apart) as float: itself when it is float.
struct FloatRows {
  const float* data;
  int64_t ld;
  std::vector<float> owned;
};
FloatRows float_rows(ScalarType dtype, const void* a, int64_t lda, int64_t m, int64_t k) {
  FloatRows rows;
  if (dtype == ScalarType::Float32) {
    rows.data = static_cast<const float*>(a);
    rows.ld = lda;
    return rows;
  }
  rows.owned.resize(static_cast<size_t>(m * k));
  copy(rows.owned.data(), ScalarType::Float32, Strides{{k, 1}}, a, dtype, Strides{{lda, 1}}, shape2(m, k));
  rows.data = rows.owned.data();
  rows.ld = k;
  return rows;
}

std::vector<float> float_vector(ScalarType dtype, const void* v, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  copy(out.data(), ScalarType::Float32, Strides{{n, 1}}, v, dtype, Strides{{n, 1}}, shape2(1, n));
  return out;
}

// C's float view: C itself when it is float, else a buffer that
// store_columns converts into C column range by column range.
struct FloatOut {
  float* data;
  int64_t ld;
  std::vector<float> owned;
};
FloatOut float_out(ScalarType dtype, void* c, int64_t ldc, int64_t m, int64_t n) {
  FloatOut out;
  if (dtype == ScalarType::Float32) {
    out.data = static_cast<float*>(c);
    out.ld = ldc;
    return out;
  }
  out.owned.resize(static_cast<size_t>(m * n));
  out.data = out.owned.data();
  out.ld = n;
  return out;
}
void store_columns(const FloatOut& out, ScalarType dtype, void* c, int64_t ldc, int64_t m, int64_t j0, int64_t cols) {
  if (dtype == ScalarType::Float32 || cols <= 0 || m <= 0) return;
  auto* dst = static_cast<unsigned char*>(c) + j0 * static_cast<int64_t>(element_size(dtype));
  copy(dst, dtype, Strides{{ldc, 1}}, out.data + j0, ScalarType::Float32, Strides{{out.ld, 1}}, shape2(m, cols));
}

// Column ranges for the threads: multiples of `unit`, at least `min_cols`.
template <class Fn>
void for_column_ranges(int64_t n, int64_t unit, int64_t min_cols, const Fn& fn) {
  const int64_t units = (n + unit - 1) / unit;
  const int64_t grain = std::max<int64_t>(1, std::min(min_cols / unit, units / std::max(1, num_threads())));
  parallel_for(0, units, grain, [&](int64_t lo, int64_t hi) { fn(lo * unit, std::min(n, hi * unit)); });
}

// C (float) = A (float) B, B(p, j) at b[p * b_rs + j * b_cs]: the panels' GEMM.
void float_gemm(const FloatRows& a, int64_t m, int64_t cols, int64_t k, const float* b, int64_t b_rs, int64_t b_cs,
                float* c, int64_t ldc) {
  GemmArgs g{};
  g.dtype = ScalarType::Float32;
  g.m = m;
  g.n = cols;
  g.k = k;
  g.alpha = 1;
  g.beta = 0;
  g.a = {const_cast<float*>(a.data), a.ld, 1};
  g.b = {const_cast<float*>(b), b_rs, b_cs};
  g.c = {c, ldc, 1};
  gemm(g);
}

bool is_weight_only_dtype(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float16 || t == ScalarType::BFloat16;
}

// ---- int4 layouts ----

struct BlockBytes {
  int64_t j0, width;  // the block's first column and its columns
  int64_t offset;     // its first byte
  bool halves;        // Halves (a full block of a Halves layout) or Pairs
};
BlockBytes block_of(Int4Layout layout, int64_t n, int64_t k, int64_t b) {
  const int64_t bn = int4_block_n(layout);
  const int64_t j0 = b * bn, width = std::min(bn, n - j0);
  return {j0, width, j0 * k / 2, layout != Int4Layout::Pairs && width == bn};
}

// The byte holding column jj (of a block's width) at row p, and whether it is the high nibble.
inline void locate(const BlockBytes& blk, int64_t jj, int64_t p, int64_t* byte, bool* high) {
  const int64_t row = blk.offset + p * (blk.width / 2);
  if (blk.halves) {
    const int64_t half = blk.width / 2;
    *byte = row + (jj < half ? jj : jj - half);
    *high = jj >= half;
  } else {
    *byte = row + jj / 2;
    *high = (jj & 1) != 0;
  }
}

}  // namespace

int64_t int4_block_n(Int4Layout layout) { return layout == Int4Layout::Halves64 ? 64 : 32; }

void int4_pack(const int32_t* values, int64_t n, int64_t k, Int4Layout layout, uint8_t* packed) {
  const int64_t bn = int4_block_n(layout);
  std::memset(packed, 0, static_cast<size_t>(n * k / 2));
  parallel_for(0, (n + bn - 1) / bn, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const BlockBytes blk = block_of(layout, n, k, b);
      for (int64_t jj = 0; jj < blk.width; ++jj) {
        const int32_t* row = values + (blk.j0 + jj) * k;
        for (int64_t p = 0; p < k; ++p) {
          int64_t byte;
          bool high;
          locate(blk, jj, p, &byte, &high);
          const auto q = static_cast<uint8_t>(row[p] & 15);
          packed[byte] = static_cast<uint8_t>(packed[byte] | (high ? q << 4 : q));
        }
      }
    }
  });
}

void int4_unpack(const uint8_t* packed, int64_t n, int64_t k, Int4Layout layout, int32_t* values) {
  const int64_t bn = int4_block_n(layout);
  for (int64_t b = 0; b < (n + bn - 1) / bn; ++b) {
    const BlockBytes blk = block_of(layout, n, k, b);
    for (int64_t jj = 0; jj < blk.width; ++jj) {
      for (int64_t p = 0; p < k; ++p) {
        int64_t byte;
        bool high;
        locate(blk, jj, p, &byte, &high);
        values[(blk.j0 + jj) * k + p] = high ? packed[byte] >> 4 : packed[byte] & 15;
      }
    }
  }
}

void int8_weight_gemm(const Int8WeightGemmArgs& args) {
  detail::VerboseCall call("int8_weight_gemm");
  if (call) {
    call.describe(args.dtype, "m%lld n%lld k%lld", static_cast<long long>(args.m), static_cast<long long>(args.n),
                  static_cast<long long>(args.k));
  }
  const int64_t m = args.m, n = args.n, k = args.k;
  if (m <= 0 || n <= 0 || !is_weight_only_dtype(args.dtype)) return;
  const std::vector<float> scales = float_vector(args.dtype, args.scales, n);
  FloatOut c = float_out(args.dtype, args.c, args.ldc, m, n);
  // One row gains nothing from the tiles: widening the weights is the whole
  // cost there, and the float body widens them in fewer steps.
  const detail::QuantizedGemmAmxFns* amx = m >= 2 && m <= kDecodeRows && k % 32 == 0 ? amx_fns(args.dtype) : nullptr;
  if (amx != nullptr) {
    call.path("decode_amx");
    const auto* a16 = static_cast<const uint16_t*>(args.a);
    std::vector<std::vector<uint16_t>> pairs;
    for (int64_t i0 = 0; i0 < m; i0 += kAmxRows)
      pairs.push_back(pack_pairs(a16, args.lda, i0, std::min(kAmxRows, m - i0), k));
    const int64_t n16 = n / 16 * 16;
    for_column_ranges(n16, 16, 256, [&](int64_t j0, int64_t j1) {
      for (int64_t i0 = 0; i0 < m; i0 += kAmxRows) {
        amx->int8_weight(pairs[static_cast<size_t>(i0 / kAmxRows)].data(), std::min(kAmxRows, m - i0), args.w + j0 * k,
                         j1 - j0, k, scales.data() + j0, c.data + i0 * c.ld + j0, c.ld);
      }
      store_columns(c, args.dtype, args.c, args.ldc, m, j0, j1 - j0);
    });
    if (n16 == n) return;
    const FloatRows a = float_rows(args.dtype, args.a, args.lda, m, k);
    fns().int8_weight(a.data, a.ld, m, args.w + n16 * k, n - n16, k, scales.data() + n16, c.data + n16, c.ld);
    store_columns(c, args.dtype, args.c, args.ldc, m, n16, n - n16);
    return;
  }
  const FloatRows a = float_rows(args.dtype, args.a, args.lda, m, k);
  if (m <= kDecodeRows) {
    call.path("decode");
    const auto& body = fns();
    for_column_ranges(n, 16, 256, [&](int64_t j0, int64_t j1) {
      body.int8_weight(a.data, a.ld, m, args.w + j0 * k, j1 - j0, k, scales.data() + j0, c.data + j0, c.ld);
      store_columns(c, args.dtype, args.c, args.ldc, m, j0, j1 - j0);
    });
    return;
  }
  call.path("panels");
  std::vector<float> panel(static_cast<size_t>(kPanel * std::max<int64_t>(k, 1)));
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const int64_t cols = std::min(kPanel, n - j0);
    parallel_for(0, cols, 16, [&](int64_t lo, int64_t hi) {
      for (int64_t jj = lo; jj < hi; ++jj) {
        const int8_t* w = args.w + (j0 + jj) * k;
        float* out = panel.data() + jj * k;
        for (int64_t p = 0; p < k; ++p) out[p] = static_cast<float>(w[p]);
      }
    });
    float_gemm(a, m, cols, k, panel.data(), 1, k, c.data + j0, c.ld);
  }
  parallel_for(0, m, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      for (int64_t j = 0; j < n; ++j) c.data[i * c.ld + j] *= scales[static_cast<size_t>(j)];
    }
  });
  store_columns(c, args.dtype, args.c, args.ldc, m, 0, n);
}

void int4_weight_gemm(const Int4WeightGemmArgs& args) {
  detail::VerboseCall call("int4_weight_gemm");
  if (call) {
    call.describe(args.dtype, "m%lld n%lld k%lld group%lld", static_cast<long long>(args.m),
                  static_cast<long long>(args.n), static_cast<long long>(args.k),
                  static_cast<long long>(args.group_size));
  }
  const int64_t m = args.m, n = args.n, k = args.k, gs = args.group_size;
  if (m <= 0 || n <= 0 || gs <= 0 || k % gs != 0 || !is_weight_only_dtype(args.dtype)) return;
  const int64_t groups = k / gs;
  // scale_zeros [groups][n][2] as float.
  const std::vector<float> sz = float_vector(args.dtype, args.scale_zeros, groups * n * 2);
  FloatOut c = float_out(args.dtype, args.c, args.ldc, m, n);
  const int64_t bn = int4_block_n(args.layout);
  const int64_t blocks = (n + bn - 1) / bn;
  const detail::QuantizedGemmAmxFns* amx = m >= 2 && m <= kDecodeRows ? amx_fns(args.dtype) : nullptr;
  const FloatRows a = float_rows(args.dtype, args.a, args.lda, m, k);
  // The value of column jj of a block at row p, dequantised as the CPU does.
  const auto dequantised = [&](const BlockBytes& blk, int64_t jj, int64_t p) {
    int64_t byte;
    bool high;
    locate(blk, jj, p, &byte, &high);
    const int q = high ? args.w[byte] >> 4 : args.w[byte] & 15;
    const float* s = sz.data() + ((p / gs) * n + blk.j0 + jj) * 2;
    return std::fma(static_cast<float>(q - 8), s[0], s[1]);
  };
  if (m <= kDecodeRows) {
    call.path(amx != nullptr ? "decode_amx" : "decode");
    // Each row's sum of A per group (the zeros' factor), in 8 running sums.
    std::vector<float> a_sum(static_cast<size_t>(m * groups));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t g = 0; g < groups; ++g) {
        const float* row = a.data + i * a.ld + g * gs;
        float part[8] = {};
        for (int64_t p = 0; p < gs; p += 8) {
          for (int l = 0; l < 8; ++l) part[l] += row[p + l];
        }
        a_sum[static_cast<size_t>(i * groups + g)] =
            ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
      }
    }
    const auto& body = fns();
    parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const BlockBytes blk = block_of(args.layout, n, k, b);
        float* cb = c.data + blk.j0;
        if (blk.halves && amx != nullptr) {
          for (int64_t i0 = 0; i0 < m; i0 += kAmxRows) {
            amx->int4_weight_block(static_cast<const uint16_t*>(args.a) + i0 * args.lda, args.lda,
                                   std::min(kAmxRows, m - i0), args.w + blk.offset, bn, k, gs, sz.data() + blk.j0 * 2,
                                   n * 2, a_sum.data() + i0 * groups, cb + i0 * c.ld, c.ld);
          }
        } else if (blk.halves) {
          body.int4_weight_block(a.data, a.ld, m, args.w + blk.offset, bn, k, gs, sz.data() + blk.j0 * 2, n * 2,
                                 a_sum.data(), cb, c.ld);
        } else {
          // A Pairs block (a short last block, or the vector-less layout): element by element.
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t jj = 0; jj < blk.width; ++jj) {
              float sum = 0;
              for (int64_t p = 0; p < k; ++p) sum += a.data[i * a.ld + p] * dequantised(blk, jj, p);
              cb[i * c.ld + jj] = sum;
            }
          }
        }
        store_columns(c, args.dtype, args.c, args.ldc, m, blk.j0, blk.width);
      }
    });
    return;
  }
  call.path("panels");
  // Panel: k x cols, row-major (B of the GEMM).
  std::vector<float> panel(static_cast<size_t>(kPanel * k));
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const int64_t cols = std::min(kPanel, n - j0);
    const int64_t b0 = j0 / bn, b1 = (j0 + cols + bn - 1) / bn;
    parallel_for(b0, b1, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const BlockBytes blk = block_of(args.layout, n, k, b);
        for (int64_t p = 0; p < k; ++p) {
          float* row = panel.data() + p * cols + (blk.j0 - j0);
          for (int64_t jj = 0; jj < blk.width; ++jj) row[jj] = dequantised(blk, jj, p);
        }
      }
    });
    float_gemm(a, m, cols, k, panel.data(), cols, 1, c.data + j0, c.ld);
  }
  store_columns(c, args.dtype, args.c, args.ldc, m, 0, n);
}

void int8_gemm(const Int8GemmArgs& args) {
  detail::VerboseCall call("int8_gemm");
  if (call) {
    call.describe(args.a_dtype, "m%lld n%lld k%lld", static_cast<long long>(args.m), static_cast<long long>(args.n),
                  static_cast<long long>(args.k));
  }
  const int64_t m = args.m, n = args.n, k = args.k;
  if (m <= 0 || n <= 0) return;
  if (detail::dnnl_int8_gemm(args)) {  // Note [int8 products on oneDNN]
    call.path("dnnl");
    return;
  }
  call.path("own");
  // B as int16 rows (k x n, contiguous): products of int8 or uint8 by int8
  // fit int16 operands, and unit-stride rows vectorise.
  std::vector<int16_t> b(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) b[static_cast<size_t>(p * n + j)] = args.b[p * args.b_rs + j * args.b_cs];
  }
  const bool is_unsigned = args.a_dtype == ScalarType::UInt8;
  const auto a_at = [&](int64_t i, int64_t p) -> int32_t {
    const int64_t at = i * args.a_rs + p * args.a_cs;
    return is_unsigned ? static_cast<const uint8_t*>(args.a)[at] : static_cast<const int8_t*>(args.a)[at];
  };
  constexpr int64_t kRows = 4, kCols = 512;
  parallel_for(0, (m + kRows - 1) / kRows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n * k)),
               [&](int64_t lo, int64_t hi) {
                 // uint32: wrapping sums without undefined behaviour, as the CPU's int32 sums wrap.
                 uint32_t acc[kRows][kCols];
                 for (int64_t t = lo; t < hi; ++t) {
                   const int64_t i0 = t * kRows, rows = std::min(kRows, m - i0);
                   for (int64_t j0 = 0; j0 < n; j0 += kCols) {
                     const int64_t cols = std::min(kCols, n - j0);
                     for (int64_t r = 0; r < rows; ++r) std::fill_n(acc[r], cols, 0u);
                     for (int64_t p = 0; p < k; ++p) {
                       const int16_t* bp = b.data() + p * n + j0;
                       for (int64_t r = 0; r < rows; ++r) {
                         const auto x = static_cast<int16_t>(a_at(i0 + r, p));
                         uint32_t* __restrict row = acc[r];
                         for (int64_t j = 0; j < cols; ++j) {
                           row[j] += static_cast<uint32_t>(static_cast<int32_t>(x) * bp[j]);
                         }
                       }
                     }
                     for (int64_t r = 0; r < rows; ++r) {
                       for (int64_t j = 0; j < cols; ++j) {
                         args.c[(i0 + r) * args.ldc + j0 + j] = static_cast<int32_t>(acc[r][j]);
                       }
                     }
                   }
                 }
               });
}

}  // namespace mlu::kernels
