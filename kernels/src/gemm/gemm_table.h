// The per-ISA pieces of the GEMM (gemm_isa.cpp): the register-blocked
// micro-kernel and the packing routines that feed it, with the block sizes
// they were chosen for. gemm.cpp drives them (Note [GEMM blocking]).
#pragma once

#include "../common/isa_variants.h"
#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels::detail {

// The largest register block's row count (mr) of any ISA.
constexpr int kMaxGemmRows = 12;

template <class T>
struct GemmKernel {
  // Register block: the micro-kernel computes an mr x nr tile of C.
  int mr, nr;
  // Cache blocks: rows of A per packed block (a multiple of mr), depth per
  // packed slice, columns of B per packed block (a multiple of nr).
  int64_t mc, kc, nc;
  // micro[layout][r], 1 <= r <= mr: c[i * ldc + j] = alpha * sum_p A(i, p) *
  // b[p * nr + j] + beta * c for i < r, j < nr; beta == 0 does not read c.
  // `b` is a packed B panel (k steps of nr values); `a` a packed A panel,
  // A(i, p) = a[p * mr + i] for layout 0 (depth-major), a[i * kc + p] for
  // layout 1 (row-major, rows kc apart).
  void (*micro[2][kMaxGemmRows + 1])(int64_t k, const T* a, const T* b, T* c, int64_t ldc, T alpha, T beta);
  // The same on unpacked row-major operands: A(i, p) = a[i * lda + p], B's
  // row p is nr values at b + p * ldb.
  void (*micro_direct[kMaxGemmRows + 1])(int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                                         int64_t ldc, T alpha, T beta);
  // Packs rows [0, rows) x depth [0, depth <= kc) of the matrix at `src`
  // (dtype `type`, element (i, p) at src + i * rs + p * cs) into
  // ceil(rows / mr) panels of mr * kc elements, in the layout micro[layout]
  // reads (row_panels: layout 1). pack_b packs B's columns the same way:
  // element (p, j) at src + p * rs + j * cs, panels of depth x nr, columns
  // past `cols` zero.
  void (*pack_a)(T* dst, const void* src, ScalarType type, int64_t rs, int64_t cs, int64_t rows, int64_t depth,
                 bool row_panels);
  void (*pack_b)(T* dst, const void* src, ScalarType type, int64_t rs, int64_t cs, int64_t depth, int64_t cols);
  // Matrix-vector product for a C with one column (or, transposed, one row):
  // y[i] = sum_p A(i, p) * x(p), A(i, p) at a + i * rs + p * cs and x(p) at
  // x + p * xs, dtype `type`; y contiguous in T.
  void (*gemv)(T* y, const void* a, const void* x, ScalarType type, int64_t rs, int64_t cs, int64_t xs,
               int64_t rows, int64_t depth);
};

struct GemmKernels {
  GemmKernel<float> f;
  GemmKernel<double> d;
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::GemmKernels& gemm_kernels())
