// Batched LAPACK calls (mlu_kernels/linalg.h). Each routine mirrors the
// CPU's apply_* function in PyTorch's BatchLinearAlgebraKernel.cpp — same
// routine, same workspace query, same character arguments — so a matrix
// gives the CPU's bits; only the loop over the batch differs: chunks of it go
// to the pool's threads, each with its own workspace.
#include "mlu_kernels/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../common/unravel.h"
#include "../common/vendor/lapack.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

using vendor::c32;
using vendor::c64;
using vendor::lapack_int;
using vendor::real_t;
using I = lapack_int;

template <class T>
const vendor::Lapack<T>& lib() {
  return *vendor::lapack<T>();
}

// Calls fn.template operator()<T>() with T the C++ type of `type`.
template <class F>
void dispatch(ScalarType type, F&& fn) {
  switch (type) {
    case ScalarType::Float32: fn.template operator()<float>(); break;
    case ScalarType::Float64: fn.template operator()<double>(); break;
    case ScalarType::ComplexFloat: fn.template operator()<c32>(); break;
    default: fn.template operator()<c64>(); break;
  }
}

template <class T>
T* matrix(const MatrixBatch& a, int64_t i) {
  return static_cast<T*>(a.data) + i * a.batch_stride;
}

I to_int(int64_t v) { return static_cast<I>(v); }

// LAPACK's optimal workspace size from a query's work[0] (PyTorch's
// lapack_work_to_int: rounded up past float rounding, at least 1).
template <class T>
I work_size(T value) {
  real_t<T> v;
  if constexpr (vendor::is_complex_v<T>) {
    v = value.real();
  } else {
    v = value;
  }
  const auto next = std::nextafter(v, std::numeric_limits<real_t<T>>::infinity());
  return std::max<I>(1, static_cast<I>(std::ceil(next)));
}

// A matrix routine's work, in units of a Cholesky factorization's time per
// n^3: rows * cols * min(rows, cols) times the routine's `relative_cost`
// (its time over ?potrf's on small matrices: an 8 x 8 ?syevd takes ~25
// times as long, a ?gesdd ~60 times), and 2 * n^2 * nrhs for a solve with
// a factor (a ?getrs with n right-hand sides costs about what a ?getrf does).
int64_t factor_work(const MatrixBatch& a, int64_t relative_cost = 1) {
  return std::max<int64_t>(1, a.rows * a.cols * std::min(a.rows, a.cols) * relative_cost);
}
int64_t solve_work(const MatrixBatch& a, const MatrixBatch& b) {
  return std::max<int64_t>(1, 2 * a.rows * a.rows * b.cols);
}

// Note [Chunks of small matrices]
// Waking a sleeping pool thread costs tens of microseconds, as much as a few
// hundred 8 x 8 factorizations. A chunk therefore gets at least
// kChunkWork units of work (~30 us at small-matrix speed): a batch of tiny
// matrices runs on the device thread alone, as the CPU runs it on the
// calling thread, and larger ones still split over every core.
constexpr int64_t kChunkWork = int64_t{1} << 17;

// Runs body(i) for every matrix of a batch of `n`, each `work` units (above),
// in chunks on the pool's threads, with MKL's threading off. `setup()` runs
// once per chunk and its result (the chunk's workspace) is passed to every
// body call.
template <class Setup, class Body>
void for_each_matrix(int64_t n, int64_t work, Setup setup, Body body) {
  parallel_for(0, n, std::max<int64_t>(1, kChunkWork / work), [&](int64_t lo, int64_t hi) {
    vendor::SerialVendorCall serial;
    auto workspace = setup();
    for (int64_t i = lo; i < hi; ++i) body(i, workspace);
  });
}

struct NoWorkspace {};

template <class T>
T conj_of(T v) {
  if constexpr (vendor::is_complex_v<T>) {
    return std::conj(v);
  } else {
    return v;
  }
}

}  // namespace

