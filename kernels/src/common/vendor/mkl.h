// The process's oneMKL: BLAS, LAPACK and DFTI entry points found by name at
// run time, and the guard that keeps a call on the calling thread.
//
// Note [Which MKL]
// The kernels never link oneMKL. Inside a PyTorch process, libtorch_cpu.so
// carries a statically linked oneMKL and exports its symbols (dgetrf_,
// DftiComputeForward, and ~23,000 mkl_* internals). A second copy loaded
// beside it — pip's libmkl_core, say — is partly interposed by torch's: the
// ELF lookup binds thousands of its internal calls into torch's copy (seen
// with LD_DEBUG=bindings, even under dlopen(RTLD_DEEPBIND), which does not
// reach a library's dependencies), two versions mixed, and DFTI crashed. So
// the entry points are looked up with dlsym(RTLD_DEFAULT): in a PyTorch
// process that is torch's copy — the very library the CPU's linalg and FFT
// ops call, so the same routine on the same layout gives the CPU's bits — and
// in the kernels' own tests the pip copy those executables link. A process
// with no oneMKL (a PyTorch built without it) finds nothing: available()
// says so and callers run their own kernels or report the op unsupported.
//
// Invariants: every pointer in a table is non-null once the table is
// returned (a table with any name missing is not returned at all); the tables
// never change after the first lookup. Calls must be made under a
// SerialVendorCall: the library found may be threaded (torch's runs on GNU
// OpenMP), and the device's compute cores are the only threads meant to
// compute (a second pool would oversubscribe them).
#pragma once

#include <complex>
#include <cstdint>

namespace mlu::kernels::vendor {

using lapack_int = int;  // the LP64 interface: 32-bit integers
using c32 = std::complex<float>;
using c64 = std::complex<double>;

// Column-major BLAS-3 product, Fortran interface (?gemm_), and the mixed
// 16-bit products (cblas_gemm_bf16bf16f32 / cblas_gemm_f16f16f32).
template <class T>
using gemm_fn = void (*)(const char* transa, const char* transb, const lapack_int* m, const lapack_int* n,
                         const lapack_int* k, const T* alpha, const T* a, const lapack_int* lda, const T* b,
                         const lapack_int* ldb, const T* beta, T* c, const lapack_int* ldc);
using gemm_16bit_fn = void (*)(int layout, int transa, int transb, lapack_int m, lapack_int n, lapack_int k,
                               float alpha, const uint16_t* a, lapack_int lda, const uint16_t* b, lapack_int ldb,
                               float beta, float* c, lapack_int ldc);

// CBLAS enumerators the 16-bit products take (values fixed by the CBLAS standard).
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;
constexpr int kCblasTrans = 112;

struct Blas {
  gemm_fn<float> sgemm;
  gemm_fn<double> dgemm;
  gemm_fn<c32> cgemm;
  gemm_fn<c64> zgemm;
  gemm_16bit_fn gemm_bf16;
  gemm_16bit_fn gemm_f16;
};

// The BLAS entry points, or nullptr where the process has no oneMKL.
const Blas* blas();

// Sets oneMKL's thread count for the calling thread to one for the guard's
// lifetime (mkl_set_num_threads_local), restoring the previous setting.
class SerialVendorCall {
 public:
  SerialVendorCall();
  ~SerialVendorCall();
  SerialVendorCall(const SerialVendorCall&) = delete;
  SerialVendorCall& operator=(const SerialVendorCall&) = delete;

 private:
  int previous_ = 0;
};

// The address of `name` in the process, or nullptr (dlsym(RTLD_DEFAULT)).
void* find_symbol(const char* name);

}  // namespace mlu::kernels::vendor
