// The GEMM micro-kernel and packing for one instruction set (compiled once
// per ISA, like pointwise_isa.cpp). CMake compiles this file with
// -ffp-contract=fast, unlike the other kernels: `acc += a * b` on the vector
// types below must become one fused multiply-add where the ISA has it (the
// CPU's BLAS fuses too; a GEMM without FMA runs at half speed). Results may
// therefore differ by rounding between ISAs, within the usual GEMM tolerance.
#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "gemm_table.h"

namespace mlu::kernels::MLU_ISA_NS {
namespace {

// Note [GEMM register block]
// The micro-kernel keeps an MR x NR tile of C in registers: each row is
// kVectorsPerRow vectors, so per depth step it loads two vectors of the B
// panel, broadcasts MR values of the A panel and issues 2 * MR independent
// multiply-adds (more than the FMA latency times the FMA ports, so the FMA
// unit never waits). MR is as large as the register file allows: AVX-512 has
// 32 registers (24 accumulators + 2 B vectors + a broadcast), AVX2 and SSE2
// have 16 (12 or 8 accumulators).
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
constexpr int kRows = 12;
#elif defined(__AVX2__)
constexpr int kVectorBytes = 32;
constexpr int kRows = 6;
#else
constexpr int kVectorBytes = 16;
constexpr int kRows = 4;
#endif
constexpr int kVectorsPerRow = 2;

template <class T>
constexpr int kCols = kVectorsPerRow * kVectorBytes / static_cast<int>(sizeof(T));

// One value in every lane: vbroadcastss/sd from memory (a load port). GCC
// turns the portable spellings into an add of 0 (`V{} + x`, an FP-port op)
// or lane inserts, both costing FMA slots.
template <class V, class T>
inline V broadcast(T x) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64) {
    if constexpr (std::is_same_v<T, float>) {
      return (V)_mm512_set1_ps(x);
    } else {
      return (V)_mm512_set1_pd(x);
    }
  }
#endif
#if defined(__AVX__)
  if constexpr (sizeof(V) == 32) {
    if constexpr (std::is_same_v<T, float>) {
      return (V)_mm256_set1_ps(x);
    } else {
      return (V)_mm256_set1_pd(x);
    }
  }
#endif
  if constexpr (sizeof(V) == 16) {
    if constexpr (std::is_same_v<T, float>) {
      return (V)_mm_set1_ps(x);
    } else {
      return (V)_mm_set1_pd(x);
    }
  }
}

// Depth of a packed slice (kc); also the row stride of row-major A panels.
constexpr int64_t kDepth = 384;

// The register-blocked product: the first R rows (R <= kRows) of a tile,
// A(i, p) at a[i * a_row + p * a_step], B's row p (kCols values) at
// b + p * b_step; c[i * ldc + j] = alpha * sum + beta * c (beta == 0: c is
// not read). R < kRows serves the last rows of a matrix whose row count is
// not a multiple of kRows, at no wasted multiply-adds.
template <class T, int R>
[[gnu::always_inline]] inline void micro_body(int64_t k, const T* __restrict a, int64_t a_row, int64_t a_step,
                                              const T* __restrict b, int64_t b_step, T* __restrict c,
                                              int64_t ldc, T alpha, T beta) {
  constexpr int W = kVectorBytes / static_cast<int>(sizeof(T));
  constexpr int MR = R, NV = kVectorsPerRow;
  typedef T V __attribute__((vector_size(kVectorBytes)));
  V acc[MR][NV];
  // C's tile is read and written only after the depth loop: start fetching
  // it now so those accesses do not wait on memory.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + NV * W - 1, 1);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V{};
  }
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + v * W, sizeof(V));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V av = broadcast<V>(a[i * a_row]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
    }
    a += a_step;
    b += b_step;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      T* out = c + i * ldc + v * W;
      V r = acc[i][v] * alpha;
      if (beta != T(0)) {
        V old;
        std::memcpy(&old, out, sizeof(V));
        r += old * beta;
      }
      std::memcpy(out, &r, sizeof(V));
    }
  }
}

// On packed panels: B's panel kCols values per step; A's panel depth-major
// (kRows values per step) or, with kRowPanel, row-major (row i at
// a + i * kDepth: Note [A panel layouts]).
template <class T, int R, bool kRowPanel>
void micro(int64_t k, const T* a, const T* b, T* c, int64_t ldc, T alpha, T beta) {
  micro_body<T, R>(k, a, kRowPanel ? kDepth : 1, kRowPanel ? 1 : kRows, b, kCols<T>, c, ldc, alpha, beta);
}