bool lapack_available(ScalarType type) {
#if MLU_KERNELS_WITH_MKL
  switch (type) {
    case ScalarType::Float32: return vendor::lapack<float>() != nullptr;
    case ScalarType::Float64: return vendor::lapack<double>() != nullptr;
    case ScalarType::ComplexFloat: return vendor::lapack<c32>() != nullptr;
    case ScalarType::ComplexDouble: return vendor::lapack<c64>() != nullptr;
    default: return false;
  }
#else
  (void)type;
  return false;
#endif
}

void cholesky(ScalarType type, const MatrixBatch& a, bool upper, int32_t* infos) {
  detail::VerboseCall call("cholesky");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    const char uplo = upper ? 'U' : 'L';
    const I n = to_int(a.rows), lda = to_int(a.ld);
    for_each_matrix(a.batch, factor_work(a), [] { return NoWorkspace{}; },
                    [&](int64_t i, NoWorkspace&) { lib<T>().potrf(&uplo, &n, matrix<T>(a, i), &lda, &infos[i]); });
  });
}

void cholesky_of(ScalarType type, const StridedMatrices& a, const MatrixBatch& l, bool upper, int32_t* infos) {
  detail::VerboseCall call("cholesky_of");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(l.batch), detail::lld(l.rows), detail::lld(l.cols));
  }
  dispatch(type, [&]<class T>() {
    const char uplo = upper ? 'U' : 'L';
    const I n = to_int(l.rows), ldl = to_int(l.ld);
    const T* source = static_cast<const T*>(a.data);
    for_each_matrix(l.batch, factor_work(l), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      const T* s = source + detail::unravel_offset(i, a.batch, a.batch_strides);
      T* d = matrix<T>(l, i);
      for (int64_t c = 0; c < n; ++c) {
        for (int64_t r = 0; r < n; ++r) {
          const bool kept = upper ? r <= c : r >= c;
          d[r + c * l.ld] = kept ? s[r * a.row_stride + c * a.col_stride] : T{};
        }
      }
      lib<T>().potrf(&uplo, &n, d, &ldl, &infos[i]);
    });
  });
}

void cholesky_inverse(ScalarType type, const MatrixBatch& a, bool upper, int32_t* infos) {
  detail::VerboseCall call("cholesky_inverse");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    const char uplo = upper ? 'U' : 'L';
    const I n = to_int(a.rows), lda = to_int(a.ld);
    for_each_matrix(a.batch, factor_work(a, 2), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      T* m = matrix<T>(a, i);
      lib<T>().potri(&uplo, &n, m, &lda, &infos[i]);
      // potri writes one triangle; the other is its conjugate mirror (the
      // CPU's apply_reflect_conj_tri_single), element (r, c) at m[r + c * lda].
      for (int64_t c = 0; c < n; ++c) {
        for (int64_t r = 0; r < n; ++r) {
          const bool missing = upper ? r > c : r < c;
          if (missing) m[r + c * lda] = conj_of(m[c + r * lda]);
        }
      }
    });
  });
}

void cholesky_solve(ScalarType type, const MatrixBatch& a, const MatrixBatch& b, bool upper, int32_t* infos) {
  detail::VerboseCall call("cholesky_solve");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(b.batch), detail::lld(b.rows), detail::lld(b.cols));
  }
  dispatch(type, [&]<class T>() {
    const char uplo = upper ? 'U' : 'L';
    const I n = to_int(a.rows), nrhs = to_int(b.cols), lda = to_int(a.ld), ldb = to_int(b.ld);
    for_each_matrix(b.batch, solve_work(a, b), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      lib<T>().potrs(&uplo, &n, &nrhs, matrix<T>(a, i), &lda, matrix<T>(b, i), &ldb, &infos[i]);
    });
  });
}

void lu_factor(ScalarType type, const MatrixBatch& a, int32_t* pivots, int64_t pivot_stride, int32_t* infos) {
  detail::VerboseCall call("lu_factor");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    const I m = to_int(a.rows), n = to_int(a.cols), lda = to_int(a.ld);
    for_each_matrix(a.batch, factor_work(a, 2), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      lib<T>().getrf(&m, &n, matrix<T>(a, i), &lda, pivots + i * pivot_stride, &infos[i]);
    });
  });
}

