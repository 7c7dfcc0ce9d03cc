// 16-bit products through oneDNN's matmul, where the build links oneDNN and
// gemm_library() is Dnnl.
//
// Note [oneDNN products]
// The CPU's bfloat16 products run on oneDNN's brgemm kernels (AVX512-BF16 dot
// products, or AMX tiles): on the development host they beat our dot-product
// kernel by 1.3-1.8x at transformer shapes (docs/bench_gemm.md). Float32
// products go there too where oneDNN has brgemm kernels for them (AVX-512
// hosts; oneDNN 2.6 has none for AVX2, where ours runs): on an Intel AVX-512
// host they reached the CPU's MKL at the model shapes where ours stayed at
// 0.5-0.9x of it (docs/bench_gemm.md, "float32 through oneDNN"). As for
// convolutions (Note [oneDNN convolutions]), oneDNN's threads never run: C is
// cut into blocks, one per compute thread, and each thread runs the matmul
// primitive on its block with oneDNN held to one thread. The bias row of
// Note [GEMM bias row] goes to the primitive as its bias and C is written in
// its own dtype, rounded once. Products oneDNN would not run on its brgemm
// kernels (it picks its older gemm:jit for a transposed A or a short C, which
// our kernel beats, or a reference loop), with alpha other than 1 or beta
// other than 0, or too small to repay a primitive's set-up (tens of
// microseconds; float32 products need twice the size of 16-bit ones, ours
// being quicker there), are declined and run on our kernel.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels::detail {

// Whether oneDNN is linked into this build.
bool dnnl_gemm_linked();

// C (m x n, dtype c_type: `type` or Float32; element (i, j) at
// c + i * ldc + j) = alpha A B + beta C + bias (a float row of n, or null;
// taken only for alpha 1 and beta 0),
// for Float16/BFloat16 operands with element strides as in MatrixView.
// false, having written nothing: declined (see above). `serial`: on the
// calling thread only.
bool dnnl_gemm(ScalarType type, ScalarType c_type, int64_t m, int64_t n, int64_t k, double alpha, double beta,
               const void* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, void* c,
               int64_t ldc, const float* bias, bool serial);

}  // namespace mlu::kernels::detail
