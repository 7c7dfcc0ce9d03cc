// The per-ISA reduction kernels (reduce_isa.cpp), picked by reduce.cpp.
#pragma once

#include "mlu_kernels/reduce.h"

namespace mlu::kernels::detail {

struct ReduceKernels {
  void (*reduce)(ReduceOp, const Shape&, const Operand&, const Operand&, double);
  void (*arg_reduce)(bool, const Shape&, const Operand&, const Operand&, const Operand&);
  void (*scan)(ScanOp, const Shape&, const Operand&, const Operand&);
};

}  // namespace mlu::kernels::detail

namespace mlu::kernels::isa_baseline {
const detail::ReduceKernels& reduce_kernels();
}
namespace mlu::kernels::isa_avx2 {
const detail::ReduceKernels& reduce_kernels();
}
namespace mlu::kernels::isa_avx512 {
const detail::ReduceKernels& reduce_kernels();
}
