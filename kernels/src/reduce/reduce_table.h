// The per-ISA reduction kernels (reduce_isa.cpp), picked by reduce.cpp.
#pragma once

#include "../common/isa_variants.h"
#include "mlu_kernels/reduce.h"

namespace mlu::kernels::detail {

struct ReduceKernels {
  void (*reduce)(ReduceOp, const Shape&, const Operand&, const Operand&, double);
  void (*arg_reduce)(bool, const Shape&, const Operand&, const Operand&, const Operand&);
  void (*scan)(ScanOp, const Shape&, const Operand&, const Operand&);
};

}  // namespace mlu::kernels::detail

MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::ReduceKernels& reduce_kernels())