void lu_solve(ScalarType type, const MatrixBatch& lu, const int32_t* pivots, int64_t pivot_stride,
              const MatrixBatch& b, const int64_t* lu_index, char trans) {
  detail::VerboseCall call("lu_solve");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(b.batch), detail::lld(b.rows), detail::lld(b.cols));
  }
  dispatch(type, [&]<class T>() {
    const I n = to_int(lu.rows), nrhs = to_int(b.cols), lda = to_int(lu.ld), ldb = to_int(b.ld);
    for_each_matrix(b.batch, solve_work(lu, b), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      const int64_t j = lu_index != nullptr ? lu_index[i] : i;
      I info = 0;
      lib<T>().getrs(&trans, &n, &nrhs, matrix<T>(lu, j), &lda, pivots + j * pivot_stride, matrix<T>(b, i), &ldb,
                     &info);
    });
  });
}

void triangular_solve(ScalarType type, const MatrixBatch& a, const MatrixBatch& b, const int64_t* a_index,
                      bool left, bool upper, char trans, bool unit) {
  detail::VerboseCall call("triangular_solve");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(b.batch), detail::lld(b.rows), detail::lld(b.cols));
  }
  dispatch(type, [&]<class T>() {
    const char side = left ? 'L' : 'R', uplo = upper ? 'U' : 'L', diag = unit ? 'U' : 'N';
    // As the CPU: left allows a rectangular A (its first cols rows of b are solved).
    const I m = to_int(left ? a.cols : b.rows), n = to_int(b.cols);
    const I lda = to_int(a.ld), ldb = to_int(b.ld);
    const T one(1);
    for_each_matrix(b.batch, solve_work(a, b), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      const int64_t j = a_index != nullptr ? a_index[i] : i;
      lib<T>().trsm(&side, &uplo, &trans, &diag, &m, &n, &one, matrix<T>(a, j), &lda, matrix<T>(b, i), &ldb);
    });
  });
}

void ldl_factor(ScalarType type, const MatrixBatch& a, int32_t* pivots, int64_t pivot_stride, int32_t* infos,
                bool upper, bool hermitian) {
  detail::VerboseCall call("ldl_factor");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    const char uplo = upper ? 'U' : 'L';
    const I n = to_int(a.rows), lda = to_int(a.ld);
    // Real types factor symmetric and Hermitian alike (the CPU's lapackLdlHermitian<float> is ssytrf).
    const auto factor = vendor::is_complex_v<T> && hermitian ? lib<T>().hetrf : lib<T>().sytrf;
    for_each_matrix(
        a.batch, factor_work(a, 2),
        [&] {
          T query{};
          I info = 0, lwork = -1;
          factor(&uplo, &n, matrix<T>(a, 0), &lda, pivots, &query, &lwork, &info);
          // The CPU's size: the query's value truncated, at least 1.
          return std::vector<T>(static_cast<size_t>(std::max<I>(1, static_cast<I>(std::real(query)))));
        },
        [&](int64_t i, std::vector<T>& work) {
          const I lwork = to_int(static_cast<int64_t>(work.size()));
          factor(&uplo, &n, matrix<T>(a, i), &lda, pivots + i * pivot_stride, work.data(), &lwork, &infos[i]);
        });
  });
}

void ldl_solve(ScalarType type, const MatrixBatch& ld, const int32_t* pivots, int64_t pivot_stride,
               const MatrixBatch& b, const int64_t* ld_index, bool upper, bool hermitian) {
  detail::VerboseCall call("ldl_solve");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(b.batch), detail::lld(b.rows), detail::lld(b.cols));
  }
  dispatch(type, [&]<class T>() {
    const char uplo = upper ? 'U' : 'L';
    const I n = to_int(ld.rows), nrhs = to_int(b.cols), lda = to_int(ld.ld), ldb = to_int(b.ld);
    const auto solve = vendor::is_complex_v<T> && hermitian ? lib<T>().hetrs : lib<T>().sytrs;
    for_each_matrix(b.batch, solve_work(ld, b), [] { return NoWorkspace{}; }, [&](int64_t i, NoWorkspace&) {
      const int64_t j = ld_index != nullptr ? ld_index[i] : i;
      I info = 0;
      solve(&uplo, &n, &nrhs, matrix<T>(ld, j), &lda, pivots + j * pivot_stride, matrix<T>(b, i), &ldb, &info);
    });
  });
}

