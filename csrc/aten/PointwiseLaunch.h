// Launching a pointwise kernel (mlu_kernels/pointwise.h) over a built
// TensorIterator, on the current stream of the iterator's device.
//
// The iterator's operands go to the kernel as they are: each keeps its own
// dtype and strides (the kernel converts while it loads and stores), so no
// temporary is made for type promotion or for an out= tensor of another
// dtype. A CPU scalar operand (a Python number or 0-dim CPU tensor) is read on
// the host and travels inside the task.
#pragma once

#include <ATen/TensorIterator.h>
#include <mlu_kernels/pointwise.h>

namespace torch_mlu {

using mlu::kernels::OpParams;
using mlu::kernels::PointwiseOp;

// Launches `op` over `iter`, computing in `compute` (default: the iterator's
// common dtype, else its first input's dtype). Returns false, launching
// nothing, when the kernel library has no kernel for that compute type
// (complex): the caller then takes the CPU fallback.
bool launch_pointwise(const at::TensorIteratorBase& iter, PointwiseOp op, const OpParams& params = {},
                      std::optional<at::ScalarType> compute = std::nullopt);

// The first branch of the CPU's unary_op_impl_with_complex_to_float_out: a
// complex `self` into a real `result` (abs, angle), which receives the real
// part of the complex computation, resized to self's shape as the CPU's copy
// does; the CPU's error where the real type cannot be cast to result's.
// False, launching nothing, for a dtype without kernels (ComplexHalf).
bool launch_complex_to_real(const at::Tensor& self, at::Tensor& result, PointwiseOp op);

// OpParams holding `value` at index k, as double (f) and as int64 (i).
void set_param(OpParams& params, int k, const at::Scalar& value);
OpParams make_params(std::initializer_list<at::Scalar> values);

}  // namespace torch_mlu
