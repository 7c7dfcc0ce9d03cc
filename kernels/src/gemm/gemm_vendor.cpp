#include "gemm_vendor.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>


#include "gemm_dnnl.h"
#include "mlu_kernels/parallel.h"

#include "../common/vendor/mkl.h"

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
  if constexpr (std::is_same_v<C, vendor::c32> || std::is_same_v<C, vendor::c64>) {
    const C ca(static_cast<typename C::value_type>(alpha)), cb(static_cast<typename C::value_type>(beta));
    const auto fn = std::is_same_v<C, vendor::c32> ? reinterpret_cast<vendor::gemm_fn<C>>(blas.cgemm)
                                                   : reinterpret_cast<vendor::gemm_fn<C>>(blas.zgemm);
    fn(&tb, &ta, &ni, &mi, &ki, &ca, static_cast<const C*>(b), &bo.ld, static_cast<const C*>(a), &ao.ld, &cb, c,
       &lc);
  } else if constexpr (std::is_same_v<C, double>) {
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
  const bool complex = type == ScalarType::ComplexFloat || type == ScalarType::ComplexDouble;
  if (!complex && gemm_library() != GemmLibrary::Mkl) return false;  // complex: MKL is the only kernel
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
  if (type == ScalarType::ComplexDouble) {
    run(std::type_identity<vendor::c64>{});
  } else if (type == ScalarType::ComplexFloat) {
    run(std::type_identity<vendor::c32>{});
  } else if (type == ScalarType::Float64) {
    run(std::type_identity<double>{});
  } else {
    run(std::type_identity<float>{});
  }
  return true;
}

namespace {

// An operand BLAS cannot read (no unit stride) packed row-major into `buffer`.
template <class C>
const C* packed(const C* data, int64_t rows, int64_t cols, int64_t& rs, int64_t& cs, std::vector<C>& buffer) {
  if (blas_operand(rows, cols, rs, cs).ok) return data;
  buffer.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) buffer[i * cols + j] = data[i * rs + j * cs];
  }
  rs = cols;
  cs = 1;
  return buffer.data();
}

template <class C>
void complex_one(const GemmArgs& args, int64_t t, bool serial) {
  int64_t a_rs = args.a.row_stride, a_cs = args.a.col_stride, b_rs = args.b.row_stride, b_cs = args.b.col_stride;
  thread_local std::vector<C> a_buffer, b_buffer, c_buffer;
  const C* a = packed(static_cast<const C*>(args.a.data) + t * args.batch_stride_a, args.m, args.k, a_rs, a_cs,
                      a_buffer);
  const C* b = packed(static_cast<const C*>(args.b.data) + t * args.batch_stride_b, args.k, args.n, b_rs, b_cs,
                      b_buffer);
  C* c = static_cast<C*>(args.c.data) + t * args.batch_stride_c;
  const int64_t m = args.m, n = args.n, c_rs = args.c.row_stride, c_cs = args.c.col_stride;
  const bool row_major_c = (c_cs == 1 || n == 1) && c_rs >= n;
  if (args.k == 0 || args.alpha == 0) {  // BLAS needs k >= 1: C = beta C
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        C& e = c[i * c_rs + j * c_cs];
        e = args.beta == 0 ? C(0) : e * static_cast<typename C::value_type>(args.beta);
      }
    }
    return;
  }
  if (row_major_c) {
    vendor_gemm(args.dtype, m, n, args.k, args.alpha, args.beta, a, a_rs, a_cs, b, b_rs, b_cs, c, c_rs, serial);
    return;
  }
  c_buffer.resize(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c_buffer[i * n + j] = args.beta == 0 ? C(0) : c[i * c_rs + j * c_cs];
  }
  vendor_gemm(args.dtype, m, n, args.k, args.alpha, args.beta, a, a_rs, a_cs, b, b_rs, b_cs, c_buffer.data(), n,
              serial);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * c_rs + j * c_cs] = c_buffer[i * n + j];
  }
}

}  // namespace

void gemm_complex(const GemmArgs& args) {
  const auto run = [&](auto tag) {
    using C = typename decltype(tag)::type;
    // As Note [Batched GEMM]: many small products one per thread.
    const int64_t macs = args.m * args.n * std::max<int64_t>(args.k, 1);
    if (args.batch > 1 && args.batch >= num_threads() && macs < kSerialMacs * 64) {
      parallel_for(0, args.batch, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) complex_one<C>(args, t, true);
      });
      return;
    }
    for (int64_t t = 0; t < args.batch; ++t) complex_one<C>(args, t, in_parallel_region());
  };
  if (args.dtype == ScalarType::ComplexDouble) {
    run(std::type_identity<vendor::c64>{});
  } else {
    run(std::type_identity<vendor::c32>{});
  }
}

}  // namespace detail
}  // namespace mlu::kernels