void geqrf(ScalarType type, const MatrixBatch& a, void* tau, int64_t tau_stride) {
  detail::VerboseCall call("geqrf");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    const I m = to_int(a.rows), n = to_int(a.cols), lda = to_int(a.ld);
    T* taus = static_cast<T*>(tau);
    for_each_matrix(
        a.batch, factor_work(a, 4),
        [&] {
          T query{};
          I info = 0, lwork = -1;
          lib<T>().geqrf(&m, &n, matrix<T>(a, 0), &lda, taus, &query, &lwork, &info);
          // Below n, MKL reports parameter 7 as wrong (the CPU's max).
          return std::vector<T>(static_cast<size_t>(std::max<I>(n, work_size(query))));
        },
        [&](int64_t i, std::vector<T>& work) {
          const I lwork = to_int(static_cast<int64_t>(work.size()));
          I info = 0;
          lib<T>().geqrf(&m, &n, matrix<T>(a, i), &lda, taus + i * tau_stride, work.data(), &lwork, &info);
        });
  });
}

void orgqr(ScalarType type, const MatrixBatch& a, const void* tau, int64_t tau_stride, int64_t k) {
  detail::VerboseCall call("orgqr");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    const I m = to_int(a.rows), n = to_int(a.cols), kk = to_int(k), lda = to_int(a.ld);
    const T* taus = static_cast<const T*>(tau);
    for_each_matrix(
        a.batch, factor_work(a, 4),
        [&] {
          T query{};
          I info = 0, lwork = -1;
          lib<T>().orgqr(&m, &n, &kk, matrix<T>(a, 0), &lda, taus, &query, &lwork, &info);
          return std::vector<T>(static_cast<size_t>(work_size(query)));
        },
        [&](int64_t i, std::vector<T>& work) {
          const I lwork = to_int(static_cast<int64_t>(work.size()));
          I info = 0;
          lib<T>().orgqr(&m, &n, &kk, matrix<T>(a, i), &lda, taus + i * tau_stride, work.data(), &lwork, &info);
        });
  });
}

void ormqr(ScalarType type, const MatrixBatch& a, const void* tau, int64_t tau_stride, int64_t k,
           const MatrixBatch& c, bool left, bool transpose) {
  detail::VerboseCall call("ormqr");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(c.batch), detail::lld(c.rows), detail::lld(c.cols));
  }
  dispatch(type, [&]<class T>() {
    const char side = left ? 'L' : 'R';
    const char trans = transpose ? (vendor::is_complex_v<T> ? 'C' : 'T') : 'N';
    const I m = to_int(c.rows), n = to_int(c.cols), kk = to_int(k), lda = to_int(a.ld), ldc = to_int(c.ld);
    const T* taus = static_cast<const T*>(tau);
    for_each_matrix(
        c.batch, factor_work(c, 4),
        [&] {
          T query{};
          I info = 0, lwork = -1;
          lib<T>().ormqr(&side, &trans, &m, &n, &kk, matrix<T>(a, 0), &lda, taus, matrix<T>(c, 0), &ldc, &query,
                         &lwork, &info);
          return std::vector<T>(static_cast<size_t>(work_size(query)));
        },
        [&](int64_t i, std::vector<T>& work) {
          const I lwork = to_int(static_cast<int64_t>(work.size()));
          I info = 0;
          lib<T>().ormqr(&side, &trans, &m, &n, &kk, matrix<T>(a, i), &lda, taus + i * tau_stride, matrix<T>(c, i),
                         &ldc, work.data(), &lwork, &info);
        });
  });
}

