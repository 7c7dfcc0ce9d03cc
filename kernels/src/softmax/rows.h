// The per-ISA softmax row routines (softmax_isa.cpp): contiguous rows in the
// compute type; softmax.cpp moves rows of other layouts and dtypes through
// buffers and splits rows over the compute threads.
#pragma once

#include <cstdint>

namespace mlu::kernels::detail {

template <class T>
struct SoftmaxRowFns {
  // out may be in.
  void (*forward)(T* out, const T* in, int64_t len, bool log);
  // grad_input may be grad.
  void (*backward)(T* grad_input, const T* grad, const T* output, int64_t len, bool log);
};

struct SoftmaxRows {
  SoftmaxRowFns<float> f;
  SoftmaxRowFns<double> d;
};

}  // namespace mlu::kernels::detail

namespace mlu::kernels::isa_baseline {
const detail::SoftmaxRows& softmax_rows();
}
namespace mlu::kernels::isa_avx2 {
const detail::SoftmaxRows& softmax_rows();
}
namespace mlu::kernels::isa_avx512 {
const detail::SoftmaxRows& softmax_rows();
}
