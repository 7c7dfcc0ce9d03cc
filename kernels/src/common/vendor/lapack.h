// The process's LAPACK (oneMKL's, Note [Which MKL] in mkl.h): the routines
// the batched linear-algebra kernels call, one table per element type.
//
// Invariants: names follow LAPACK's prefixes (s, d, c, z) and the complex
// spellings of the symmetric routines (heevd, ungqr, unmqr); a table is
// returned only when every routine in it was found; the member that does not
// exist for a type (syevd for complex, heevd, hetrf and hetrs for real; the real or complex
// gesdd and geev) is null. Fortran interface: every argument by pointer, column-major
// matrices, no hidden string lengths (oneMKL does not read them).
#pragma once

#include <type_traits>

#include "mkl.h"

namespace mlu::kernels::vendor {

template <class T>
struct real_of {
  using type = T;
};
template <class R>
struct real_of<std::complex<R>> {
  using type = R;
};
template <class T>
using real_t = typename real_of<T>::type;
template <class T>
constexpr bool is_complex_v = !std::is_same_v<T, real_t<T>>;

template <class T>
struct Lapack {
  using R = real_t<T>;
  using I = lapack_int;
  void (*potrf)(const char* uplo, const I* n, T* a, const I* lda, I* info);
  void (*potri)(const char* uplo, const I* n, T* a, const I* lda, I* info);
  void (*potrs)(const char* uplo, const I* n, const I* nrhs, const T* a, const I* lda, T* b, const I* ldb, I* info);
  void (*getrf)(const I* m, const I* n, T* a, const I* lda, I* ipiv, I* info);
  void (*getrs)(const char* trans, const I* n, const I* nrhs, const T* a, const I* lda, const I* ipiv, T* b,
                const I* ldb, I* info);
  void (*trsm)(const char* side, const char* uplo, const char* transa, const char* diag, const I* m, const I* n,
               const T* alpha, const T* a, const I* lda, T* b, const I* ldb);
  void (*geqrf)(const I* m, const I* n, T* a, const I* lda, T* tau, T* work, const I* lwork, I* info);
  // ?orgqr (real) / ?ungqr (complex)
  void (*orgqr)(const I* m, const I* n, const I* k, T* a, const I* lda, const T* tau, T* work, const I* lwork,
                I* info);
  // ?ormqr (real) / ?unmqr (complex)
  void (*ormqr)(const char* side, const char* trans, const I* m, const I* n, const I* k, const T* a, const I* lda,
                const T* tau, T* c, const I* ldc, T* work, const I* lwork, I* info);
  // Symmetric indefinite (Bunch-Kaufman) factorization and solve: ?sytrf /
  // ?sytrs for every type; the Hermitian ?hetrf / ?hetrs for complex types only.
  void (*sytrf)(const char* uplo, const I* n, T* a, const I* lda, I* ipiv, T* work, const I* lwork, I* info);
  void (*hetrf)(const char* uplo, const I* n, T* a, const I* lda, I* ipiv, T* work, const I* lwork, I* info);
  void (*sytrs)(const char* uplo, const I* n, const I* nrhs, const T* a, const I* lda, const I* ipiv, T* b,
                const I* ldb, I* info);
  void (*hetrs)(const char* uplo, const I* n, const I* nrhs, const T* a, const I* lda, const I* ipiv, T* b,
                const I* ldb, I* info);
  // Real types only.
  void (*syevd)(const char* jobz, const char* uplo, const I* n, T* a, const I* lda, R* w, T* work, const I* lwork,
                I* iwork, const I* liwork, I* info);
  // Complex types only.
  void (*heevd)(const char* jobz, const char* uplo, const I* n, T* a, const I* lda, R* w, T* work, const I* lwork,
                R* rwork, const I* lrwork, I* iwork, const I* liwork, I* info);
  // Real types only: eigenvalues as (wr, wi).
  void (*geev)(const char* jobvl, const char* jobvr, const I* n, T* a, const I* lda, R* wr, R* wi, T* vl,
               const I* ldvl, T* vr, const I* ldvr, T* work, const I* lwork, I* info);
  // Complex types only.
  void (*geev_c)(const char* jobvl, const char* jobvr, const I* n, T* a, const I* lda, T* w, T* vl, const I* ldvl,
                 T* vr, const I* ldvr, T* work, const I* lwork, R* rwork, I* info);
  // Real types only.
  void (*gesdd)(const char* jobz, const I* m, const I* n, T* a, const I* lda, R* s, T* u, const I* ldu, T* vt,
                const I* ldvt, T* work, const I* lwork, I* iwork, I* info);
  // Complex types only.
  void (*gesdd_c)(const char* jobz, const I* m, const I* n, T* a, const I* lda, R* s, T* u, const I* ldu, T* vt,
                  const I* ldvt, T* work, const I* lwork, R* rwork, I* iwork, I* info);
};

// The table for T (float, double, c32, c64), or nullptr where the process
// has no LAPACK.
template <class T>
const Lapack<T>* lapack();

}  // namespace mlu::kernels::vendor
