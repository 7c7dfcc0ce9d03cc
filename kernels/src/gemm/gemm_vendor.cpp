#include "gemm_vendor.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <type_traits>


#include "gemm_dnnl.h"
#include "mlu_kernels/parallel.h"

#include "../vendor/mkl.h"

namespace mlu::kernels {
namespace {

// Note [Which library on which host]
// MKL is tuned for Intel's cores and takes generic code paths on other
// vendors' CPUs: there our kernel is the faster one, on Intel MKL is
// (benchmarks/bench_gemm.py measures both side by side; the figures are in
// docs/bench_gemm.md). MKL is opt-in for now (MLU_KERNELS_GEMM=mkl): run
// through it, the layout sweep (tests/test_layouts.py) differs from the CPU
// in the backward of cholesky_inverse, cholesky_solve and pinverse on
// expanded inputs. Those inputs are rank one (every row the same), the
// results ~1e30 or NaN, so any other order of sums moves them: not a wrong
// product (it stayed after the two copies of MKL were untangled, Note [Which
// MKL]). The sweep needs those samples marked ill-conditioned before MKL can
// become the default on Intel hosts (a CPUID vendor check).
GemmLibrary from_env() {
  const char* env = std::getenv("MLU_KERNELS_GEMM");
  const auto asked = [&](const char* name) { return env != nullptr && std::strcmp(env, name) == 0; };
  if (asked("mkl") && detail::vendor_gemm_linked()) return GemmLibrary::Mkl;
  if (asked("own")) return GemmLibrary::Own;
  return detail::dnnl_gemm_linked() ? GemmLibrary::Dnnl : GemmLibrary::Own;
}

std::atomic<int>& preference() {
  static std::atomic<int> library{static_cast<int>(from_env())};
  return library;
}

}  // namespace

bool gemm_library_available(GemmLibrary library) {
  switch (library) {
    case GemmLibrary::Mkl: return detail::vendor_gemm_linked();
    case GemmLibrary::Dnnl: return detail::dnnl_gemm_linked();
    case GemmLibrary::Own: break;
  }
  return true;
}

GemmLibrary gemm_library() { return static_cast<GemmLibrary>(preference().load(std::memory_order_relaxed)); }

void set_gemm_library(GemmLibrary library) {
  if (!gemm_library_available(library)) library = GemmLibrary::Own;
  preference().store(static_cast<int>(library), std::memory_order_relaxed);
}

const char* gemm_library_name(GemmLibrary library) {
  return library == GemmLibrary::Mkl ? "mkl" : library == GemmLibrary::Dnnl ? "dnnl" : "own";
}

namespace detail {

bool vendor_gemm_linked() { return MLU_KERNELS_WITH_MKL && vendor::blas() != nullptr; }

namespace {

// One operand as a row-major BLAS sees it: its storage, possibly transposed.
struct BlasOperand {
  bool ok = false;
  bool trans = false;
  vendor::lapack_int ld = 0;
};

// A rows x cols operand with element strides (rs, cs). A stride along a
// dimension of size 1 is never used, so it may be anything.
BlasOperand blas_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cols == 1) cs = 1;
  if (rows == 1 && cs == 1) rs = cols;
  BlasOperand op;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1) && rs <= INT_MAX) {
    op = {true, false, static_cast<vendor::lapack_int>(rs)};
  } else if (rs == 1 && cs >= std::max<int64_t>(rows, 1) && cs <= INT_MAX) {
    op = {true, true, static_cast<vendor::lapack_int>(cs)};
  } else if (rows == 1 && rs == 1 && cs >= 1 && cs <= INT_MAX) {
    op = {true, true, static_cast<vendor::lapack_int>(cs)};  // one row, a column of a column-major matrix
  }
  return op;
}

// How many blocks of rows and of columns to cut C into for `threads`
// threads: the factorisation of threads whose smallest block side is
// largest (square-ish blocks keep each thread's packed panels small).
void split(int64_t m, int64_t n, int threads, int64_t& row_parts, int64_t& col_parts) {
  row_parts = threads;
  col_parts = 1;
  int64_t best = -1;
  for (int64_t r = 1; r <= threads; ++r) {
    if (threads % r != 0) continue;
    const int64_t c = threads / r;
    const int64_t side = std::min(m / r, n / c);
    if (side > best) {
      best = side;
      row_parts = r;
      col_parts = c;
    }
  }
}

