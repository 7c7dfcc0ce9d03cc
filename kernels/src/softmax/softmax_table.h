// The per-ISA softmax routines (softmax_isa.cpp), in the compute type:
// contiguous rows, and blocks of up to kColumns contiguous columns (softmax
// over a dim that is not the innermost one, Note [Softmax by columns]).
// softmax.cpp moves other layouts and dtypes through buffers and splits the
// work over the compute threads.
#pragma once

#include "../common/isa_variants.h"
#include <cstdint>

#include "mlu_kernels/half.h"

namespace mlu::kernels::detail {

// Columns per block of the column routines.
constexpr int64_t kColumns = 64;

// Whether log_softmax rounds its sum of exponentials and the log of it to a
// 16-bit type before subtracting (Note [16-bit log_softmax over the last
// dim] in softmax.cpp), or keeps both in the compute type.
enum class LogSumRounding : uint8_t { None, Half, BFloat16 };

template <class T>
struct SoftmaxRowFns {
  // out may be in. `rounding` applies to log_softmax only.
  void (*forward)(T* out, const T* in, int64_t len, bool log, LogSumRounding rounding);
  // grad_input may be grad.
  void (*backward)(T* grad_input, const T* grad, const T* output, int64_t len, bool log);
  // The same over `width` <= kColumns independent columns: element j of
  // column c at p + j * p_step + c. out may be in, grad_input may be grad.
  void (*forward_columns)(T* out, int64_t out_step, const T* in, int64_t in_step, int64_t len, int64_t width,
                          bool log, LogSumRounding rounding);
  void (*backward_columns)(T* grad_input, int64_t gi_step, const T* grad, int64_t grad_step, const T* output,
                           int64_t out_step, int64_t len, int64_t width, bool log);
};

// The column routines on BFloat16 storage, computing in float (Note
// [Softmax by columns]): no converted copies of the blocks.
struct SoftmaxBFloat16Columns {
  void (*forward_columns)(BFloat16* out, int64_t out_step, const BFloat16* in, int64_t in_step, int64_t len,
                          int64_t width, bool log, LogSumRounding rounding);
  void (*backward_columns)(BFloat16* grad_input, int64_t gi_step, const BFloat16* grad, int64_t grad_step,
                           const BFloat16* output, int64_t out_step, int64_t len, int64_t width, bool log);
};

struct SoftmaxRows {
  SoftmaxRowFns<float> f;
  SoftmaxRowFns<double> d;
  SoftmaxBFloat16Columns bf16;
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::SoftmaxRows& softmax_rows())
