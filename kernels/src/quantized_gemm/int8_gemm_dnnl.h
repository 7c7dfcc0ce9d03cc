// int8 x int8 -> int32 products through oneDNN's matmul where the build links
// it (int8_gemm in quantized_gemm.cpp asks first).
//
// Note [int8 products on oneDNN]
// PyTorch's CPU _int_mm runs oneDNN's matmul, whose brgemm kernels multiply
// int8 on VNNI or AMX-INT8 (tens of times our int32 loop, issue 64's
// bench_llm.py). Sums of int8 products in int32 are exact, so any kernel
// gives the CPU's bits (barring int32 overflow, where both wrap). As for the
// float products (Note [oneDNN products] in ../gemm/gemm_dnnl.h) C is cut
// into one block per compute thread, oneDNN held to one thread; oneDNN's
// reference loops are declined.
#pragma once

#include "mlu_kernels/quantized_gemm.h"

namespace mlu::kernels::detail {

// false, having written nothing: products do not run on oneDNN
// (gemm_library() in mlu_kernels/gemm.h), or it declined.
bool dnnl_int8_gemm(const Int8GemmArgs& args);

}  // namespace mlu::kernels::detail
