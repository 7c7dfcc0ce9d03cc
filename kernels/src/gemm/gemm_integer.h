// Integer matrix products (gemm.h's GemmArgs with an integer dtype), driven
// by gemm() in gemm.cpp.
#pragma once

#include "mlu_kernels/gemm.h"

namespace mlu::kernels::detail {

// Whether `dtype` is one of the integer types gemm_integer takes.
bool is_gemm_integer(ScalarType dtype);

// C = alpha A B + beta C in the element type, wrapping on overflow as the
// CPU's integer mm does (alpha and beta truncated to integers).
void gemm_integer(const GemmArgs& args);

}  // namespace mlu::kernels::detail