// On unpacked row-major operands (Note [Unpacked small products]): A(i, p)
// at a[i * lda + p], B's row p at b + p * ldb.
template <class T, int R>
void micro_direct(int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, T alpha,
                  T beta) {
  micro_body<T, R>(k, a, lda, 1, b, ldb, c, ldc, alpha, beta);
}

// Packs `width` lines (element j of depth step p at src + j * ws + p * ds)
// into panels of P lines, panel_stride elements apart: a panel holds depth
// steps of P values, lines past `width` zero. Element conversion to T
// happens here, once per element.
template <class T, int P>
void pack(T* dst, const void* src, ScalarType type, int64_t ws, int64_t ds, int64_t width, int64_t depth,
          int64_t panel_stride) {
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      const S* s = static_cast<const S*>(src);
      for (int64_t w0 = 0; w0 < width; w0 += P, dst += panel_stride) {
        const int64_t n = std::min<int64_t>(P, width - w0);
        const S* line = s + w0 * ws;
        if (n == P && ws == 1) {  // lines side by side: P contiguous values per step
          for (int64_t p = 0; p < depth; ++p) {
            for (int j = 0; j < P; ++j) dst[p * P + j] = detail::convert<T>(line[p * ds + j]);
          }
          continue;
        }
        if (n < P) {
          for (int64_t p = 0; p < depth; ++p) std::fill_n(dst + p * P + n, P - n, T(0));
        }
        for (int64_t j = 0; j < n; ++j) {  // each line read along its depth
          const S* l = line + j * ws;
          for (int64_t p = 0; p < depth; ++p) dst[p * P + j] = detail::convert<T>(l[p * ds]);
        }
      }
    }
  });
}

// Note [A panel layouts]
// The micro-kernel broadcasts one A value per row and step, so an A panel
// need not be depth-major: a row-major A (unit stride along the depth, the
// common case: mm of row-major matrices, linear's input) is packed as
// row-major panels, kRows plain row copies kDepth apart, instead of being
// transposed element by element (a strided gather that took a sizeable
// share of small batched products: docs/bench_gemm.md); the micro-kernel
// then reads row i at a fixed offset i * kDepth.
// Other A layouts are packed depth-major.
template <class T>
void pack_a(T* dst, const void* src, ScalarType type, int64_t rs, int64_t cs, int64_t rows, int64_t depth,
            bool row_panels) {
  if (!row_panels) {
    pack<T, kRows>(dst, src, type, rs, cs, rows, depth, kRows * kDepth);
    return;
  }
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      const S* s = static_cast<const S*>(src);
      for (int64_t i = 0; i < rows; ++i) {
        T* d = dst + (i / kRows) * kRows * kDepth + (i % kRows) * kDepth;
        const S* row = s + i * rs;
        for (int64_t p = 0; p < depth; ++p) d[p] = detail::convert<T>(row[p]);
      }
    }
  });
}

template <class T>
void pack_b(T* dst, const void* src, ScalarType type, int64_t rs, int64_t cs, int64_t depth, int64_t cols) {
  pack<T, kCols<T>>(dst, src, type, cs, rs, cols, depth, depth * kCols<T>);
}

// Sums the dot-product lanes of one row (halving, so the adds vectorise),
// then its tail past the last whole group of lanes.
template <class T, int kLanes, class S>
T finish_row(T* lanes, const S* row, const T* x, int64_t body, int64_t depth) {
  for (int half = kLanes / 2; half >= 1; half /= 2) {
    for (int l = 0; l < half; ++l) lanes[l] += lanes[l + half];
  }
  T sum = lanes[0];
  for (int64_t p = body; p < depth; ++p) sum += detail::convert<T>(row[p]) * x[p];
  return sum;
}

// Note [Matrix-vector rows]
// A decode step's linear layers are matrix-vector products over weights
// read once per call from memory: the rows with unit depth stride are dot
// products that must run at the memory's speed. x is widened to T once per
// call (not once per row); two rows share each load of x, each over kLanes
// independent vector accumulators; rows are prefetched kPrefetchBytes ahead
// (two streams per thread stall on memory otherwise); and the lanes are
// summed by halving, not one scalar add per lane (which cost a third of the
// instructions of a 1024-deep row).
constexpr int64_t kPrefetchBytes = 1024;

