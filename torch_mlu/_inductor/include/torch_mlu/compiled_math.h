// The math functions mlu's generated kernels take from mlu's kernel library
// instead of ATen's vectorized ones: included by every C++ kernel module
// Inductor generates for mlu, right after Inductor's prefix (codegen.py,
// MluCppScheduling.define_kernel), and called by the vector code that
// MluCppVecOverrides writes.
//
// Note [Compiled tanh is mlu's tanh]
// Inductor writes a vector tanh as `x.tanh()`, which is SLEEF's 1-ulp tanh on
// every ISA (Inductor's vectorized tanh): 250 us for 512 x 512 floats, where
// mlu's eager tanh takes 41 us (and the compiled tanh-GELU 4.5x its eager
// one). On AVX-512 a float tanh here is the kernel library's (Note [Fast
// float tanh], within 2 ulp, mlu_kernels/table_math_avx512.h), so compiled
// and eager mlu agree as closely as eager mlu and the CPU do; elsewhere, and
// for other types, it is ATen's. Inductor's own decomposed tanh
// (config.cpp.use_decompose_tanh, 2 / (1 + exp(-2x)) - 1) is no substitute:
// near 0 it loses all relative accuracy (pytorch/pytorch#148241).
//
// Invariants: only inline functions and only of ATen's vector types, so a
// module depends on nothing but its own source and these headers; the choice
// follows the ISA the module is compiled for (CPU_CAPABILITY_AVX512, set by
// Inductor with the matching -m flags).
#pragma once

#include <ATen/cpu/vec/vec.h>

#if defined(CPU_CAPABILITY_AVX512) && defined(__AVX512F__)
#include "mlu_kernels/table_math_avx512.h"
#endif

namespace torch_mlu_compiled_math {

template <typename V>
inline V tanh(const V& x) {
  return x.tanh();
}

#if defined(CPU_CAPABILITY_AVX512) && defined(__AVX512F__)
inline at::vec::Vectorized<float> tanh(const at::vec::Vectorized<float>& x) {
  return mlu::kernels::table_math::tanh_avx512(x);
}
#endif

}  // namespace torch_mlu_compiled_math