// Row-major C = alpha op(A) op(B) + beta C. The Fortran interface is
// column-major, where the same memory holds C^T = op(B)^T op(A)^T: the
// operands swap and keep their transpose flags.
template <class C>
void call_blas(const vendor::Blas& blas, ScalarType type, const BlasOperand& ao, const BlasOperand& bo, int64_t m,
               int64_t n, int64_t k, double alpha, const void* a, const void* b, double beta, C* c, int64_t ldc) {
  using vendor::lapack_int;
  const auto mi = static_cast<lapack_int>(m), ni = static_cast<lapack_int>(n), ki = static_cast<lapack_int>(k);
  const auto lc = static_cast<lapack_int>(ldc);
  const char ta = ao.trans ? 'T' : 'N', tb = bo.trans ? 'T' : 'N';
  vendor::SerialVendorCall serial;
  if constexpr (std::is_same_v<C, double>) {
    blas.dgemm(&tb, &ta, &ni, &mi, &ki, &alpha, static_cast<const double*>(b), &bo.ld,
               static_cast<const double*>(a), &ao.ld, &beta, c, &lc);
  } else if (type == ScalarType::Float32) {
    const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
    blas.sgemm(&tb, &ta, &ni, &mi, &ki, &fa, static_cast<const float*>(b), &bo.ld, static_cast<const float*>(a),
               &ao.ld, &fb, c, &lc);
  } else {
    const auto fn = type == ScalarType::BFloat16 ? blas.gemm_bf16 : blas.gemm_f16;
    const auto flag = [](const BlasOperand& op) { return op.trans ? vendor::kCblasTrans : vendor::kCblasNoTrans; };
    fn(vendor::kCblasRowMajor, flag(ao), flag(bo), mi, ni, ki, static_cast<float>(alpha),
       static_cast<const uint16_t*>(a), ao.ld, static_cast<const uint16_t*>(b), bo.ld, static_cast<float>(beta), c,
       lc);
  }
}

// Problems below this many multiply-adds run on one thread (as in gemm.cpp).
constexpr int64_t kSerialMacs = int64_t{1} << 18;

}  // namespace

bool vendor_gemm(ScalarType type, int64_t m, int64_t n, int64_t k, double alpha, double beta, const void* a,
                 int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, void* c, int64_t ldc,
                 bool serial) {
  if (gemm_library() != GemmLibrary::Mkl) return false;
  const vendor::Blas* blas = vendor::blas();
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || ldc > INT_MAX || k < 1) return false;
  const BlasOperand ao = blas_operand(m, k, a_rs, a_cs), bo = blas_operand(k, n, b_rs, b_cs);
  if (!ao.ok || !bo.ok || ldc < n) return false;
  const int64_t es = static_cast<int64_t>(element_size(type));
  const int threads = serial || in_parallel_region() || m * n * k < kSerialMacs ? 1 : num_threads();
  int64_t row_parts = 1, col_parts = 1;
  if (threads > 1) split(m, n, threads, row_parts, col_parts);
  const auto run = [&](auto c_tag) {
    using C = typename decltype(c_tag)::type;
    C* cd = static_cast<C*>(c);
    parallel_for(0, row_parts * col_parts, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t part = lo; part < hi; ++part) {
        const int64_t r = part / col_parts, q = part % col_parts;
        const int64_t i0 = r * m / row_parts, i1 = (r + 1) * m / row_parts;
        const int64_t j0 = q * n / col_parts, j1 = (q + 1) * n / col_parts;
        if (i1 == i0 || j1 == j0) continue;
        const char* ap = static_cast<const char*>(a) + i0 * a_rs * es;
        const char* bp = static_cast<const char*>(b) + j0 * b_cs * es;
        call_blas(*blas, type, ao, bo, i1 - i0, j1 - j0, k, alpha, ap, bp, beta, cd + i0 * ldc + j0, ldc);
      }
    });
  };
  if (type == ScalarType::Float64) {
    run(std::type_identity<double>{});
  } else {
    run(std::type_identity<float>{});
  }
  return true;
}

}  // namespace detail
}  // namespace mlu::kernels