void eigh(ScalarType type, const MatrixBatch& a, void* values, int64_t values_stride, int32_t* infos, bool upper,
          bool compute_vectors) {
  detail::VerboseCall call("eigh");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    using R = real_t<T>;
    const char uplo = upper ? 'U' : 'L', jobz = compute_vectors ? 'V' : 'N';
    const I n = to_int(a.rows), lda = to_int(a.ld);
    R* w = static_cast<R*>(values);
    struct Work {
      std::vector<T> work;
      std::vector<R> rwork;
      std::vector<I> iwork;
    };
    const auto call = [&](T* m, R* wi, T* work, I lwork, R* rwork, I lrwork, I* iwork, I liwork, I* info) {
      if constexpr (vendor::is_complex_v<T>) {
        lib<T>().heevd(&jobz, &uplo, &n, m, &lda, wi, work, &lwork, rwork, &lrwork, iwork, &liwork, info);
      } else {
        (void)rwork;
        (void)lrwork;
        lib<T>().syevd(&jobz, &uplo, &n, m, &lda, wi, work, &lwork, iwork, &liwork, info);
      }
    };
    for_each_matrix(
        a.batch, factor_work(a, 32),
        [&] {
          T work_query{};
          R rwork_query{};
          I iwork_query = 0, info = 0;
          call(matrix<T>(a, 0), w, &work_query, -1, &rwork_query, -1, &iwork_query, -1, &info);
          Work ws;
          ws.work.resize(static_cast<size_t>(work_size(work_query)));
          ws.iwork.resize(static_cast<size_t>(std::max<I>(1, iwork_query)));
          if constexpr (vendor::is_complex_v<T>) ws.rwork.resize(static_cast<size_t>(work_size(rwork_query)));
          return ws;
        },
        [&](int64_t i, Work& ws) {
          call(matrix<T>(a, i), w + i * values_stride, ws.work.data(), to_int(static_cast<int64_t>(ws.work.size())),
               ws.rwork.data(), to_int(static_cast<int64_t>(ws.rwork.size())), ws.iwork.data(),
               to_int(static_cast<int64_t>(ws.iwork.size())), &infos[i]);
        });
  });
}

void eig(ScalarType type, const MatrixBatch& a, void* values, int64_t values_stride, void* vectors, int32_t* infos,
         bool compute_vectors) {
  detail::VerboseCall call("eig");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    using R = real_t<T>;
    const char jobvl = 'N', jobvr = compute_vectors ? 'V' : 'N';
    const I n = to_int(a.rows), lda = to_int(a.ld), ldvl = 1, ldvr = compute_vectors ? lda : 1;
    struct Work {
      std::vector<T> work;
      std::vector<R> rwork;
    };
    const auto call = [&](T* m, T* w, T* vr, Work& ws, I lwork, I* info) {
      if constexpr (vendor::is_complex_v<T>) {
        lib<T>().geev_c(&jobvl, &jobvr, &n, m, &lda, w, nullptr, &ldvl, vr, &ldvr, ws.work.data(), &lwork,
                        ws.rwork.data(), info);
      } else {
        lib<T>().geev(&jobvl, &jobvr, &n, m, &lda, w, w + n, nullptr, &ldvl, vr, &ldvr, ws.work.data(), &lwork, info);
      }
    };
    T* w = static_cast<T*>(values);
    const auto vr_of = [&](int64_t i) {
      return compute_vectors ? static_cast<T*>(vectors) + i * a.batch_stride : nullptr;
    };
    for_each_matrix(
        a.batch, factor_work(a, 64),
        [&] {
          Work ws;
          if constexpr (vendor::is_complex_v<T>) ws.rwork.resize(static_cast<size_t>(2 * std::max<I>(n, 1)));
          ws.work.resize(1);
          I info = 0;
          call(matrix<T>(a, 0), w, vr_of(0), ws, -1, &info);
          ws.work.resize(static_cast<size_t>(work_size(ws.work[0])));
          return ws;
        },
        [&](int64_t i, Work& ws) {
          call(matrix<T>(a, i), w + i * values_stride, vr_of(i), ws, to_int(static_cast<int64_t>(ws.work.size())),
               &infos[i]);
        });
  });
}

