// Matrix multiplication: C = alpha * A B + beta * C, one matrix or a batch.
//
// A is m x k, B is k x n, C is m x n, each a strided view (element strides
// per row and per column, any sign, so transposes are views). A, B and C
// share one dtype: Float32 and Float64 compute in their own type, Float16 and
// BFloat16 in float (products and sums in float, C rounded once at the end,
// like the CPU's mm); the integer types (UInt8, Int8 ... Int64) in their own
// type, wrapping on overflow like the CPU's integer mm, with alpha and beta
// truncated to integers. As in BLAS: beta == 0 never reads C (NaN there does
// not leak into the result), and alpha == 0 or k == 0 gives beta * C without
// reading A and B (the CPU's addmm and cuBLAS do the same; the CPU's baddbmm
// would propagate a NaN of A or B). C must not overlap A or B.
//
// The optimised path (src/gemm/) is BLIS-shaped: B packed into k x NR
// column panels and A into MR x k row panels, per cache block, feeding a
// register-blocked micro-kernel per instruction set; threads split the rows
// and columns of C, or the batch. gemm_ref is the scalar oracle.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

struct MatrixView {
  void* data;
  int64_t row_stride;  // elements between (i, j) and (i + 1, j)
  int64_t col_stride;  // elements between (i, j) and (i, j + 1)
};

struct GemmArgs {
  ScalarType dtype;  // of A, B and C
  int64_t m, n, k;
  double alpha, beta;
  MatrixView a, b, c;
  // A batch: matrix t of X starts t * batch_stride_x elements after X's data.
  int64_t batch = 1;
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0;
  // A row of n elements of `dtype`, bias_stride apart, that takes C's place
  // in the beta term: C(i, j) = alpha (A B)(i, j) + beta * bias[j], C's old
  // contents never read (addmm's 1-D self; Note [GEMM bias row] in
  // src/gemm/gemm.cpp). nullptr: C = alpha A B + beta C as above. Must not
  // overlap C.
  const void* bias = nullptr;
  int64_t bias_stride = 1;
  // C is Float32 instead of `dtype` (for Float16/BFloat16 A and B): the
  // float results, not rounded to the 16-bit type (partial sums a caller
  // adds up further, e.g. overlapping convolution patches).
  bool float_c = false;
};

// Whether gemm supports `dtype` (Float32, Float64, Float16, BFloat16, UInt8, Int8, Int16, Int32, Int64).
bool gemm_supports(ScalarType dtype);

void gemm(const GemmArgs& args);

// The library floating-point products run on (Note [Vendor BLAS] in
// src/gemm/gemm_vendor.h): Own, our BLIS-shaped kernel; Mkl, oneMKL's
// sequential layer on our threads where this build links it
// (MLU_KERNELS_GEMM=mkl at first use, Note [Which library on which host]);
// Dnnl, the default where this build links oneDNN: Float16/BFloat16
// products on oneDNN's matmul, the rest on our kernel (Note [oneDNN
// products] in src/gemm/gemm_dnnl.h). set_gemm_library changes it (lowered
// to Own where the library is not linked). Not meant to be called while
// products run on other threads. Own is always used for integer types and
// for what a library cannot express (operands without a unit stride, sizes
// past 32-bit, small products).
enum class GemmLibrary : int { Own = 0, Mkl = 1, Dnnl = 2 };
bool gemm_library_available(GemmLibrary library);
GemmLibrary gemm_library();
void set_gemm_library(GemmLibrary library);
const char* gemm_library_name(GemmLibrary library);

// The scalar reference: each element a long double dot product, then
// alpha/beta in double, rounded once.
void gemm_ref(const GemmArgs& args);

}  // namespace mlu::kernels
