// Products through a vendor BLAS (Intel oneMKL), where the process has one
// (Note [Which MKL] in common/vendor/mkl.h) and the rule in gemm_vendor.cpp picks it.
//
// Note [Vendor BLAS]
// MKL is the library stock PyTorch's CPU products call; on Intel hosts it
// beats our BLIS-shaped kernel, elsewhere ours wins (Note [Which library on
// which host] in gemm_vendor.cpp: opt-in for now). Every call runs with
// MKL's thread count set to one (SerialVendorCall), and a product that deserves several threads
// is cut into blocks of C that our pool's threads hand to MKL one each (the
// device's compute cores stay the only threads computing). Batches go one
// product per thread, like our own batched path. What MKL cannot express —
// operands with no unit stride, sizes past 32-bit, integer types — and
// everything when MLU_KERNELS_GEMM=own (or set_gemm_library) asks for it,
// runs our own kernel. The sanitizer builds and processes without oneMKL run
// our kernel everywhere; results agree with it up to the order of sums.
#pragma once

#include <cstdint>

#include "mlu_kernels/gemm.h"

namespace mlu::kernels::detail {

// Whether the vendor library may be used: allowed in this build and found in the process.
bool vendor_gemm_linked();

// C (one matrix, in the compute type float or double, or Float32 C of
// Float16/BFloat16 operands) = alpha A B + beta C through the vendor library.
// a, b: element strides as in MatrixView; c row-major with row stride ldc.
// Returns false, having done nothing, when the library cannot take this
// problem (the caller then runs its own kernel). `serial`: on the calling
// thread only.
bool vendor_gemm(ScalarType type, int64_t m, int64_t n, int64_t k, double alpha, double beta, const void* a,
                 int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, void* c, int64_t ldc,
                 bool serial);

// Complex products, which only the vendor library computes (callers check
// vendor_gemm_linked()): every matrix of the batch, operands without a unit
// stride packed first, a C without one computed in a workspace. alpha and
// beta are real.
void gemm_complex(const GemmArgs& args);

}  // namespace mlu::kernels::detail