void eig_complex_vectors(ScalarType real_type, int64_t batch, int64_t n, const void* values,
                         const void* real_vectors, void* complex_vectors) {
  detail::VerboseCall call("eig_complex_vectors");
  if (call) call.describe(real_type, "batch%lld n%lld", detail::lld(batch), detail::lld(n));
  const auto run = [&]<class R>() {
    using C = std::complex<R>;
    const C* vals = static_cast<const C*>(values);
    const R* vecs = static_cast<const R*>(real_vectors);
    C* out = static_cast<C*>(complex_vectors);
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const R* v = vecs + b * n * n;
        C* res = out + b * n * n;
        const C* val = vals + b * n;
        for (int64_t j = 0; j < n; ++j) {
          // (j + 1 < n: a pair never starts at the last column; guarded against corrupt input)
          if (val[j].imag() == R(0) || j + 1 == n) {
            for (int64_t i = 0; i < n; ++i) res[j * n + i] = C(v[j * n + i], 0);
          } else {
            for (int64_t i = 0; i < n; ++i) {
              res[j * n + i] = C(v[j * n + i], v[(j + 1) * n + i]);
              res[(j + 1) * n + i] = C(v[j * n + i], -v[(j + 1) * n + i]);
            }
            ++j;
          }
        }
      }
    });
  };
  if (real_type == ScalarType::Float32) {
    run.template operator()<float>();
  } else {
    run.template operator()<double>();
  }
}

void svd(ScalarType type, const MatrixBatch& a, void* s, int64_t s_stride, const MatrixBatch& u,
         const MatrixBatch& vh, int32_t* infos, bool full_matrices, bool compute_uv) {
  detail::VerboseCall call("svd");
  if (call) {
    call.describe(type, "batch%lld rows%lld cols%lld", detail::lld(a.batch), detail::lld(a.rows), detail::lld(a.cols));
  }
  dispatch(type, [&]<class T>() {
    using R = real_t<T>;
    const char jobz = compute_uv ? (full_matrices ? 'A' : 'S') : 'N';
    const int64_t m = a.rows, n = a.cols, mn = std::min(m, n), mx = std::max(m, n);
    const I mi = to_int(m), ni = to_int(n), lda = to_int(a.ld);
    const I ldu = compute_uv ? to_int(u.ld) : 1, ldvh = compute_uv ? to_int(vh.ld) : 1;
    R* sv = static_cast<R*>(s);
    // The CPU's computeLRWorkDim (non-Apple).
    int64_t lrwork = 5 * mn;
    if (jobz != 'N') {
      lrwork = mx > 10 * mn ? 5 * mn * mn + 5 * mn : std::max(5 * mn * mn + 5 * mn, 2 * mx * mn + 2 * mn * mn + mn);
    }
    struct Work {
      std::vector<T> work;
      std::vector<R> rwork;
      std::vector<I> iwork;
    };
    const auto call = [&](T* am, R* si, T* um, T* vm, Work& ws, I lwork, I* info) {
      if constexpr (vendor::is_complex_v<T>) {
        lib<T>().gesdd_c(&jobz, &mi, &ni, am, &lda, si, um, &ldu, vm, &ldvh, ws.work.data(), &lwork,
                         ws.rwork.data(), ws.iwork.data(), info);
      } else {
        lib<T>().gesdd(&jobz, &mi, &ni, am, &lda, si, um, &ldu, vm, &ldvh, ws.work.data(), &lwork, ws.iwork.data(),
                       info);
      }
    };
    const auto u_of = [&](int64_t i) { return compute_uv ? matrix<T>(u, i) : nullptr; };
    const auto vh_of = [&](int64_t i) { return compute_uv ? matrix<T>(vh, i) : nullptr; };
    for_each_matrix(
        a.batch, factor_work(a, 64),
        [&] {
          Work ws;
          ws.iwork.resize(static_cast<size_t>(8 * mn));
          if constexpr (vendor::is_complex_v<T>) ws.rwork.resize(static_cast<size_t>(std::max<int64_t>(lrwork, 1)));
          ws.work.resize(1);
          I info = 0;
          call(matrix<T>(a, 0), sv, u_of(0), vh_of(0), ws, -1, &info);
          ws.work.resize(static_cast<size_t>(work_size(ws.work[0])));
          return ws;
        },
        [&](int64_t i, Work& ws) {
          call(matrix<T>(a, i), sv + i * s_stride, u_of(i), vh_of(i), ws, to_int(static_cast<int64_t>(ws.work.size())),
               &infos[i]);
        });
  });
}

}  // namespace mlu::kernels
