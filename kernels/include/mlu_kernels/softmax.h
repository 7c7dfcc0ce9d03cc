// Softmax and log-softmax along one dim, and their backward ops.
//
// A row is the set of positions of `shape` that differ only in `dim`; rows
// are independent and split over the compute threads. For each row x:
//   softmax:     out = exp(x - max) / sum(exp(x - max))
//   log_softmax: out = x - max - log(sum(exp(x - max)))
//   softmax backward:     grad_input = out * (grad - sum(grad * out))
//   log_softmax backward: grad_input = grad - exp(out) * sum(grad)
// in the order of operations of PyTorch's CPU kernels (vec::map / reduce_all
// in SoftMaxKernel.cpp), so results track the CPU's to an ulp or two. NaN
// anywhere in a row makes the whole row NaN, as on the CPU.
// Float16 and BFloat16 compute in float; operands may differ in dtype (the
// half_to_float variants), all floating. Strides are per dim of `shape`
// (any, including a row stride other than 1); an output may be its own input
// (each row is read before it is written), otherwise operands do not overlap.
#pragma once

#include <cstdint>

#include "mlu_kernels/pointwise.h"

namespace mlu::kernels {

// Rows along a dim that is not the innermost one are done as blocks of
// columns when the innermost dim is contiguous in every operand and at least
// this wide (Note [Softmax by columns] in softmax_isa.cpp); other strided
// rows go through row tiles, slower.
constexpr int64_t kSoftmaxMinColumns = 16;

// `cpu_lastdim`: `dim` is the last dim of the caller's tensor, where the
// CPU's 16-bit log_softmax rounds its log-sum-exp to the 16-bit type
// (Note [16-bit log_softmax over the last dim] in softmax.cpp); false keeps
// it in float.
void softmax(const Shape& shape, int dim, const Operand& out, const Operand& in, bool log, bool cpu_lastdim = false);

void softmax_backward(const Shape& shape, int dim, const Operand& grad_input, const Operand& grad,
                      const Operand& output, bool log);

// The scalar reference of both (long double sums, libm exp/log).
void softmax_ref(const Shape& shape, int dim, const Operand& out, const Operand& in, bool log);
void softmax_backward_ref(const Shape& shape, int dim, const Operand& grad_input, const Operand& grad,
                          const Operand& output, bool log);

}  // namespace mlu::kernels
