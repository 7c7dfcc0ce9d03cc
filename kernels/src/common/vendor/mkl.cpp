#include "mkl.h"

#include <dlfcn.h>

namespace mlu::kernels::vendor {
namespace {

using set_threads_fn = int (*)(int);

set_threads_fn set_threads_local() {
  static const auto fn = reinterpret_cast<set_threads_fn>(find_symbol("MKL_Set_Num_Threads_Local"));
  return fn;
}

template <class F>
bool bind(F& slot, const char* name) {
  slot = reinterpret_cast<F>(find_symbol(name));
  return slot != nullptr;
}

}  // namespace

void* find_symbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

const Blas* blas() {
  static const Blas* table = [] () -> const Blas* {
    static Blas t;
    const bool found = set_threads_local() != nullptr && bind(t.sgemm, "sgemm_") && bind(t.dgemm, "dgemm_") &&
                       bind(t.cgemm, "cgemm_") && bind(t.zgemm, "zgemm_") &&
                       bind(t.gemm_bf16, "cblas_gemm_bf16bf16f32") && bind(t.gemm_f16, "cblas_gemm_f16f16f32");
    return found ? &t : nullptr;
  }();
  return table;
}

SerialVendorCall::SerialVendorCall() {
  if (const auto fn = set_threads_local()) previous_ = fn(1);
}

SerialVendorCall::~SerialVendorCall() {
  // mkl_set_num_threads_local(0) returns the thread to the global setting,
  // which is what `previous_` is where nothing had set a local one.
  if (const auto fn = set_threads_local()) fn(previous_);
}

}  // namespace mlu::kernels::vendor
