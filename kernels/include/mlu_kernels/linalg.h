// Batched dense linear algebra: LAPACK's factorizations and solvers over a
// batch of column-major matrices, one matrix per compute thread.
//
// Every routine runs the LAPACK routine PyTorch's CPU ops call, with the
// same arguments (workspace sizes from one query per thread, uplo, trans,
// jobz), on the process's LAPACK (Note [Which MKL] in src/common/vendor/mkl.h).
// Matrices of a batch go to the pool's threads, one at a time each, with the
// library's own threading off. `infos` (one int32 per matrix) receive
// LAPACK's info: 0, or the failing minor / diagonal element / unconverged
// count, exactly as the CPU reports it.
//
// Element types: Float32, Float64, ComplexFloat, ComplexDouble. Callers check
// lapack_available() first; the routines assume it.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/layout.h"

namespace mlu::kernels {

// A batch of column-major matrices: element (i, j) of matrix b lives at
// `data` + (b * batch_stride + i + j * ld) elements; ld >= max(1, rows).
struct MatrixBatch {
  void* data = nullptr;
  int64_t batch = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// A batch of matrices at any strides (an input as the caller has it):
// element (i, j) of matrix b at `data` + offset(b) + i * row_stride +
// j * col_stride elements, offset(b) the row-major unravelling of b over
// `batch` (ndim 0: one matrix) with `batch_strides`.
struct StridedMatrices {
  const void* data = nullptr;
  Shape batch;
  Strides batch_strides;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

// Whether the process has a LAPACK for `type` (and the build allows vendor libraries).
bool lapack_available(ScalarType type);

// ?potrf: the Cholesky factor in the `upper` or lower triangle of each
// square matrix (the other triangle is left as it was).
void cholesky(ScalarType type, const MatrixBatch& a, bool upper, int32_t* infos);

// linalg.cholesky's impl, one pass per matrix while it is in cache: l[b]
// <- the `upper` / lower triangle of a[b], the rest zero (the CPU's
// triu_out / tril_out), then ?potrf on l[b]. `a` may be `l` itself (the
// same elements at the same strides), never a partial overlap.
void cholesky_of(ScalarType type, const StridedMatrices& a, const MatrixBatch& l, bool upper, int32_t* infos);

// ?potri on each factor in the `upper` / lower triangle, then the other
// triangle filled with the conjugate of its mirror: the full inverse.
void cholesky_inverse(ScalarType type, const MatrixBatch& a, bool upper, int32_t* infos);

// ?potrs: b[i] <- A^-1 b[i] from the Cholesky factor of A in a[i]'s
// `upper` / lower triangle. (potrs reports only illegal arguments, never a
// singular factor: the CPU's stop at the first failing matrix never happens.)
void cholesky_solve(ScalarType type, const MatrixBatch& a, const MatrixBatch& b, bool upper, int32_t* infos);

// ?getrf: LU with partial pivoting in place; `pivots` (1-based, as LAPACK
// writes them) min(rows, cols) per matrix, `pivot_stride` apart.
void lu_factor(ScalarType type, const MatrixBatch& a, int32_t* pivots, int64_t pivot_stride, int32_t* infos);

// For each right-hand side matrix b[i] (square LU, b rows = LU's order):
// ?getrs with LU[lu_index[i]] (lu_index null: LU[i]) and its pivots,
// `trans` 'N', 'T' or 'C'.
void lu_solve(ScalarType type, const MatrixBatch& lu, const int32_t* pivots, int64_t pivot_stride,
              const MatrixBatch& b, const int64_t* lu_index, char trans);

// ?trsm: b[i] <- op(A)^-1 b[i] (left) or b[i] op(A)^-1 (right), A =
// a[a_index[i]] (a_index null: a[i]), triangular in its `upper` / lower part,
// op by `trans` ('N', 'T', 'C'), `unit` diagonal assumed 1.
void triangular_solve(ScalarType type, const MatrixBatch& a, const MatrixBatch& b, const int64_t* a_index,
                      bool left, bool upper, char trans, bool unit);

// ?sytrf (?hetrf where `hermitian` and complex): the LDL^T (LDL^H)
// factorization in place, read from and written to the `upper` / lower
// triangle; `pivots` in LAPACK's form (1-based, negative for 2x2 blocks), n
// per matrix, `pivot_stride` apart.
void ldl_factor(ScalarType type, const MatrixBatch& a, int32_t* pivots, int64_t pivot_stride, int32_t* infos,
                bool upper, bool hermitian);

// ?sytrs / ?hetrs: b[i] <- A^-1 b[i] from the factorization ld[ld_index[i]]
// (ld_index null: ld[i]) and its pivots.
void ldl_solve(ScalarType type, const MatrixBatch& ld, const int32_t* pivots, int64_t pivot_stride,
               const MatrixBatch& b, const int64_t* ld_index, bool upper, bool hermitian);

// ?geqrf: QR in Householder form in place; tau min(rows, cols) per matrix.
void geqrf(ScalarType type, const MatrixBatch& a, void* tau, int64_t tau_stride);

// ?orgqr / ?ungqr: the first `cols` columns of Q from k reflectors (a holds
// them, rows >= cols >= k); columns past k need not be initialised.
void orgqr(ScalarType type, const MatrixBatch& a, const void* tau, int64_t tau_stride, int64_t k);

// ?ormqr / ?unmqr: c[i] <- op(Q) c[i] (left) or c[i] op(Q), Q from k
// reflectors in a[i]; op Q^H (Q^T for real types) when `transpose`.
void ormqr(ScalarType type, const MatrixBatch& a, const void* tau, int64_t tau_stride, int64_t k,
           const MatrixBatch& c, bool left, bool transpose);

// ?syevd / ?heevd: eigenvalues (real, ascending; `values`, of the real type,
// `values_stride` apart) and, with compute_vectors, the eigenvectors in
// place of each Hermitian matrix (read from its `upper` / lower triangle).
void eigh(ScalarType type, const MatrixBatch& a, void* values, int64_t values_stride, int32_t* infos, bool upper,
          bool compute_vectors);

// ?geev: eigenvalues and, with compute_vectors, right eigenvectors of each
// general square matrix (a is destroyed). Real types write `values` as the
// CPU's buffer of 2n reals per matrix, real parts then imaginary parts, and
// the eigenvectors in LAPACK's packed real form (a complex pair as two
// columns); complex types write n complex values and complex vectors.
// `values_stride` apart; vectors' ld is a's.
void eig(ScalarType type, const MatrixBatch& a, void* values, int64_t values_stride, void* vectors, int32_t* infos,
         bool compute_vectors);

// The complex eigenvectors from geev's packed real ones (`real_type`
// Float32 / Float64): column j is VR(:, j) for a real eigenvalue, VR(:, j)
// +- i VR(:, j+1) for a conjugate pair (the CPU's
// linalg_eig_make_complex_eigenvectors). n x n column-major matrices, n * n
// apart; values n complex per matrix.
void eig_complex_vectors(ScalarType real_type, int64_t batch, int64_t n, const void* values,
                         const void* real_vectors, void* complex_vectors);

// ?gesdd: singular values (real, descending, `s_stride` apart) and, with
// compute_uv, U (rows x rows, or rows x min with !full_matrices) and V^H
// (cols x cols, or min x cols); a is destroyed.
void svd(ScalarType type, const MatrixBatch& a, void* s, int64_t s_stride, const MatrixBatch& u,
         const MatrixBatch& vh, int32_t* infos, bool full_matrices, bool compute_uv);

}  // namespace mlu::kernels
