// The per-ISA reduction kernels (reduce_isa.cpp), picked by reduce.cpp.
#pragma once

#include "../common/isa_variants.h"
#include "mlu_kernels/reduce.h"

namespace mlu::kernels::detail {

struct ReduceKernels {
  void (*reduce)(ReduceOp, const Shape&, const Operand&, const Operand&, double);
  void (*arg_reduce)(bool, const Shape&, const Operand&, const Operand&, const Operand&);
  void (*scan)(ScanOp, const Shape&, const Operand&, const Operand&);
  // Folds elements [begin, end) of `span` (x: an element, or a difference)
  // into kMoments moments: the sum of x - shift, the sum of (x - shift)^2,
  // the sum of x^2, min, max (Note [One-pass statistics] in reduce.cpp).
  void (*moments)(const StatisticsSpan& span, int64_t begin, int64_t end, double shift, double* moments);
};

inline constexpr int kMoments = 5;

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::ReduceKernels& reduce_kernels())
