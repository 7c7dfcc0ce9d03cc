// The GEMM micro-kernel and packing for one instruction set (compiled once
// per ISA, like pointwise_isa.cpp). CMake compiles this file with
// -ffp-contract=fast, unlike the other kernels: `acc += a * b` on the vector
// types below must become one fused multiply-add where the ISA has it (the
// CPU's BLAS fuses too; a GEMM without FMA runs at half speed). Results may
// therefore differ by rounding between ISAs, within the usual GEMM tolerance.
#include "../intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "../convert.h"
#include "../dispatch.h"
#include "microkernel.h"

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

template <class T>
void micro(int64_t k, const T* __restrict a, const T* __restrict b, T* __restrict c, int64_t ldc, T alpha,
           T beta) {
  constexpr int W = kVectorBytes / static_cast<int>(sizeof(T));
  constexpr int MR = kRows, NV = kVectorsPerRow, NR = kCols<T>;
  typedef T V __attribute__((vector_size(kVectorBytes)));
  V acc[MR][NV];
  // C's tile is read and written only after the depth loop: start fetching
  // it now so those accesses do not wait on memory.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + NR - 1, 1);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V{};
  }
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + v * W, sizeof(V));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V av = broadcast<V>(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
    }
    a += MR;
    b += NR;
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

// Packs `width` lines (element j of depth step p at src + j * ws + p * ds)
// into panels of P lines: panel q holds depth steps of P values, lines past
// `width` zero. Element conversion to T happens here, once per element.
template <class T, int P>
void pack(T* dst, const void* src, ScalarType type, int64_t ws, int64_t ds, int64_t width, int64_t depth) {
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      const S* s = static_cast<const S*>(src);
      for (int64_t w0 = 0; w0 < width; w0 += P, dst += depth * P) {
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

template <class T>
void pack_a(T* dst, const void* src, ScalarType type, int64_t rs, int64_t cs, int64_t rows, int64_t depth) {
  pack<T, kRows>(dst, src, type, rs, cs, rows, depth);
}

template <class T>
void pack_b(T* dst, const void* src, ScalarType type, int64_t rs, int64_t cs, int64_t depth, int64_t cols) {
  pack<T, kCols<T>>(dst, src, type, cs, rs, cols, depth);
}

// y[i] = sum_p A(i, p) * x(p) for rows [0, rows), A(i, p) at a + i * rs + p * cs,
// x(p) at x + p * xs, both of dtype `type`. Rows with unit depth stride are
// dot products over kLanes independent vector accumulators; a unit row
// stride instead accumulates whole columns into y (an axpy per step).
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
        for (int64_t i = 0; i < rows; ++i) {
          const S* row = A + i * rs;
          T lanes[kLanes] = {};
          int64_t p = 0;
          for (; p + kLanes <= depth; p += kLanes) {
            for (int l = 0; l < kLanes; ++l) {
              lanes[l] += detail::convert<T>(row[p + l]) * detail::convert<T>(X[p + l]);
            }
          }
          T sum = 0;
          for (; p < depth; ++p) sum += detail::convert<T>(row[p]) * detail::convert<T>(X[p]);
          for (int l = 0; l < kLanes; ++l) sum += lanes[l];
          y[i] = sum;
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
template <class T>
detail::GemmKernel<T> kernel() {
  constexpr int64_t kc = 384;
  constexpr int64_t nc = (int64_t{1} << 20) / (kc * static_cast<int64_t>(sizeof(T))) / kCols<T> * kCols<T>;
  constexpr int64_t mc = 2040 / kRows * kRows;
  return {kRows, kCols<T>, mc, kc, nc, &micro<T>, &pack_a<T>, &pack_b<T>, &gemv<T>};
}

}  // namespace

const detail::GemmKernels& gemm_kernels() {
  static const detail::GemmKernels kernels{kernel<float>(), kernel<double>()};
  return kernels;
}

}  // namespace mlu::kernels::MLU_ISA_NS