// y[i] = sum_p A(i, p) * x(p) for rows [0, rows), A(i, p) at a + i * rs + p * cs,
// x(p) at x + p * xs, both of dtype `type`. Rows with unit depth stride are
// dot products (Note [Matrix-vector rows]); a unit row stride instead
// accumulates whole columns into y (an axpy per step).
template <class T>
void gemv(T* y, const void* a, const void* x, ScalarType type, int64_t rs, int64_t cs, int64_t xs, int64_t rows,
          int64_t depth) {
  constexpr int kLanes = 4 * kVectorBytes / static_cast<int>(sizeof(T));
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      const S* A = static_cast<const S*>(a);
      const S* X = static_cast<const S*>(x);
      if (cs == 1 && xs == 1) {
        thread_local vector<T> x_buffer;  // this ISA's vector (Note [Per-ISA variants])
        if (x_buffer.size() < static_cast<size_t>(depth)) x_buffer.resize(static_cast<size_t>(depth));
        T* xt = x_buffer.data();
        for (int64_t p = 0; p < depth; ++p) xt[p] = detail::convert<T>(X[p]);
        const int64_t body = depth / kLanes * kLanes;
        constexpr int64_t ahead = kPrefetchBytes / static_cast<int64_t>(sizeof(S));
        int64_t i = 0;
        for (; i + 2 <= rows; i += 2) {
          const S* r0 = A + i * rs;
          const S* r1 = r0 + rs;
          T l0[kLanes] = {}, l1[kLanes] = {};
          for (int64_t p = 0; p < body; p += kLanes) {
            for (int64_t line = 0; line < kLanes * static_cast<int64_t>(sizeof(S)); line += 64) {
              __builtin_prefetch(reinterpret_cast<const char*>(r0 + p + ahead) + line);
              __builtin_prefetch(reinterpret_cast<const char*>(r1 + p + ahead) + line);
            }
            for (int l = 0; l < kLanes; ++l) {
              l0[l] += detail::convert<T>(r0[p + l]) * xt[p + l];
              l1[l] += detail::convert<T>(r1[p + l]) * xt[p + l];
            }
          }
          y[i] = finish_row<T, kLanes>(l0, r0, xt, body, depth);
          y[i + 1] = finish_row<T, kLanes>(l1, r1, xt, body, depth);
        }
        for (; i < rows; ++i) {
          const S* row = A + i * rs;
          T lanes[kLanes] = {};
          for (int64_t p = 0; p < body; p += kLanes) {
            for (int l = 0; l < kLanes; ++l) lanes[l] += detail::convert<T>(row[p + l]) * xt[p + l];
          }
          y[i] = finish_row<T, kLanes>(lanes, row, xt, body, depth);
        }
        return;
      }
      std::fill_n(y, rows, T(0));
      if (rs == 1) {
        for (int64_t p = 0; p < depth; ++p) {
          const S* column = A + p * cs;
          const T xp = detail::convert<T>(X[p * xs]);
          for (int64_t i = 0; i < rows; ++i) y[i] += detail::convert<T>(column[i]) * xp;
        }
        return;
      }
      for (int64_t i = 0; i < rows; ++i) {
        T sum = 0;
        for (int64_t p = 0; p < depth; ++p) sum += detail::convert<T>(A[i * rs + p * cs]) * detail::convert<T>(X[p * xs]);
        y[i] = sum;
      }
    }
  });
}

// Block sizes (Note [GEMM blocking] in gemm.cpp): an A panel (kRows x kc)
// stays in L1, a packed B block (kc x nc, about 1 MB) in L2, the packed A
// block (mc x kc, a few MB) in L3.
template <class T, int... R>
void fill_micro(detail::GemmKernel<T>& kernel, std::integer_sequence<int, R...>) {
  ((kernel.micro[0][R + 1] = &micro<T, R + 1, false>), ...);
  ((kernel.micro[1][R + 1] = &micro<T, R + 1, true>), ...);
  ((kernel.micro_direct[R + 1] = &micro_direct<T, R + 1>), ...);
}

template <class T>
detail::GemmKernel<T> kernel() {
  constexpr int64_t kc = kDepth;
  detail::GemmKernel<T> kernel{};
  kernel.mr = kRows;
  kernel.nr = kCols<T>;
  kernel.kc = kc;
  kernel.nc = (int64_t{1} << 20) / (kc * static_cast<int64_t>(sizeof(T))) / kCols<T> * kCols<T>;
  kernel.mc = 2040 / kRows * kRows;
  fill_micro(kernel, std::make_integer_sequence<int, kRows>{});
  kernel.pack_a = &pack_a<T>;
  kernel.pack_b = &pack_b<T>;
  kernel.gemv = &gemv<T>;
  return kernel;
}

}  // namespace

const detail::GemmKernels& gemm_kernels() {
  static const detail::GemmKernels kernels{kernel<float>(), kernel<double>()};
  return kernels;
}

}  // namespace mlu::kernels::MLU_ISA_NS
